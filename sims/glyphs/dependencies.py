"""ND / RD experiments on the suite's glyph networks (the registry :mod:`sims.glyphs.networks`, family ``suite``):
the suite's task and shared held-out images, held-out outputs, per-layer ranks, and ND Sec 3.2's new categories
learnt as combinations of a base network's logits.

Held-out data (fixed before any verdict was looked at):

* ``FIT_SPLIT`` = ``aug_test``: the training faces under fresh augmentation draws (``networks.EVAL_SEED``), never the
  training images themselves. Second moments (ND Eq 2), PCA bases (RD Eq 6) and CovLasso fits use these rows: they
  stand for p_data as the network was trained on it;
* ``TEST_SPLIT`` = ``face_test``: the DejaVu Serif family, never seen in training. Errors and accuracies (against
  the true code points) use these rows, as ND Table 1 uses the ImageNet validation set.

:func:`new_categories` follows ND Sec 3.2: f_base is the suite's ``lenet-base-s{seed}`` (trained on the base
classes only), Θ ∈ R^{n₁×n₂} is learnt on f_base's frozen logits of training images of every class
(:func:`sims.dependency_training.fit_theta`: CE over all classes, full-batch L-BFGS), and f_all = [f_base, f_base Θ]
is compared with f_baseline = ``lenet-s{seed}`` trained on every class (same configuration), on the test faces.
"""
from __future__ import annotations

import threading

import numpy as np

from sims.cache import cached
from sims.glyphs import glyph_task
from sims.glyphs import networks as nw
from sims.glyphs.features import features
from sims.threads import single_threaded
from theory.stats import mean_se

#: One torch and one BLAS thread for every computation here: on the shared 2-core machine a multi-threaded SVD of a
#: 512 × 4096 layer output took 22 s against 1.2 s single-threaded (measured at load 14).
_one_thread = single_threaded(torch_threads=1, blas_threads=1)

FIT_SPLIT = "aug_test"
TEST_SPLIT = "face_test"
#: Θ's training set: the first THETA_PER_CLASS training images of every class (a prefix of the images the
#: networks were trained on: task.images is the same for every per_class ≥ m), and L-BFGS iterations. Fixed for
#: the cost (N × n₁ × n₂ per evaluation), not tuned on a result.
THETA_PER_CLASS = {False: 8, True: 8}
THETA_ITER = {False: 60, True: 60}

_MEMO: dict = {}
_LOCK = threading.RLock()


def task(quick: bool = False):
    """The suite's task (networks.TASKS['suite']): 1000 code points, 100 in quick mode."""
    return glyph_task(nw.task_config("suite", quick))


def eval_images(split: str, quick: bool = False):
    """The suite's shared held-out images ``(X, y fine, face)`` of a split (numpy, memoised: networks.images):
    EVAL_PER_CLASS images per class, seed EVAL_SEED; quick: the quick classes."""
    return nw.images(nw.task_config("suite", quick), split, nw.EVAL_PER_CLASS[bool(quick)], nw.EVAL_SEED)


def _train_kwargs(name: str, quick: bool) -> dict:
    return nw.record(name, quick).train_kwargs()


@_one_thread
def outputs(name: str, quick: bool, split: str, device=None, layers=None) -> dict:
    """float64 logits, features, W, b of the named network on the shared held-out images of ``split``, restricted to
    its classes; ``labels`` (output indices), ``y_fine``, ``face``, ``names`` (one per output). Memoised; without
    ``layers`` the features are also kept on disk (:func:`cached_features`), so the processes of a parallel run
    (checks and figures) run each network over its held-out images once."""
    key = (name, bool(quick), split, str(device), layers)
    with _LOCK:
        if key not in _MEMO:
            net = nw.net(name, quick, device)
            X, y, face = eval_images(split, quick)
            keep = np.isin(y, net.classes)
            if layers is None:
                Fx = np.asarray(cached_features(name, quick, split, device)["features"], np.float64)
                W = net.model.classifier.weight.detach().double().cpu().numpy()
                b = net.model.classifier.bias.detach().double().cpu().numpy()
                out = {"features": Fx, "W": W, "b": b, "logits": Fx @ W.T + b}  # as features() forms them
            else:
                out = features(net.model, X[keep], layers=layers)
            values = np.asarray(net.label_values)
            out["labels"] = np.searchsorted(values, y[keep]).astype(np.int64)
            out["y_fine"], out["face"] = y[keep], face[keep]
            all_names = task(quick).label_names("fine")
            out["names"] = [str(all_names[int(v)]) for v in values]
            out["label_values"] = values
            _MEMO[key] = out
        return _MEMO[key]


