"""Shared test helpers: run one registered check (or its negative control) through the registry in quick mode,
and keep plugins registered by a test from leaking into the others."""
from __future__ import annotations

import contextlib
import sys

from verify import registry


def run_quick(check_id: str, seed: int = 0, tmp_path=None):
    checks = registry.discover()
    assert check_id in checks, f"{check_id} is not registered"
    ctx = registry.Context(check_id=check_id, quick=True, seed=seed, report_dir=tmp_path)
    return registry.run_check(checks[check_id], ctx)


def run_negative_control(check_id: str, seed: int = 0, tmp_path=None) -> registry.Result:
    """Only the negative control, ``compare(ctx, True)`` in quick mode, validated like the registry does."""
    checks = registry.discover()
    assert check_id in checks, f"{check_id} is not registered"
    ctx = registry.Context(check_id=check_id, quick=True, seed=seed, report_dir=tmp_path)
    r = checks[check_id].compare(ctx, True)
    registry._validate_result(r, check_id)
    return r


@contextlib.contextmanager
def isolated_registry(*module_prefixes: str):
    """Checks, claims, figures and plugins registered inside the block are forgotten after it, and the
    modules named ``module_prefixes*`` are dropped from ``sys.modules`` (so a re-import registers again)."""
    from paper_figs import registry as figreg
    from verify import plugins

    registry.discover()
    figreg.discover()
    state = [(d, dict(d)) for d in (registry._CHECKS, registry._CLAIMS, registry.IMPORT_ERRORS, plugins.LOADED,
                                    figreg._FIGURES)]
    try:
        yield
    finally:
        for d, saved in state:
            d.clear()
            d.update(saved)
        for m in [m for m in sys.modules if module_prefixes and m.startswith(module_prefixes)]:
            del sys.modules[m]


def default_sigint() -> None:
    """``preexec_fn`` for a child a test interrupts with SIGINT: the default disposition, unblocked, whatever the
    test process's own state (a signal ignored or blocked in the pytest process is inherited across exec, and a
    Python child that starts with SIGINT ignored never raises KeyboardInterrupt). A user's shell starts commands so."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
