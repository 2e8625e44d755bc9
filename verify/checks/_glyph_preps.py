"""What the glyph checks read from the disk cache, listed for ``@check(prepare=...)`` (:mod:`verify.parallel`).

A run with ``--jobs N`` computes these ahead of the checks, spread over the workers: the suite's 1000-class
networks (ND/RD), and the VC/FG experiments' cached points — each collapse curve, transfer point and
granularity point trains its own network and reads it out, so eleven transfer points are eleven independent
jobs. The lists name exactly the calls the checks make (same arguments, so the same cache entries); the
sensitivity rows are listed too, because in a full run the checks that compute them reach that branch (a
verdict that does not leaves those entries unused, computed for nothing but harmless). Costs are seconds on a
quiet 2-core machine (cold), for the order only. The glyph modules are imported when a list is asked for, not
with this module (the ND checks' module imports it; torch loads only if a glyph check runs).
"""
from __future__ import annotations

from verify.parallel import prep


def _q(ctx) -> str:
    return " (quick)" if ctx.quick else ""


def suite_nets(*names):
    """prepare(ctx) for checks reading the suite networks ``names`` (``{s}`` / ``{s1}``: the run's seed, + 1)."""
    def prepare(ctx, seeds=1):
        from sims.glyphs import suite

        out = []
        for k in range(seeds):
            s = ctx.seed + k
            for n in names:
                name = n.format(s=s, s1=s + 1)
                out.append(prep(f"glyph net {name}{_q(ctx)}", suite.net, name, ctx.quick, ctx.device,
                                cost=3 if ctx.quick else 60))
        return out
    return prepare


def suite_nets_seeds(n_seeds: int, *names):
    """As :func:`suite_nets`, over the check's ``n_seeds`` seeds in a full run (one in quick)."""
    inner = suite_nets(*names)
    return lambda ctx: inner(ctx, 1 if ctx.quick else n_seeds)


def collapse(n_seeds: int):
    def prepare(ctx):
        from sims.glyphs import vc_experiments as ve

        seeds = range(ctx.seed, ctx.seed + (1 if ctx.quick else n_seeds))
        out = [prep(f"glyph collapse curves seed {s}{_q(ctx)}", ve.collapse_curves, ctx.quick, s, ctx.device,
                    cost=20) for s in seeds]
        out += [prep(f"glyph collapse curves {name}{_q(ctx)}", ve.collapse_curves, ctx.quick, 0, ctx.device, arch,
                     epochs, cost=60 if arch == "resnet" else 30)
                for name, arch, epochs, _, _ in ve.SENSITIVITY[bool(ctx.quick)]]
        return out
    return prepare


def transfer(ctx):
    from sims.glyphs import vc_experiments as ve

    q = bool(ctx.quick)
    points = [(float(t), 0.0) for t in ve.TAU_GRID[q]] + [(1.0, float(lam)) for lam in ve.LAMBDA_GRID[q]]
    return [prep(f"glyph transfer tau={t:g} lambda={lam:g}{_q(ctx)}", ve.transfer_point, q, t, lam, ctx.seed,
                 ctx.device, cost=20) for t, lam in points]


def granularity(n_seeds: int):
    def prepare(ctx):
        from sims.glyphs import granularity as gr

        seeds = range(ctx.seed, ctx.seed + (1 if ctx.quick else n_seeds))
        out = [prep(f"glyph granularity {lv} seed {s}{_q(ctx)}", gr.granularity_point, ctx.quick, lv, s,
                    ctx.device, cost=20) for s in seeds for lv in gr.LEVELS]
        out += [prep(f"glyph granularity {lv} {name}{_q(ctx)}", gr.granularity_point, ctx.quick, lv, 0, ctx.device,
                     arch, epochs, cost=60 if arch == "resnet" else 30)
                for name, arch, epochs, _ in gr.SENSITIVITY[bool(ctx.quick)] for lv in (gr.LEVELS[0], gr.LEVELS[-1])]
        return out
    return prepare


def new_categories(ctx):
    """nd.new_categories' glyph line: its two networks, then ND Sec 3.2's Θ fit and read-out (cached)."""
    from sims.glyphs import dependencies as GD

    return suite_nets("lenet-base-s{s}", "lenet-s{s}")(ctx) + [
        prep(f"glyph new categories seed {ctx.seed}{_q(ctx)}", GD.new_categories, ctx.seed, ctx.quick, ctx.device,
             cost=5 if ctx.quick else 40)]
