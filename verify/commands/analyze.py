"""``theorylab analyze``: neural dependencies, ClsDim and collapse on a real classifier (verify.real.analyze).

Progress bars (captures in images/s, the report's steps) go to stderr; ``-q`` silences them. ``--json PATH``
also writes the numbers as JSON; ``--json -`` prints that JSON on stdout and nothing else there (the report's
path then goes to stderr). Bad input is a one-line error (exit 2) found before any work; ``theorylab -v
analyze`` adds the traceback (the command lets errors reach ``verify.cli.main``, which prints both).
"""
from __future__ import annotations

from verify.commands import print_report_result


def cmd_analyze(args) -> int:
    from verify.real.analyze import run

    res = run(args.out, model=args.model, weights=args.weights, images=args.images, n=args.crops, seed=args.seed,
              rho=args.rho, k=args.categories, device=args.device, between=not args.no_between,
              class_names=args.class_names, input_size=args.input_size, normalize=args.normalize,
              batch_size=args.batch_size, workers=args.workers, labels=args.labels, rank=args.rank,
              classifier=args.classifier, json_path=args.json, progress=not args.quiet)
    print_report_result(res, args.json, "analysis")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("analyze", help="run the theory on a trained classifier (default EfficientNet-Lite0)",
                              description="Default: EfficientNet-Lite0 on the scikit-image/scikit-learn photographs "
                                          "(a demonstration, not ImageNet). --images DIR: an ImageNet validation "
                                          "folder, a folder with one sub-folder per class, or any folder. --model "
                                          "package.module:factory --weights PATH for your classifier.")
    p.add_argument("--model", metavar="PKG.MOD:FACTORY", help="a callable returning a torch.nn.Module")
    p.add_argument("--weights", metavar="PATH", help="state_dict file (read with torch.load(weights_only=True))")
    p.add_argument("--classifier", metavar="MODULE_NAME", help="the final affine layer (an nn.Linear or 1×1 Conv2d; "
                   "its input is the features F(x)); default: the model's last nn.Linear")
    p.add_argument("--images", metavar="DIR", help="an ImageNet validation folder (flat ILSVRC2012_val_*.JPEG or one "
                   "sub-folder per synset), a folder of class sub-folders (torchvision ImageFolder) or any folder")
    p.add_argument("--labels", default="auto", metavar="auto|none|FILE.csv",
                   help="auto (default): ImageNet synsets/file names, else class sub-folders (sorted: sub-folder k = "
                        "logit k); none; or a CSV 'filename,label' mapping file")
    p.add_argument("--out", default="report/analyze", help="output folder (ANALYZE.md, figs/)")
    p.add_argument("--json", metavar="PATH", help="also write the numbers as JSON to PATH; '-': JSON on stdout only")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    p.add_argument("--crops", type=int, default=None, metavar="N",
                   help="N seeded random-resized crops (with flips) cycling over the images; default: one ImageNet "
                        "evaluation crop (centre) per image of --images, 1024 crops of the built-in photographs")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rho", type=float, default=0.02, help="λ = rho·λ_max for CovLasso (default 0.02)")
    p.add_argument("--categories", type=int, default=8, help="how many most-predicted categories to analyse (>= 1)")
    p.add_argument("--rank", default="auto", metavar="auto|paper|exact|INT",
                   help="rank of Σ_B for the VC metrics: paper = min(p, K−1) (VC Sec 6.1), exact = numerical rank, "
                        "auto (default) = paper, or exact when Σ_B does not resolve it (rank-deficient features)")
    p.add_argument("--input-size", type=int, default=224, help="input resolution of a user model")
    p.add_argument("--normalize", choices=("imagenet", "lite"), default="imagenet")
    p.add_argument("--class-names", metavar="FILE", help="one class name per line")
    p.add_argument("--no-between", action="store_true", help="skip the Lite1 between-network analysis")
    p.add_argument("--device", default="cpu", help="torch device (cpu, cuda, cuda:1, ...); checked before any work")
    p.add_argument("--batch-size", type=int, default=64, help="images per forward pass")
    p.add_argument("--workers", type=int, default=None, help="DataLoader worker processes (default: cores − 1, ≤ 8)")
    p.add_argument("-v", "--verbose", action="store_true", default=__import__("argparse").SUPPRESS,
                   help="print the traceback of an error")
    p.set_defaults(func=cmd_analyze)