def cached_features(name: str, quick: bool, split: str, device=None) -> dict:
    """``{'features': float32 [n, d]}``: F(x) of the named suite network on the shared held-out images of ``split``
    (its classes), cached on disk. float32 is what the net computes (features() casts it to float64 exactly), so
    the stored array loses nothing."""
    from sims.glyphs.train import resolve_device

    q = bool(quick)
    params = {"net": _train_kwargs(name, q), "task": str(nw.task_config("suite", q)), "split": split,
              "eval": nw.EVAL_PER_CLASS[q], "eval_seed": nw.EVAL_SEED, "device": resolve_device(device).type}

    def compute():
        net = nw.net(name, q, device)
        X, y, _ = eval_images(split, q)
        Fx = features(net.model, X[np.isin(y, net.classes)])["features"]
        return {"features": Fx.astype(np.float32)}

    return cached("glyph_suite_features", params, compute)


@_one_thread
def layer_ranks(name: str, quick: bool, n: int | None = None, split: str = FIT_SPLIT, device=None) -> dict:
    """RD's per-layer rank curve: the PCA dimension (RD Sec 4.3's float32 rule, :func:`theory.rank.pca_dim`) of the
    input pixels, every stage's flattened output, the final features and the logits, on ``n`` images of ``split``
    (a seeded draw). Returns ``{'layers': [...], 'pca_dim': [...], 'ambient': [...], 'sample_bound': n − 1}``."""
    from theory.rank import pca_dim

    from sims.glyphs.train import resolve_device

    key = ("ranks", name, bool(quick), n, split, str(device))
    with _LOCK:
        if key in _MEMO:
            return _MEMO[key]
    q = bool(quick)
    params = {"net": _train_kwargs(name, q), "task": str(nw.task_config("suite", q)), "split": split, "n": n,
              "eval": nw.EVAL_PER_CLASS[q], "eval_seed": nw.EVAL_SEED, "device": resolve_device(device).type}

    def compute():
        net = nw.net(name, quick, device)
        X, y, _ = eval_images(split, quick)
        X = X[np.isin(y, net.classes)]
        m = min(len(X), n or (512 if quick else 1024))
        rows = np.sort(np.random.default_rng([7, m]).choice(len(X), m, replace=False))
        out = features(net.model, X[rows], layers="all")
        mats = [("input", X[rows].reshape(m, -1).astype(np.float64))]
        mats += [(k, out["layers"][k]) for k in net.model.stages]
        mats += [("features F(x)", out["features"]), ("logits", out["logits"])]
        return {"layers": np.asarray([k for k, _ in mats]), "pca_dim": np.asarray([int(pca_dim(a)) for _, a in mats]),
                "ambient": np.asarray([int(a.shape[1]) for _, a in mats]), "sample_bound": m - 1, "split": split,
                "n": m}

    r = cached("glyph_layer_ranks", params, compute)  # cached on disk: one SVD set per network and code
    res = {"layers": [str(k) for k in r["layers"]], "pca_dim": [int(v) for v in r["pca_dim"]],
           "ambient": [int(v) for v in r["ambient"]], "sample_bound": int(r["sample_bound"]), "split": str(r["split"]),
           "n": int(r["n"])}
    with _LOCK:
        _MEMO[key] = res
    return res


def _accuracies(logits, y, n1: int) -> dict:
    new = y >= n1
    hit_all = logits.argmax(1) == y
    hit_new = logits[new][:, n1:].argmax(1) + n1 == y[new]
    hit_base = logits[~new][:, :n1].argmax(1) == y[~new]
    return {"all": hit_all, "new_within": hit_new, "base_within": hit_base}


