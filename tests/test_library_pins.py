"""verify/checks/_shared/library_pins.py: the known-answer pins hold on the library and fail on the slips a review
planted (a PCA without centring, a clustered SE that ignores its clusters), and a check that reads the pinned
function fails with them."""
from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import run_quick
from verify.checks._shared import library_pins as pins


def test_pins_hold_on_the_library():
    pins.pca_dim_pinned()
    pins.clustered_se_pinned()


def test_an_uncentred_pca_dim_fails_its_pin_and_rd_cls_dim(monkeypatch):
    import theory.rank as R

    def uncentred(features, eps=None, method="auto"):
        x = np.asarray(features, float)
        lam = np.linalg.svd(x, compute_uv=False) ** 2 / (len(x) - 1)
        e = R.float32_eps_rule(min(x.shape[0] - 1, x.shape[1])) if eps is None else eps
        return R.rank_from_singular_values(lam[: min(x.shape[0] - 1, x.shape[1])], e)

    monkeypatch.setattr(R, "pca_dim", uncentred)
    with pytest.raises(ValueError, match="PCA must centre"):
        pins.pca_dim_pinned()
    out = run_quick("rd.cls_dim")
    assert out.status == "fail" and "pca_dim" in out.error, (out.status, out.error)


def test_a_clustered_se_that_ignores_its_clusters_fails_its_pin(monkeypatch):
    import theory.stats as S

    real = S.mean_se
    monkeypatch.setattr(S, "mean_se", lambda d, groups=None: real(d))
    with pytest.raises(ValueError, match="not the SE of the cluster means"):
        pins.clustered_se_pinned()


def test_fg_label_granularity_fails_on_the_clustered_se_slip(monkeypatch):
    import theory.stats as S
    from verify import registry

    real = S.mean_se
    monkeypatch.setattr(S, "mean_se", lambda d, groups=None: real(d))
    ctx = registry.Context(check_id="fg.label_granularity", quick=True)
    with pytest.raises(ValueError, match="not the SE of the cluster means"):
        registry.discover()["fg.label_granularity"].compare(ctx, False, positive=True)


def test_a_probe_standardising_its_test_features_alone_fails_its_pin_and_the_checks(monkeypatch):
    """A review's planted library bug: the probe's test features standardised with their own mean and SD. It moved
    vc.transfer_correlation's r(VCI, MLOG) under an unchanged status; the known-answer pin fails both checks."""
    import sims.glyphs.probe as P

    real = P._standardise

    def own(Ftr, *others):
        if others and len(others[0]) != len(Ftr):  # the refit's call (train, test): each with its own statistics
            return [real(Ftr)[0]] + [real(A)[0] for A in others]
        return real(Ftr, *others)

    monkeypatch.setattr(P, "_standardise", own)
    _pin_and_probe_checks_fail(pins.probe_pinned, "standardised with the training")


def test_a_probe_predicting_without_its_bias_fails_its_pin_and_the_checks(monkeypatch):
    """The fourth review's planted library bug: the probe's predictions without its bias (Xs @ W). It moved
    vc.transfer_correlation's τ-group r from +0.906 to −0.274 under an unchanged status; the bias pin fails it."""
    import sims.glyphs.probe as P

    real = P._fit

    def no_bias(*a, **k):
        W, b = real(*a, **k)
        return W, 0 * b

    pins.probe_bias_pinned()
    monkeypatch.setattr(P, "_fit", no_bias)
    _pin_and_probe_checks_fail(pins.probe_bias_pinned, "predict with its bias")


def _pin_and_probe_checks_fail(pin, match: str) -> None:
    """The pin raises ``match``, and so do the two checks that read the probe (before any reading)."""
    from verify import registry

    with pytest.raises(ValueError, match=match):
        pin()
    for cid in ("fg.label_granularity", "vc.transfer_correlation"):
        ctx = registry.Context(check_id=cid, quick=True)
        with pytest.raises(ValueError, match=match):
            registry.discover()[cid].compare(ctx, False, positive=True)
