"""``theorylab analyze``: neural dependencies, ClsDim and collapse on a real classifier (verify.real.analyze)."""
from __future__ import annotations

import sys


def cmd_analyze(args) -> int:
    from verify.real.analyze import analyze

    try:
        path = analyze(args.out, model=args.model, weights=args.weights, images=args.images, n=args.crops,
                       seed=args.seed, rho=args.rho, k=args.categories, device=args.device,
                       between=not args.no_between, class_names=args.class_names, input_size=args.input_size,
                       normalize=args.normalize, batch_size=args.batch_size, workers=args.workers)
    except ValueError as exc:
        print(f"theorylab analyze: {exc}", file=sys.stderr)
        return 2
    print(f"analysis: {path}")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("analyze", help="run the theory on a trained classifier (default EfficientNet-Lite0)",
                              description="Default: EfficientNet-Lite0 on the scikit-image/scikit-learn photographs "
                                          "(a demonstration, not ImageNet). --images DIR: an ImageNet validation "
                                          "folder (labels and names read offline) or any folder. --model "
                                          "package.module:factory --weights PATH for your classifier.")
    p.add_argument("--model", metavar="PKG.MOD:FACTORY", help="a callable returning a torch.nn.Module")
    p.add_argument("--weights", metavar="PATH", help="state_dict file (read with torch.load(weights_only=True))")
    p.add_argument("--images", metavar="DIR", help="an ImageNet validation folder (flat ILSVRC2012_val_*.JPEG or one "
                   "sub-folder per synset: true labels and class names) or any folder of images")
    p.add_argument("--out", default="report/analyze", help="output folder (ANALYZE.md, figs/)")
    p.add_argument("--crops", type=int, default=1024, help="number of random-resized crops (default 1024)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rho", type=float, default=0.02, help="λ = rho·λ_max for CovLasso (default 0.02)")
    p.add_argument("--categories", type=int, default=8, help="how many most-predicted categories to analyse")
    p.add_argument("--input-size", type=int, default=224, help="input resolution of a user model")
    p.add_argument("--normalize", choices=("imagenet", "lite"), default="imagenet")
    p.add_argument("--class-names", metavar="FILE", help="one class name per line")
    p.add_argument("--no-between", action="store_true", help="skip the Lite1 between-network analysis")
    p.add_argument("--device", default="cpu", help="torch device (cpu, cuda, cuda:1, ...); checked before any work")
    p.add_argument("--batch-size", type=int, default=64, help="images per forward pass (ImageNet folders)")
    p.add_argument("--workers", type=int, default=None, help="DataLoader worker processes (default: cores − 1, ≤ 8)")
    p.set_defaults(func=cmd_analyze)
