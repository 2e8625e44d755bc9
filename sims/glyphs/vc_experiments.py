"""VC Sec 6.2 and 6.3 replicated on glyph CNNs trained here (the pretraining regime of :mod:`sims.glyphs.networks`).

* :func:`collapse_curves` (VC Sec 6.2, Fig 3–6, App B Fig 8): the four variability metrics — VCI (Def 5.3),
  fuzziness, squared distance (Eq 4) and cosine similarity (Sec 3.2), all from :mod:`theory.collapse` — of the
  final features at every checkpoint of the τ = 1, λ = 0 network of one seed, on the training images ("train
  collapse") and on held-out images ("test collapse", Fig 6/8: ``aug_test`` and ``face_test``), with the
  held-out accuracy at each checkpoint and whether fuzziness needed the fallback rank there
  (``{split}/fuzziness_fallback``). ``permuted`` holds the same metrics with the fine labels randomly
  permuted over the samples (the negative control's realistic mistake: features paired with the wrong labels);
  ``train/fuzziness_null`` (NULL_LABELLINGS × checkpoints) the training features' fuzziness under that many other
  random labellings (never learned: what the features' geometry alone does to fuzziness, the check's null) and
  ``train/fuzziness_null_fallback`` where one of them needed the fallback rank.
* :func:`transfer_point` (VC Sec 6.3, Fig 7, Eq 6): one network of the τ or λ group: its four metrics on the
  training images of P (the paper evaluates them "on a 50000 subset of ImageNet train set"), its pretraining test
  accuracy p_pretrain (its own classifier on aug_test) and the linear-probe accuracies p_i on the
  :data:`~sims.glyphs.networks.N_TASKS` downstream tasks (classes never used in pretraining; probe trained on
  their training images, tested on their aug_test images; :mod:`sims.glyphs.probe`). The check forms Eq 6's
  MLOG with :func:`theory.collapse.mlog`.

Grids (VC App C, Tables 1–2): τ ∈ {0.1, 0.2, 0.4, 0.6, 0.8, 1.0} at λ = 0 (taken whole), and the paper's λ ∈ {2.5,
3.75, 5, 7.5, 10} at τ = 1 plus the λ = 0 network (the paper's τ = 1 run, its λ group's unregularised end), scaled
by LAMBDA_SCALE = 1/10: {0, 0.25, 0.375, 0.5, 0.75, 1}. Why scaled: the paper's λ values are in the units of its
regulariser on its batches (ResNet-50, 2048-d features, ImageNet batches); the group assumes networks trained to the
same accuracy (App C Table 2: 77.3–77.9 % at every λ). With our regulariser (sims.glyphs.train: per-batch classes of
≈ 4 images, 128-d features) the paper's values leave the networks untrained, against the paper's assumption; the
scale was set from training accuracies alone (docs/glyph_checks.md has them). The paper's literal grid is kept as
PAPER_LAMBDA_GRID for the sensitivity table. Quick: τ ∈ {0.1, 0.4, 1}, λ ∈ {0, 0.5, 1}. Results are plain arrays cached by :func:`sims.cache.cached` under the parameters
and the code (this module, the trainer, theory.collapse).
"""
from __future__ import annotations

import numpy as np

from sims.cache import cached
from sims.glyphs import networks as nw
from sims.glyphs import pretrain as pt
from sims.glyphs.probe import linear_probe
from theory import collapse as vc

#: The grids and the sensitivity rows are the registry's (sims.glyphs.networks: the networks they name).
TAU_GRID, LAMBDA_GRID = nw.TAU_GRID, nw.LAMBDA_GRID
PAPER_LAMBDA_GRID, LAMBDA_SCALE = nw.PAPER_LAMBDA_GRID, nw.LAMBDA_SCALE
SENSITIVITY = nw.VC_SENSITIVITY
METRICS = ("vci", "fuzziness", "squared_distance", "cosine_similarity")
SPLITS = ("train", "aug_test", "face_test")
PERMUTE_SEED = 7
NULL_LABELLINGS = 20  # random labellings whose fuzziness drops form the check's null (its 95th percentile: 1 in 20)


