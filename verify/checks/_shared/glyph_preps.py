"""What the glyph checks read from the disk cache, listed for ``@check(prepare=...)`` (:mod:`verify.parallel`).

A run with ``--jobs N`` computes these ahead of the checks, spread over the workers: the suite's 1000-class
networks (ND/RD), and the VC/FG experiments' cached points — each collapse curve, transfer point and
granularity point trains its own network and reads it out, so eleven transfer points are eleven independent
jobs. The lists name exactly the calls the checks make (same arguments, so the same cache entries); the
sensitivity rows are listed too, because in a full run the checks that compute them reach that branch (a
verdict that does not leaves those entries unused, computed for nothing but harmless). Costs are seconds of a
cold run (docs/glyph_checks.md), for the order only. The glyph modules are imported when a list is asked for, not
with this module (the ND checks' module imports it; torch loads only if a glyph check runs).
"""
from __future__ import annotations

from verify.parallel import prep


def _q(ctx) -> str:
    return " (quick)" if ctx.quick else ""


def _seeds(ctx, n_seeds: int) -> range:
    """The seeds a check reads: its ``n_seeds`` from the run's seed in a full run, one in quick mode."""
    return range(ctx.seed, ctx.seed + (1 if ctx.quick else n_seeds))


def suite_nets(*names, outputs: bool = False, ranks: bool = False):
    """prepare(ctx) for checks reading the suite networks ``names`` (``{s}`` / ``{s1}``: the run's seed, + 1);
    ``outputs``: also their held-out features on both splits (sims.glyphs.dependencies.cached_features), ``ranks``:
    their per-layer ranks (layer_ranks), each after its network."""
    def prepare(ctx, seeds=1):
        from sims.glyphs import dependencies as GD
        from sims.glyphs import networks as suite

        out = []
        for k in range(seeds):
            s = ctx.seed + k
            for n in names:
                name = n.format(s=s, s1=s + 1)
                net = prep(f"glyph net {name}{_q(ctx)}", suite.net, name, ctx.quick, ctx.device,
                           cost=3 if ctx.quick else 60)
                out.append(net)
                if outputs:
                    out += [prep(f"glyph features {name} {sp}{_q(ctx)}", GD.cached_features, name, ctx.quick, sp,
                                 ctx.device, cost=3, after=(net.label,)) for sp in (GD.FIT_SPLIT, GD.TEST_SPLIT)]
                if ranks:
                    out.append(prep(f"glyph layer ranks {name}{_q(ctx)}", GD.layer_ranks, name, ctx.quick,
                                    device=ctx.device, cost=8, after=(net.label,)))
        return out
    return prepare


def suite_nets_seeds(n_seeds: int, *names, **what):
    """As :func:`suite_nets`, over the check's ``n_seeds`` seeds in a full run (one in quick)."""
    inner = suite_nets(*names, **what)
    return lambda ctx: inner(ctx, 1 if ctx.quick else n_seeds)


def pretrain_net(ctx, seed: int, arch: str = "lenet", epochs=None):
    """The τ = 1, λ = 0 code-point network of the VC/FG regime that collapse curves, the transfer point (1, 0) and
    the code-point granularity point of one seed all read (sims.glyphs.pretrain.pretrain_net): one preparation,
    which those read-outs wait for (``after``), instead of three that would queue on its cache lock."""
    from sims.glyphs import pretrain as pt

    big = arch == "resnet" or (epochs or 0) > 8
    return prep(f"glyph pretrain net fine seed {seed} {arch} epochs {epochs or 'regime'}{_q(ctx)}", pt.pretrain_net,
                ctx.quick, seed=seed, device=ctx.device, arch=arch, epochs=epochs, cost=25 if big else 12)


def collapse(n_seeds: int):
    def prepare(ctx):
        from sims.glyphs import vc_experiments as ve

        seeds = _seeds(ctx, n_seeds)
        out = []
        for s in seeds:
            net = pretrain_net(ctx, s)
            out += [net, prep(f"glyph collapse curves seed {s}{_q(ctx)}", ve.collapse_curves, ctx.quick, s, ctx.device,
                              cost=5, after=(net.label,))]
        for name, arch, epochs, _, _ in ve.SENSITIVITY[bool(ctx.quick)]:
            net = pretrain_net(ctx, 0, arch, epochs)
            out += [net, prep(f"glyph collapse curves {name}{_q(ctx)}", ve.collapse_curves, ctx.quick, 0, ctx.device,
                              arch, epochs, cost=5, after=(net.label,))]
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
            net = pretrain_net(ctx, s)
            tag = "" if s == 0 else f" seed {s}"
            out += [net] + [prep(f"glyph transfer tau={t:g} lambda={lam:g}{tag}{_q(ctx)}", ve.transfer_point, q, t,
                                 lam, s, ctx.device, cost=5 if (t, lam) == (1.0, 0.0) else 15,
                                 after=(net.label,) if (t, lam) == (1.0, 0.0) else ()) for t, lam in points]
        return out
    return prepare


def granularity(n_seeds: int):
    def prepare(ctx):
        from sims.glyphs import granularity as gr

        seeds = _seeds(ctx, n_seeds)
        out = []
        for s in seeds:
            net = pretrain_net(ctx, s)
            out.append(net)
            out += [prep(f"glyph granularity {lv} seed {s}{_q(ctx)}", gr.granularity_point, ctx.quick, lv, s,
                         ctx.device, cost=5 if lv == "fine" else 15, after=(net.label,) if lv == "fine" else ())
                    for lv in gr.LEVELS]
        for name, arch, epochs, _ in gr.SENSITIVITY[bool(ctx.quick)]:
            net = pretrain_net(ctx, 0, arch, epochs)
            out.append(net)
            out += [prep(f"glyph granularity {lv} {name}{_q(ctx)}", gr.granularity_point, ctx.quick, lv, 0,
                         ctx.device, arch, epochs, cost=5 if lv == "fine" else 25,
                         after=(net.label,) if lv == "fine" else ()) for lv in (gr.LEVELS[0], gr.LEVELS[-1])]
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