@_one_thread
def new_categories(seed: int, quick: bool, device=None, arch: str = "lenet") -> dict:
    """ND Sec 3.2 on the glyph networks (module doc): accuracies of f_all (Θ by CE over all classes), of the
    literal arm (Θ by CE over the new classes on new-class samples only) and of f_baseline, with the paired SEs, in
    the keys :mod:`verify.checks.nd.sec3_training` reads (``acc_all_<arm>``, ``acc_new_within_<arm>``,
    ``se_diff_all[_<arm>]``, ``se_diff_new_within[_<arm>]``, ``n_base``, ``n_new``). Cached on disk."""
    from sims.dependency_training import fit_theta

    base_name, all_name = f"{arch}-base-s{seed}", f"{arch}-s{seed}"
    q = bool(quick)
    params = {"base": _train_kwargs(base_name, q), "all": _train_kwargs(all_name, q),
              "task": str(nw.task_config("suite", q)),
              "theta_per_class": THETA_PER_CLASS[q], "theta_iter": THETA_ITER[q], "eval": nw.EVAL_PER_CLASS[q],
              "eval_seed": nw.EVAL_SEED, "quick": q}

    def compute():
        base, full = nw.net(base_name, q, device), nw.net(all_name, q, device)
        base_cl = [int(c) for c in base.classes]
        new_cl = sorted(set(int(c) for c in full.classes) - set(base_cl))
        order = np.asarray(base_cl + new_cl)
        n1, n2 = len(base_cl), len(new_cl)
        pos = np.full(nw.task_config("suite", q).n_classes, -1)
        pos[order] = np.arange(n1 + n2)
        X, y, _ = task(q).images("train", THETA_PER_CLASS[q], 0)
        X, y = X.numpy(), y.numpy()
        keep = np.isin(y, order)
        f_tr = features(base.model, X[keep])["logits"]
        y_tr = pos[y[keep]]
        theta = fit_theta(f_tr, y_tr, n2, max_iter=THETA_ITER[q])
        theta_lit = fit_theta(f_tr, y_tr, n2, max_iter=THETA_ITER[q], new_only=True)
        Xte, yte, _ = eval_images(TEST_SPLIT, q)
        keep_te = np.isin(yte, order)
        Xte, y_te = Xte[keep_te], pos[yte[keep_te]]
        from sims.heldout import check_held_out

        check_held_out(X[keep], Xte, "nd.new_categories (glyph line): Θ's fit images vs the test images")
        f_te = features(base.model, Xte)["logits"]
        g_te = features(full.model, Xte)["logits"][:, np.searchsorted(full.label_values, order)]
        arms = {"dependency": np.concatenate([f_te, f_te @ theta], 1),
                "literal": np.concatenate([f_te, f_te @ theta_lit], 1), "baseline": g_te}
        acc = {a: _accuracies(lg, y_te, n1) for a, lg in arms.items()}
        groups = {"all": y_te, "new_within": y_te[y_te >= n1]}
        out = {"n_base": n1, "n_new": n2, "n_test": len(y_te), "n_test_new": int(np.sum(y_te >= n1)),
               "n_classes_test_new": int(len(np.unique(y_te[y_te >= n1]))),
               "n_theta_train": len(y_tr),
               "theta_support_mean": float(np.mean(np.abs(theta) > 1e-8 * np.abs(theta).max()))}
        for a, h in acc.items():
            for k in ("all", "new_within", "base_within"):
                out[f"acc_{k}_{a}"] = float(h[k].mean())
        for a in ("dependency", "literal"):
            tag = "" if a == "dependency" else f"_{a}"
            for k in ("all", "new_within"):
                d = acc[a][k].astype(float) - acc["baseline"][k].astype(float)
                # clustered by class: the held-out images of one class are not independent (theory.stats)
                out[f"se_diff_{k}{tag}"] = mean_se(d, groups[k])[1]
        return out

    with _LOCK:
        return dict(cached("glyph_new_categories", params, compute))


__all__ = ["FIT_SPLIT", "TEST_SPLIT", "task", "eval_images", "outputs", "cached_features", "layer_ranks",
           "new_categories", "THETA_PER_CLASS", "THETA_ITER"]