def collapse_metrics(H, y) -> dict:
    """The four VC metrics of features H (n, p) with labels y, through theory.collapse (one ClassStats).

    VCI with rank min(p, K − 1) (VC Sec 6.1); fuzziness by :func:`fuzziness`."""
    st = vc.ClassStats.from_features(H, y)
    return {"vci": vc.vci(st), "fuzziness": fuzziness(st), "squared_distance": vc.squared_distance(st),
            "cosine_similarity": vc.cosine_similarity(st)}


FUZZ_RTOL = 1e-6


def fuzziness(st) -> float:
    """Fuzziness Tr[Σ_B†Σ_W] (VC Sec 3.2) at the paper's rank min(p, K − 1) (VC Sec 4.3's remedy) when Σ_B resolves
    it; else with Σ_B† over the eigenvalues of Σ_B above FUZZ_RTOL·λ_max. ReLU features of a LeNet have dead units,
    so their class means can span fewer than min(p, K − 1) = 104 dimensions, where theory.collapse (rightly) refuses
    the paper's rank and even its own pinv threshold (eigenvalues within 100× of rounding)."""
    return fuzziness_and_rank(st)[0]


def fuzziness_and_rank(st) -> tuple:
    """(fuzziness, rank used): rank None when the paper's min(p, K − 1) was resolved (:func:`fuzziness`)."""
    try:
        return vc.fuzziness(st), None
    except ValueError:
        wb = vc.spectra(st)["sigma_b"]
        r = int(np.sum(wb > FUZZ_RTOL * wb[0]))
        return vc.fuzziness(st, rank=r), r


def _dense(y, classes):
    return np.searchsorted(np.asarray(classes), y)


def collapse_curves(quick: bool, seed: int = 0, device=None, arch: str = nw.ARCH, epochs: int | None = None) -> dict:
    """Metric curves over the checkpoints of the τ = 1, λ = 0 network of ``seed`` (module doc), cached;
    ``arch``/``epochs`` move the regime (sensitivity)."""
    s = pt.sizes(quick)
    params = {"quick": bool(quick), "seed": int(seed), "device": pt.device_type(device), "sizes": s,
              "classes": nw.class_sets(quick)["pretrain"].tolist(), "arch": arch, "epochs": epochs}

    def compute():
        net = pt.pretrain_net(quick, seed=seed, device=device, arch=arch, epochs=epochs)
        if int(net.config.seed) != int(seed):  # seeds carry the network-to-network variance: never another seed's net
            raise ValueError(f"vc.training_collapse: the network read for seed {seed} was trained with seed "
                             f"{net.config.seed}")
        P = nw.class_sets(quick)["pretrain"]
        out = {"epochs": np.asarray(sorted(net.checkpoints), np.int64), "seconds": net.seconds,
               "images_per_s": net.images_per_s}
        data = {sp: pt.split_images(quick, sp, P) for sp in SPLITS}
        perm = np.random.default_rng(PERMUTE_SEED)
        null_rng = np.random.default_rng([PERMUTE_SEED, 2])  # labellings never learned: fuzziness's null
        for sp, (X, yf) in data.items():
            y = _dense(yf, P)
            yp = perm.permutation(y)
            null = [null_rng.permutation(y) for _ in range(NULL_LABELLINGS)] if sp == "train" else []
            rows, rows_p, acc, fallback, seen, null_f, null_fb = [], [], [], [], [], [], []
            for e in sorted(net.checkpoints):
                f = pt.net_features(net.at_checkpoint(e), X)
                if any(np.array_equal(f["logits"], g) for g in seen):  # two horizons, one set of weights
                    raise ValueError(f"vc.training_collapse, {sp}: the checkpoint at epoch {e} gives the logits of an "
                                     "earlier one (the curve would read one network at two horizons)")
                seen.append(f["logits"])
                last = f
                m, mp = collapse_metrics(f["features"], y), collapse_metrics(f["features"], yp)
                fallback.append(fuzziness_and_rank(vc.ClassStats.from_features(f["features"], y))[1] is not None)
                rows.append([m[k] for k in METRICS])
                rows_p.append([mp[k] for k in METRICS])
                fr = [fuzziness_and_rank(vc.ClassStats.from_features(f["features"], yn)) for yn in null]
                null_f.append([v for v, _ in fr])
                null_fb.append([r is not None for _, r in fr])
                acc.append(pt.own_accuracy(net, f["logits"], yf))
            # the curve ends at the final network (checkpoints read in training order, the last one the final weights)
            pt.check_final(net, last["logits"], X, f"vc.training_collapse, {sp} curve's last checkpoint")
            if sp != "train":
                pt.check_held_out(data["train"][0], X, f"vc.training_collapse, {sp} features")
            out[f"{sp}/metrics"] = np.asarray(rows)
            out[f"{sp}/permuted"] = np.asarray(rows_p)
            if null:  # (labellings, checkpoints)
                out[f"{sp}/fuzziness_null"] = np.asarray(null_f).T
                out[f"{sp}/fuzziness_null_fallback"] = np.asarray(null_fb).T
            out[f"{sp}/accuracy"] = np.asarray(acc)
            out[f"{sp}/fuzziness_fallback"] = np.asarray(fallback)
            out[f"{sp}/n"] = len(y)
        return out

    with pt.shared_images(quick):
        return cached("glyph_vc_collapse", params, compute)


