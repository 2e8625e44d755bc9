"""Where theorylab keeps its on-disk caches; sets numba's cache folder before numba is imported.

The root is ``$THEORYLAB_CACHE`` when set, else the user cache folder ``$XDG_CACHE_HOME/theorylab``
(``~/.cache/theorylab``). numba's compiled kernels go to ``<root>/numba`` unless the user set
``NUMBA_CACHE_DIR``; without this, a ``cache=True`` kernel writes its cache files next to the sources.
Only environment variables are read and set here (no file is touched): ``theory`` stays free of I/O.
"""
from __future__ import annotations

import os


def cache_root() -> str:
    """Absolute path of theorylab's cache root (it may not exist yet)."""
    root = os.environ.get("THEORYLAB_CACHE")
    if root:
        return os.path.abspath(os.path.expanduser(root))
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(os.path.abspath(xdg), "theorylab")


def set_numba_cache_dir() -> str:
    """Point ``NUMBA_CACHE_DIR`` at ``<root>/numba`` unless the user set it; returns the folder in use.

    Takes effect only if numba has not been imported yet (numba reads the variable once, on import);
    ``theory/__init__.py`` calls it first thing, and every numba kernel lives under ``theory`` or ``sims``.
    """
    if not os.environ.get("NUMBA_CACHE_DIR"):
        os.environ["NUMBA_CACHE_DIR"] = os.path.join(cache_root(), "numba")
    return os.environ["NUMBA_CACHE_DIR"]
