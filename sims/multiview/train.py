"""FG training loop: coarse or fine labels, online SGD (fresh easy samples every step, FG B.1 item 10),
with the trackers of FG Sec 5.2: train loss, easy/hard test error on the coarse task (fine network read out by
F̂_y = max_c F_{y,c}), fine-task error, growth ⟨w_r⁽ᵗ⁾ − w_r⁽⁰⁾, v⟩ of the lucky neurons S⁽⁰⁾(v) of common vs
subclass features (Def C.1 / G.1), and the end-of-training responses to common vs subclass patches (Eq 10–11).
"""
from __future__ import annotations

import math

import torch

from sims.multiview.data import COMMON, DataModel
from sims.threads import single_threaded
from sims.multiview.learner import TwoLayerReLU, coarse_scores, lucky_mask, mistakes


def _class_feature_masks(data: DataModel, labels: str, device) -> tuple[torch.Tensor, torch.Tensor]:
    """For each output class: a (C, d) mask of its common feature and a (C, d) mask of its subclass feature(s).

    coarse: class y ↔ common v_y and all subclass features v_{y,c}; fine: class (y,c) ↔ v_y and v_{y,c}.
    """
    cof = data.coarse_of_fine()
    com = data.common_of_coarse()
    sub = data.sub_of_fine()
    C = data.n_coarse if labels == "coarse" else data.n_fine
    common = torch.zeros(C, data.d, dtype=torch.bool)
    subm = torch.zeros(C, data.d, dtype=torch.bool)
    if labels == "coarse":
        for y in range(data.n_coarse):  # 2 superclasses: bookkeeping only, not the hot loop
            common[y, com[y]] = True
        subm[cof, sub] = True
    else:
        common[torch.arange(C), com[cof]] = True
        subm[torch.arange(C), sub] = True
    subm &= ~common  # a shared feature never counts twice
    return common.to(device), subm.to(device)


def _responses(net: TwoLayerReLU, data: DataModel, V, lucky, common_m, sub_m, n_patch, generator) -> dict:
    """FG Eq 10–11: Σ_{r∈S(v)} σ(⟨w_r, αv + ζ⟩ + b_r) for common vs subclass features, mean over patches,
    classes and features; also the whole class's response Σ_{r∈[m]} (the network representation of Eq 7)."""
    dev, dt = V.device, V.dtype
    out = {}
    for name, mask in (("common", common_m), ("sub", sub_m)):
        cls, feat = torch.nonzero(mask, as_tuple=True)  # (class, feature) pairs
        nfeat = cls.shape[0]
        alpha = 1 - data.iota + 2 * data.iota * torch.rand(nfeat, n_patch, 1, generator=generator, device=dev, dtype=dt)
        x = alpha * V[feat][:, None, :] + data.sigma_zeta * torch.randn(nfeat, n_patch, data.d, generator=generator,
                                                                          device=dev, dtype=dt)
        z = torch.einsum("fpd,fmd->fpm", x, net.W[cls]) + net.b[cls][:, None, :]
        act = torch.relu(z)
        lk = lucky[cls, :, feat].to(dt)  # (f, m)
        out[f"response_{name}_lucky"] = float((act * lk[:, None, :]).sum(2).mean())
        out[f"response_{name}_all"] = float(act.sum(2).mean())
    return out


def torch_threads(n: int | None):
    """Run with ``n`` intra-op threads (restored afterwards; ``None``: unchanged). The trainer's matrices are
    small (≈ 512 × 1600): on a shared 2-core machine one thread is up to 10× faster than two that wait for
    each other (see :mod:`sims.threads`)."""
    return single_threaded(torch_threads=n, blas_threads=None)