def transfer_point(quick: bool, tau: float, cos_reg: float, seed: int = 0, device=None, arch: str = nw.ARCH,
                   epochs: int | None = None) -> dict:
    """Metrics, p_pretrain and downstream probe accuracies of the (τ, λ) network of ``seed`` (module doc)."""
    s = pt.sizes(quick)
    cs = nw.class_sets(quick)
    params = {"quick": bool(quick), "tau": float(tau), "cos_reg": float(cos_reg), "seed": int(seed),
              "device": pt.device_type(device), "sizes": s, "classes": cs["pretrain"].tolist(),
              "downstream": [q.tolist() for q in cs["downstream"]], "arch": arch, "epochs": epochs}

    def compute():
        net = pt.pretrain_net(quick, tau=tau, cos_reg=cos_reg, seed=seed, device=device, arch=arch, epochs=epochs)
        P = cs["pretrain"]
        X, yf = pt.split_images(quick, "train", P)
        f = pt.net_features(net.model, X)
        m = collapse_metrics(f["features"], _dense(yf, P))
        Xt, yt = pt.split_images(quick, "aug_test", P)
        pt.check_held_out(X, Xt, "vc.transfer_correlation, p_pretrain")
        lt = pt.net_features(net.model, Xt)["logits"]
        pt.check_final(net, lt, Xt, "vc.transfer_correlation, p_pretrain")
        out = {"metrics": np.asarray([m[k] for k in METRICS]),
               "p_pretrain": pt.own_accuracy(net, lt, yt),
               "train_accuracy": pt.own_accuracy(net, f["logits"], yf),
               "seconds": net.seconds, "images_per_s": net.images_per_s}
        accs, l2s = [], []
        for Q in cs["downstream"]:
            Xa, ya = pt.split_images(quick, "train", Q)
            Xb, yb = pt.split_images(quick, "aug_test", Q)
            pt.check_held_out(Xa, Xb, "vc.transfer_correlation, downstream probe")
            r = linear_probe(pt.net_features(net.model, Xa)["features"], ya,
                             pt.net_features(net.model, Xb)["features"], yb)
            accs.append(r["acc"])
            l2s.append(r["l2"])
        out["p_downstream"] = np.asarray(accs)
        out["probe_l2"] = np.asarray(l2s)
        return out

    with pt.shared_images(quick):
        return cached("glyph_vc_transfer", params, compute)


def transfer_grid(quick: bool, seed: int = 0, device=None, arch: str = nw.ARCH, epochs: int | None = None,
                  taus=None, lambdas=None) -> dict:
    """{'tau': [points over TAU_GRID at λ = 0], 'lambda': [points over LAMBDA_GRID at τ = 1]} (module doc);
    ``taus``/``lambdas`` replace the grids, ``arch``/``epochs`` the regime (sensitivity)."""
    taus = TAU_GRID[bool(quick)] if taus is None else taus
    lambdas = LAMBDA_GRID[bool(quick)] if lambdas is None else lambdas
    with pt.shared_images(quick):
        return {"tau": [transfer_point(quick, t, 0.0, seed, device, arch, epochs) for t in taus],
                "lambda": [transfer_point(quick, 1.0, lam, seed, device, arch, epochs) for lam in lambdas]}
