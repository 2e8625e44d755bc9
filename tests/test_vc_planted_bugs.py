"""Every public VC metric's value is pinned. Each test plants one realistic bug in the library (by
monkeypatching theory.collapse, one site at a time) and asserts that ``vc.decomposition`` no longer passes: its
metric part compares each metric, computed through the public functions, with its closed form on data whose
Σ_B and Σ_W are chosen (verify/checks/vc/decomposition.py ``_designed``). Before the metrics were pinned, the
first two plants left all ten VC checks passing."""
import importlib

import numpy as np
import pytest

from tests.helpers import run_quick
from theory import collapse as vc

M = importlib.import_module("theory.collapse.metrics")  # the modules: the package re-exports same-named functions
P = importlib.import_module("theory.collapse.probe")
linalg = importlib.import_module("theory.collapse.linalg")


def _complement_vci(mp):  # VCI returned as Tr[Σ_T†Σ_B]/rank, in vci() only
    orig = M.vci
    bad = lambda *a, **k: 1.0 - orig(*a, **k)  # noqa: E731
    mp.setattr(M, "vci", bad)
    mp.setattr(vc, "vci", bad)


def _complement_metrics_vci(mp):  # the same slip in metrics() only
    orig = M.metrics

    def bad(*a, **k):
        out = orig(*a, **k)
        out["vci"] = 1.0 - out["vci"]
        return out
    mp.setattr(M, "metrics", bad)
    mp.setattr(vc, "metrics", bad)


def _vci_rank_min_p_k(mp):  # VCI's rank="paper" taken as min(p, K) (the centring's lost dimension forgotten)
    orig = M._vci_rank
    mp.setattr(M, "_vci_rank", lambda rank, st, sp, rtol: min(st.p, st.K) if rank == "paper"
               else orig(rank, st, sp, rtol))


def _rank_arg_min_p_k(mp):  # the same in the shared rank choice (VCI, fuzziness, V_B split, metrics())
    orig = M.rank_arg
    mp.setattr(M, "rank_arg", lambda rank, K, p, *a: min(p, K) if rank == "paper" else orig(rank, K, p, *a))


def _trace_n_minus_1(mp):  # Σ_T normalised by N − 1 (np.cov's default) in Tr[Σ_T†Σ_B]
    orig = linalg.Spectra.trace_tb
    mp.setattr(linalg.Spectra, "trace_tb", lambda self: orig(self) * (self.st.n - 1) / self.st.n)


def _fuzziness_sigma_t(mp):  # Tr[Σ_B†Σ_T] for Tr[Σ_B†Σ_W] (= fuzziness + r)
    orig = M._fuzz
    mp.setattr(M, "_fuzz", lambda sp, r: orig(sp, r) + r)


def _sq_distance_over_t(mp):  # Tr Σ_W / Tr Σ_T for Tr Σ_W / Tr Σ_B
    orig = M._sq_distance
    mp.setattr(M, "_sq_distance", lambda *a: (lambda x: x / (1.0 + x))(orig(*a)))


def _cosine_without_diagonal(mp):  # d̄_within over pairs i ≠ j (the paper's double sum includes i = j)
    orig = M.cosine_distances

    def bad(stats_or_features, labels=None):
        st = vc.as_stats(stats_or_features, labels)
        n = st.counts.astype(float)
        within = float(np.mean(1.0 - (np.sum(st.unit_sums ** 2, axis=1) - n) / (n * (n - 1))))
        return {"d_within": within, "d_total": orig(st)["d_total"]}
    mp.setattr(M, "cosine_distances", bad)


def _probe_as_printed(mp):  # Thm 5.1's balanced formula on imbalanced classes (priors ignored)
    mp.setattr(P, "loss_from", lambda sp: P.probe_loss_balanced(sp.trace_tb(), sp.st.K))


PLANTS = [_complement_vci, _complement_metrics_vci, _vci_rank_min_p_k, _rank_arg_min_p_k, _trace_n_minus_1,
          _fuzziness_sigma_t, _sq_distance_over_t, _cosine_without_diagonal, _probe_as_printed]


def test_unplanted_library_passes(tmp_path):
    assert run_quick("vc.decomposition", tmp_path=tmp_path).status == "pass"


@pytest.mark.parametrize("plant", PLANTS, ids=[f.__name__.strip("_") for f in PLANTS])
def test_planted_library_bug_fails_the_check(plant, monkeypatch, tmp_path):
    plant(monkeypatch)
    out = run_quick("vc.decomposition", tmp_path=tmp_path)
    assert out.status == "fail", (out.status, out.miss)
    if out.error is None:  # a comparison, not a crash, caught it: the claim side misses
        assert out.miss > 1e6


def test_eq6_as_log_odds_of_the_mean_accuracy_is_a_fail_not_a_refutation(monkeypatch):
    """Eq 6 written wrongly in the library (log odds of the mean downstream accuracy instead of the mean of the log
    odds; an independent review's plant): vc.paper_tables recomputes MLOG through theory.collapse.mlog and checks it
    against Eq 6 written out, so the check fails, never 'refuted' (which would blame the paper)."""
    T = importlib.import_module("theory.collapse.transfer")

    def bad(downstream, pretrain, percent=False):
        d, q = np.asarray(downstream, float), np.asarray(pretrain, float)
        if percent:
            d, q = d / 100, q / 100
        m = d.mean(axis=-1)
        return np.log(m / (1 - m)) - np.log(q / (1 - q))

    monkeypatch.setattr(T, "mlog", bad)
    monkeypatch.setattr(vc, "mlog", bad)
    out = run_quick("vc.paper_tables")
    assert out.status == "fail" and "Eq 6" in (out.error or ""), (out.status, out.error)