def train(data: DataModel, *, labels: str, m: int, c_b: float, sigma0: float, eta: float, steps: int, batch: int,
          eval_every: int, n_test: int, generator: torch.Generator, device="cpu", dtype=torch.float32,
          progress=False, n_patch: int = 256, threads: int | None = 1) -> dict:
    """Train one network with ``labels`` in {'coarse', 'fine'} and return its curves (plain lists/floats).

    The curves are read every ``eval_every`` steps (and at ``steps``); their ``train_loss`` is the mean batch
    loss over the steps since the previous reading, so a claim can be judged at any of these horizons.

    ``threads``: torch intra-op threads while training on CPU (None: leave torch's setting alone).
    ``progress``: True for a tqdm bar (on a terminal), or a callable called with 1 after every SGD step.
    """
    if torch.device(device).type != "cpu":
        threads = None
    with torch_threads(threads):
        return _train(data, labels=labels, m=m, c_b=c_b, sigma0=sigma0, eta=eta, steps=steps, batch=batch,
                      eval_every=eval_every, n_test=n_test, generator=generator, device=device, dtype=dtype,
                      progress=progress, n_patch=n_patch)


def _train(data, *, labels, m, c_b, sigma0, eta, steps, batch, eval_every, n_test, generator, device, dtype,
           progress, n_patch) -> dict:
    from tqdm import tqdm

    if labels not in ("coarse", "fine"):
        raise ValueError(f"labels must be 'coarse' or 'fine', got {labels!r}")
    device = torch.device(device)
    C = data.n_coarse if labels == "coarse" else data.n_fine
    net = TwoLayerReLU(C, m, data.d, sigma0=sigma0, c_b=c_b, generator=generator, device=device, dtype=dtype)
    W0 = net.W.clone()
    V = data.dictionary(device, dtype)
    lucky = lucky_mask(W0, V, sigma0, c_b, data.d)  # (C, m, d)
    common_m, sub_m = _class_feature_masks(data, labels, device)
    lc = lucky & common_m[:, None, :]
    ls = lucky & sub_m[:, None, :]
    n_lc, n_ls = int(lc.sum()), int(ls.sum())
    cof = data.coarse_of_fine().to(device)
    test_easy = data.sample(n_test, hard=False, generator=generator, device=device, dtype=dtype)
    test_hard = data.sample(n_test, hard=True, generator=generator, device=device, dtype=dtype)
    if not (bool(torch.isfinite(test_easy.X).all()) and bool(torch.isfinite(test_hard.X).all())):
        raise ValueError(f"{type(data).__name__}.sample returned non-finite patches (NaN or inf)")
    if bool((test_hard.kinds == COMMON).any()) or not bool((test_easy.kinds == COMMON).any()):
        raise ValueError(f"{type(data).__name__}.sample: hard samples must carry no common-feature patch (FG B.1 "
                         f"item 6 replaces them by noise) and easy samples must carry some (item 5); the test sets "
                         f"drawn here do not")

    def evaluate(tb):
        with torch.no_grad():
            F = net(tb.X)
            sc = F if labels == "coarse" else coarse_scores(F, cof, data.n_coarse)
            err = float(mistakes(sc, tb.y_coarse).float().mean())
            ferr = float(mistakes(F, tb.y_fine).float().mean()) if labels == "fine" else None
        return err, ferr

    def growth():
        proj = (net.W - W0) @ V.T  # (C, m, d)
        gc = float((proj * lc).sum() / max(n_lc, 1))
        gs = float((proj * ls).sum() / max(n_ls, 1))
        return gc, gs

    curves = {k: [] for k in ("step", "train_loss", "easy_err", "hard_err", "fine_easy_err", "fine_hard_err",
                              "growth_common", "growth_sub")}
    # Eq 10–11's responses at every reading (Lemma E.4 reads them at T = poly(d)), on fresh patches from a
    # generator of their own, so that recording them leaves the training data stream as it is
    resp_gen = torch.Generator(device=device).manual_seed(
        int(torch.randint(2 ** 31, (1,), generator=generator, device=generator.device)))
    resp_curves = {k: [] for k in ("response_common_lucky", "response_sub_lucky", "response_common_all",
                                   "response_sub_all")}
    tick = progress if callable(progress) else None  # a caller's per-step callback, instead of our own bar
    bar = tqdm(range(steps + 1), desc=f"{labels} training", unit="step",
               disable=None if (progress and tick is None) else True, leave=False)
    loss = None  # no batch seen before step 0
    loss_sum, loss_n = 0.0, 0  # batch losses since the last evaluation: the curve's train loss is their mean
    for t in bar:
        if t % eval_every == 0 or t == steps:
            loss = loss_sum / loss_n if loss_n else None
            loss_sum, loss_n = 0.0, 0
            e, fe = evaluate(test_easy)
            h, fh = evaluate(test_hard)
            gc, gs = growth()
            for key, v in zip(curves, (t, loss, e, h, fe, fh, gc, gs)):
                curves[key].append(v)
            with torch.no_grad():
                r = _responses(net, data, V, lucky, common_m, sub_m, n_patch, resp_gen)
            for key in resp_curves:
                resp_curves[key].append(r[key])
            bar.set_postfix(loss=f"{loss:.3g}" if loss is not None else "-", easy=f"{e:.2f}", hard=f"{h:.2f}")
        if t == steps:
            break
        b = data.sample(batch, hard=False, train=True, generator=generator, device=device, dtype=dtype)
        y = b.y_coarse if labels == "coarse" else b.y_fine
        loss = net.step(b.X, y, eta)
        loss_sum, loss_n = loss_sum + loss, loss_n + 1
        if tick is not None:
            tick(1)
        if not math.isfinite(loss):
            if not bool(torch.isfinite(b.X).all()):  # the data, not the step size
                raise FloatingPointError(f"{type(data).__name__}.sample returned non-finite patches at step {t}: "
                                         f"the data model is broken, not the training")
            raise FloatingPointError(f"{labels} training diverged at step {t} (loss {loss}); lower eta")
    bar.close()
    with torch.no_grad():  # a step size that kills every neuron leaves F ≡ 0: every score ties, loss log C
        F_end = net(test_easy.X)
        tied = float((F_end.max(1).values == F_end.min(1).values).float().mean())
    if tied >= 0.5:
        import warnings

        warnings.warn(f"{labels} training: the network gives every class the same score on {tied:.0%} of the easy "
                      f"test samples after {steps} steps (eta = {eta:g}): its neurons are dead (F = 0), its errors "
                      f"count ties and its loss is log C; lower eta", RuntimeWarning, stacklevel=3)
    # the last train loss on a fresh batch (the trained network, no update)
    b = data.sample(max(batch, 4 * data.n_fine), hard=False, train=True, generator=generator, device=device,
                    dtype=dtype)
    with torch.no_grad():
        F = net(b.X)
        final_loss = float(torch.nn.functional.cross_entropy(F, b.y_coarse if labels == "coarse" else b.y_fine))
    with torch.no_grad():
        resp = _responses(net, data, V, lucky, common_m, sub_m, n_patch, generator)
        # the coarse-task margin F_y − max_{y′≠y} F_{y′} on easy test samples (Eq 10: Θ(log d) at the end)
        F = net(test_easy.X)
        sc = F if labels == "coarse" else coarse_scores(F, cof, data.n_coarse)
        true = sc.gather(1, test_easy.y_coarse[:, None])[:, 0]
        other = sc.scatter(1, test_easy.y_coarse[:, None], -torch.inf).max(1).values
        resp["margin_easy"] = float((true - other).mean())
    gc, gs = curves["growth_common"][-1], curves["growth_sub"][-1]
    final = {"train_loss": final_loss, "easy_err": curves["easy_err"][-1], "hard_err": curves["hard_err"][-1],
             "fine_easy_err": curves["fine_easy_err"][-1], "fine_hard_err": curves["fine_hard_err"][-1],
             "growth_common": gc, "growth_sub": gs, "growth_ratio": gc / gs if gs > 0 else None,
             "lucky_common": n_lc, "lucky_sub": n_ls, **resp}
    return {"curves": {**curves, **resp_curves}, "final": final}
