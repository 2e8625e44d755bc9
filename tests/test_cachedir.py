"""theory._cachedir: the numba cache folder (under THEORYLAB_CACHE unless the user set NUMBA_CACHE_DIR)."""
from __future__ import annotations


# ---- set_numba_cache_dir

def test_set_numba_cache_dir_returns_the_folder_in_use(monkeypatch, tmp_path):
    from theory import _cachedir

    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("THEORYLAB_CACHE", str(tmp_path))
    assert _cachedir.set_numba_cache_dir() == str(tmp_path / "numba")
    import os

    assert os.environ["NUMBA_CACHE_DIR"] == str(tmp_path / "numba")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "mine"))  # a user's choice is kept
    assert _cachedir.set_numba_cache_dir() == str(tmp_path / "mine")
