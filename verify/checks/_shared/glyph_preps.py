"""What the glyph checks read from the disk cache, listed for ``@check(prepare=...)`` (:mod:`verify.parallel`).

A run with ``--jobs N`` computes these ahead of the checks, spread over the workers: the registry's networks
(sims.glyphs.networks; one preparation per name, :func:`net`, whatever check lists it) and their read-outs — the
suite's held-out features and ranks (ND/RD), the VC/FG experiments' cached points (collapse curves, transfer
points, granularity points) — each read-out after the preparation of the network it reads. The lists name exactly
the calls the checks make (same arguments, so the same cache entries), and the networks they name are the
registry's ``listing()`` (tests/test_glyph_registry.py); the sensitivity rows are listed too, because in a full
run the checks that compute them reach that branch (a verdict that does not leaves those entries unused, computed
for nothing but harmless). Costs are seconds of a cold run (docs/glyph_checks.md), for the order only. The glyph
modules are imported when a list is asked for, not with this module (the ND checks' module imports it; torch
loads only if a glyph check runs).
"""
from __future__ import annotations

from verify.parallel import prep


def _q(ctx) -> str:
    return " (quick)" if ctx.quick else ""


def _seeds(ctx, n_seeds: int) -> range:
    """The seeds a check reads: its ``n_seeds`` from the run's seed in a full run, one in quick mode."""
    return range(ctx.seed, ctx.seed + (1 if ctx.quick else n_seeds))


def net(ctx, name: str):
    """The preparation of the registry's network ``name`` (sims.glyphs.networks.net; labelled by the name, so every
    check listing it shares it); its read-outs wait for it (``after``)."""
    from sims.glyphs import networks as nw

    r = nw.record(name, ctx.quick)
    if r.family == "suite":
        cost = 3 if ctx.quick else 60
    else:
        cost = 25 if r.arch == "resnet" or r.epochs > 8 else 12
    return prep(f"glyph net {name}{_q(ctx)}", nw.net, name, ctx.quick, ctx.device, cost=cost)


def suite_nets(*names, outputs: bool = False, ranks: bool = False):
    """prepare(ctx) for checks reading the suite networks ``names`` (``{s}`` / ``{s1}``: the run's seed, + 1);
    ``outputs``: also their held-out features on both splits (sims.glyphs.dependencies.cached_features), ``ranks``:
    their per-layer ranks (layer_ranks), each after its network."""
    def prepare(ctx, seeds=1):
        from sims.glyphs import dependencies as GD

        out = []
        for k in range(seeds):
            s = ctx.seed + k
            for n in names:
                name = n.format(s=s, s1=s + 1)
                net_ = net(ctx, name)
                out.append(net_)
                if outputs:
                    out += [prep(f"glyph features {name} {sp}{_q(ctx)}", GD.cached_features, name, ctx.quick, sp,
                                 ctx.device, cost=3, after=(net_.label,)) for sp in (GD.FIT_SPLIT, GD.TEST_SPLIT)]
                if ranks:
                    out.append(prep(f"glyph layer ranks {name}{_q(ctx)}", GD.layer_ranks, name, ctx.quick,
                                    device=ctx.device, cost=8, after=(net_.label,)))
        return out
    return prepare


def suite_nets_seeds(n_seeds: int, *names, **what):
    """As :func:`suite_nets`, over the check's ``n_seeds`` seeds in a full run (one in quick)."""
    inner = suite_nets(*names, **what)
    return lambda ctx: inner(ctx, 1 if ctx.quick else n_seeds)


def pretrain_net(ctx, labels: str = "fine", tau: float = 1.0, cos_reg: float = 0.0, seed: int = 0,
                 arch: str = "lenet", epochs=None, regime: str = "main"):
    """The preparation (:func:`net`) of a network of the VC/FG pretraining regime (sims.glyphs.networks.pretrain);
    the read-outs of it wait for it (``after``) instead of training it themselves, so the τ = 1, λ = 0 network that
    collapse curves, the transfer point (1, 0) and the code-point granularity point all read is trained once, not
    queued on by three."""
    from sims.glyphs import networks as nw

    return net(ctx, nw.pretrain(ctx.quick, labels, tau, cos_reg, seed, arch, epochs, regime).name)


