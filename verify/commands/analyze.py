"""``theorylab analyze``: neural dependencies, ClsDim and collapse on a real classifier (verify.real.analyze)."""
from __future__ import annotations

import sys


def cmd_analyze(args) -> int:
    from verify.real.analyze import analyze

    try:
        path = analyze(args.out, model=args.model, weights=args.weights, images=args.images, n=args.crops,
                       seed=args.seed, rho=args.rho, k=args.categories, device=args.device,
                       between=not args.no_between, class_names=args.class_names, input_size=args.input_size,
                       normalize=args.normalize)
    except ValueError as exc:
        print(f"theorylab analyze: {exc}", file=sys.stderr)
        return 2
    print(f"analysis: {path}")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("analyze", help="run the theory on a trained classifier (default EfficientNet-Lite0)",
                              description="Default: EfficientNet-Lite0 on the scikit-image/scikit-learn photographs "
                                          "(not ImageNet). Or --model package.module:factory --weights PATH "
                                          "--images DIR for your classifier and images.")
    p.add_argument("--model", metavar="PKG.MOD:FACTORY", help="a callable returning a torch.nn.Module")
    p.add_argument("--weights", metavar="PATH", help="state_dict file (read with torch.load(weights_only=True))")
    p.add_argument("--images", metavar="DIR", help="folder of images (png/jpg/...)")
    p.add_argument("--out", default="report/analyze", help="output folder (ANALYZE.md, figs/)")
    p.add_argument("--crops", type=int, default=1024, help="number of random-resized crops (default 1024)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rho", type=float, default=0.02, help="λ = rho·λ_max for CovLasso (default 0.02)")
    p.add_argument("--categories", type=int, default=8, help="how many most-predicted categories to analyse")
    p.add_argument("--input-size", type=int, default=224, help="input resolution of a user model")
    p.add_argument("--normalize", choices=("imagenet", "lite"), default="imagenet")
    p.add_argument("--class-names", metavar="FILE", help="one class name per line")
    p.add_argument("--no-between", action="store_true", help="skip the Lite1 between-network analysis")
    p.add_argument("--device", default="cpu")
    p.set_defaults(func=cmd_analyze)
