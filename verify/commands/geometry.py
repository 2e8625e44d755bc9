"""``theorylab geometry``: representation geometry of a model, layer by layer, in one streaming pass
(verify.geometry_report; the Python API is sims.geometry).

Progress (images/s) goes to stderr; ``-q`` silences it. ``--json PATH`` also writes the numbers as JSON; ``--json -``
prints that JSON on stdout and nothing else there. Bad input (unknown layer names, with the available ones) is a
one-line error (exit 2) before any image is read.
"""
from __future__ import annotations

from verify.commands import print_report_result


def cmd_geometry(args) -> int:
    from verify.geometry_report import run

    layers = None if args.layers is None else [s.strip() for s in args.layers.split(",") if s.strip()]
    res = run(args.out, model=args.model, weights=args.weights, images=args.images, layers=layers, crops=args.crops,
              seed=args.seed, device=args.device, batch_size=args.batch_size, workers=args.workers, labels=args.labels,
              pool=args.pool, max_features=args.max_features, input_size=args.input_size, normalize=args.normalize,
              json_path=args.json, progress=not args.quiet, glyphs=args.glyphs, cka=not args.no_cka)
    if "markdown" not in res:  # a torchrun process other than rank 0: rank 0 writes and prints
        return 0
    print_report_result(res, args.json, "geometry")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("geometry", help="layer-by-layer representation geometry of a model (one pass)",
                              description="Spectral dimension (RankMe, effective rank, α-ReQ, MP spikes), collapse "
                                          "(NC1, NC2, VCI, CDNV) and CKA between layers of any torch model, in one "
                                          "streaming float64 pass. Default: EfficientNet-Lite0 on the 17 photographs.")
    p.add_argument("--model", metavar="PKG.MOD:FACTORY", help="a callable returning a torch.nn.Module")
    p.add_argument("--weights", metavar="PATH", help="state_dict file (read with torch.load(weights_only=True))")
    p.add_argument("--images", metavar="DIR", help="an ImageNet validation folder, a folder of class sub-folders or "
                   "any folder (default: the 17 scikit-image/scikit-learn photographs, class = photograph)")
    p.add_argument("--glyphs", type=int, metavar="K", help="instead of --model/--images: a glyph LeNet (sims.glyphs, "
                   "trained briefly, cached) on K glyph classes, read on held-out faces (--crops images per class)")
    p.add_argument("--layers", metavar="NAME[,NAME]", help="module names ('output', 'name:input', 'name@1' for a "
                   "tuple element); default: the model's blocks and its output")
    p.add_argument("--pool", choices=("mean", "flatten"), default="mean",
                   help="reduce (B, C, H, W) / (B, T, C) activations by a mean over space/tokens (default) or flatten")
    p.add_argument("--no-cka", action="store_true", help="no CKA between layers (no cross-moments: memory Σp² "
                   "instead of (Σp)², for many wide layers)")
    p.add_argument("--max-features", type=int, default=4096, help="largest layer width accepted (p×p moments)")
    p.add_argument("--labels", default="auto", metavar="auto|none|FILE.csv", help="as for analyze")
    p.add_argument("--crops", type=int, default=None, metavar="N",
                   help="N seeded random-resized crops (default: one centre crop per image; 512 of the photographs)")
    p.add_argument("--out", default="report/geometry", help="output folder (geometry.json, GEOMETRY.md, figs/)")
    p.add_argument("--json", metavar="PATH", help="also write the numbers as JSON to PATH; '-': JSON on stdout only")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--input-size", type=int, default=224, help="input resolution of a user model")
    p.add_argument("--normalize", choices=("imagenet", "lite"), default="imagenet")
    p.add_argument("--device", default="cpu", help="torch device (cpu, cuda, cuda:1, ...); checked before any work")
    p.add_argument("--batch-size", type=int, default=32, help="images per forward pass")
    p.add_argument("--workers", type=int, default=None, help="DataLoader worker processes (folders)")
    p.add_argument("-v", "--verbose", action="store_true", default=__import__("argparse").SUPPRESS,
                   help="print the traceback of an error")
    p.set_defaults(func=cmd_geometry)