def collapse(n_seeds: int):
    def prepare(ctx):
        from sims.glyphs import vc_experiments as ve

        out = []
        for s in _seeds(ctx, n_seeds):
            n = pretrain_net(ctx, seed=s)
            out += [n, prep(f"glyph collapse curves seed {s}{_q(ctx)}", ve.collapse_curves, ctx.quick, s, ctx.device,
                            cost=5, after=(n.label,))]
        for name, arch, epochs, _, _ in ve.SENSITIVITY[bool(ctx.quick)]:
            n = pretrain_net(ctx, seed=0, arch=arch, epochs=epochs)
            out += [n, prep(f"glyph collapse curves {name}{_q(ctx)}", ve.collapse_curves, ctx.quick, 0, ctx.device,
                            arch, epochs, cost=5, after=(n.label,))]
        return out
    return prepare


def transfer(n_seeds: int):
    """prepare(ctx) for the τ and λ grids' networks of each of the check's seeds (one in quick mode)."""
    def prepare(ctx):
        from sims.glyphs import vc_experiments as ve

        q = bool(ctx.quick)
        points = [(float(t), 0.0) for t in ve.TAU_GRID[q]] + [(1.0, float(lam)) for lam in ve.LAMBDA_GRID[q]]
        out = []
        for s in _seeds(ctx, n_seeds):
            tag = "" if s == 0 else f" seed {s}"
            for t, lam in points:
                n = pretrain_net(ctx, "fine", t, lam, s)
                out += [n, prep(f"glyph transfer tau={t:g} lambda={lam:g}{tag}{_q(ctx)}", ve.transfer_point, q, t,
                                lam, s, ctx.device, cost=5, after=(n.label,))]
        return out
    return prepare


def granularity(n_seeds: int):
    def prepare(ctx):
        from sims.glyphs import granularity as gr

        from sims.glyphs import networks as nw

        out = []
        for s in _seeds(ctx, n_seeds):
            for lv in nw.levels("a1", ctx.quick):  # the judged run (FG App A.1's regime) first
                n = pretrain_net(ctx, lv, seed=s, regime="a1")
                out += [n, prep(f"glyph granularity A.1 {lv} seed {s}{_q(ctx)}", gr.granularity_point, ctx.quick, lv,
                                s, ctx.device, nw.ARCH, None, "a1", cost=5, after=(n.label,))]
            for lv in gr.LEVELS:
                n = pretrain_net(ctx, lv, seed=s)
                out += [n, prep(f"glyph granularity {lv} seed {s}{_q(ctx)}", gr.granularity_point, ctx.quick, lv, s,
                                ctx.device, cost=5, after=(n.label,))]
        for name, arch, epochs, _ in gr.SENSITIVITY[bool(ctx.quick)]:
            for lv in (gr.LEVELS[0], gr.LEVELS[-1]):
                n = pretrain_net(ctx, lv, seed=0, arch=arch, epochs=epochs)
                out += [n, prep(f"glyph granularity {lv} {name}{_q(ctx)}", gr.granularity_point, ctx.quick, lv, 0,
                                ctx.device, arch, epochs, cost=5, after=(n.label,))]
        return out
    return prepare


def new_categories(ctx):
    """nd.new_categories' glyph line: its two networks, then ND Sec 3.2's Θ fit and read-out (cached)."""
    from sims.glyphs import dependencies as GD

    nets = suite_nets("lenet-base-s{s}", "lenet-s{s}")(ctx)
    return nets + [prep(f"glyph new categories seed {ctx.seed}{_q(ctx)}", GD.new_categories, ctx.seed, ctx.quick,
                        ctx.device, cost=5 if ctx.quick else 40, after=tuple(n.label for n in nets))]


def new_categories_and_runs(run_seeds):
    """nd.new_categories' preparations: :func:`new_categories` and each synthetic run (``run_seeds(quick, seed)``;
    cached, ≈ 7 s each cold), so that the check itself is seconds of tests."""
    def prepare(ctx):
        from sims.dependency_training import new_categories_result

        return new_categories(ctx) + [prep(f"ND Sec 3.2 synthetic run {s}{_q(ctx)}", new_categories_result, ctx.quick,
                                           s, ctx.device, cost=2 if ctx.quick else 7)
                                      for s in run_seeds(ctx.quick, ctx.seed)]
    return prepare
