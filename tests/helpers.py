"""Shared test helper: run one registered check through the registry in quick mode."""
from __future__ import annotations

from verify import registry


def run_quick(check_id: str, seed: int = 0, tmp_path=None):
    checks = registry.discover()
    assert check_id in checks, f"{check_id} is not registered"
    ctx = registry.Context(check_id=check_id, quick=True, seed=seed, report_dir=tmp_path)
    return registry.run_check(checks[check_id], ctx)
