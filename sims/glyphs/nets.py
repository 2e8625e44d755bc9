"""Two small CNNs for the glyph task: a LeNet-style net and a small residual net (ResNet-style).

Both read a grey glyph ``X`` of shape ``[N, 1, S, S]`` (values in [0, 1], S = 32 by default; any S divisible by 4
works: the last spatial stage is pooled) and end the same way, so the papers' quantities are one attribute away:

* ``net.embed(x)`` is the **final feature** F(x) ∈ R^d: the input of the last dense layer, taken *after* its
  ReLU (in both nets the ReLU output of a fully-connected layer, so F(x) ≥ 0). d = ``feat_dim`` = 128.
* ``net.classifier`` is an ``nn.Linear(d, K)``: logits z = W F(x) + b (ND Eq 1, VC Eq 1–3's features,
  RD Sec 3.3 / Sec 5's final feature and W).
* ``net.stages`` names, in depth order, the modules whose outputs are the per-layer features of RD's rank curves
  (:data:`LAYERS` lists them per architecture; :func:`sims.glyphs.features.features` reads them with hooks).

Architectures (defaults; ``width`` scales every channel count):

* ``lenet``: conv5×5(1→16) BN ReLU maxpool2 → conv5×5(16→32) BN ReLU maxpool2 → flatten (32·(S/4)²) →
  fc(→256) BN ReLU → fc(→d) ReLU = F(x) → classifier (LeCun et al. 1998's layout, with ReLU, max-pooling and
  batch norm; docs/glyph_nets.md says why BN). The last hidden layer has no BN, so F(x) = ReLU(W₂h + b₂) is a
  plain dense layer's output. (The code pools before each conv ReLU: the same function and gradients bit for bit;
  every ReLU is in place, so a hook on a module inside a stage must clone what it keeps — the stage outputs
  themselves are never changed afterwards.)
* ``resnet``: conv3×3 stride 2 (1→32) BN ReLU (S/2) → stage1: one basic block at 32 ch (S/2) → stage2: one
  basic block at 64 ch, stride 2 (S/4) → stage3: one basic block at 128 ch, stride 2 (S/8) → head: flatten
  (128·(S/8)²) → fc(→d) ReLU = F(x) → classifier. A basic block is conv3×3-BN-ReLU-conv3×3-BN plus the
  identity (or a 1×1 conv + BN where the shape changes), then ReLU (He et al. 2016, ResNet v1); the last BN of
  each block starts at γ = 0 (Goyal et al. 2017), so each block starts as the identity map. A dense head
  and not ResNet's global average pool: a glyph's identity hangs on where its marks sit, which a global average
  discards (docs/glyph_nets.md has the measurement).

Both are small on purpose: one forward pass of a 32×32 image costs ≈ 8.7 MFLOP (LeNet) and ≈ 24.5 MFLOP
(ResNet) at 1000 classes (:func:`flops_per_image`), so that several networks train within a CPU verify run
(docs/glyph_nets.md has the measurements and the budget).

Initialisation is drawn from a ``torch.Generator`` only (never torch's global RNG): He-normal (fan-out) for
convolutions, He-uniform (fan-in) for hidden linear layers, N(0, 0.01²) for the classifier, zero biases, BN
γ = 1 / β = 0 (except the residual blocks' last γ, above). Same seed → the same weights, bit for bit, on the CPU.
"""
from __future__ import annotations

import math

import torch
from torch import nn

ARCHS = ("lenet", "resnet")
# the named per-layer outputs :func:`sims.glyphs.features.features` can return, in depth order
LAYERS = {
    "lenet": ("conv1", "conv2", "fc1", "fc2"),
    "resnet": ("stem", "stage1", "stage2", "stage3", "head"),
}


def check_arch(arch) -> str:
    if arch not in ARCHS:
        raise ValueError(f"arch: {arch!r} is not one of {ARCHS}")
    return arch


class LeNet(nn.Module):
    """LeNet-style CNN (module doc); ``embed`` = ReLU(fc2(...)) ∈ R^feat_dim, ``classifier`` = Linear(feat_dim, K)."""

    def __init__(self, n_classes: int, size: int = 32, feat_dim: int = 128, width: int = 16, hidden: int = 256):
        super().__init__()
        c1, c2 = width, 2 * width
        # max-pooling before the ReLU: maxpool(ReLU(x)) = ReLU(maxpool(x)) exactly (ReLU is monotone), and so are
        # the gradients, so the net is LeNet's conv-BN-ReLU-pool bit for bit with the ReLU on a quarter of the
        # values (tests/test_glyph_nets.py pins both against that order); in-place ReLUs spare an allocation
        self.conv1 = nn.Sequential(nn.Conv2d(1, c1, 5, padding=2, bias=False), nn.BatchNorm2d(c1), nn.MaxPool2d(2),
                                   nn.ReLU(inplace=True))
        self.conv2 = nn.Sequential(nn.Conv2d(c1, c2, 5, padding=2, bias=False), nn.BatchNorm2d(c2), nn.MaxPool2d(2),
                                   nn.ReLU(inplace=True))
        self.fc1 = nn.Sequential(nn.Flatten(), nn.Linear(c2 * (size // 4) ** 2, hidden, bias=False),
                                 nn.BatchNorm1d(hidden), nn.ReLU(inplace=True))
        self.fc2 = nn.Sequential(nn.Linear(hidden, feat_dim), nn.ReLU(inplace=True))
        self.classifier = nn.Linear(feat_dim, n_classes)
        self.stages = ("conv1", "conv2", "fc1", "fc2")
        self.feat_dim = feat_dim

    def embed(self, x):
        return self.fc2(self.fc1(self.conv2(self.conv1(x))))

    def forward(self, x):
        return self.classifier(self.embed(x))


class BasicBlock(nn.Module):
    """conv3×3-BN-ReLU-conv3×3-BN + shortcut, then ReLU (He et al. 2016); 1×1 conv + BN shortcut on a shape change."""

    def __init__(self, cin: int, cout: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Identity()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))
        self.relu = nn.ReLU(inplace=True)  # on tensors made in this block only (its input x is left as it is)

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class SmallResNet(nn.Module):
    """Small residual net (module doc); ``embed`` = ReLU(fc(flatten(stage3))) ∈ R^feat_dim."""

    def __init__(self, n_classes: int, size: int = 32, feat_dim: int = 128, width: int = 32):
        super().__init__()
        c1, c2 = width, 2 * width
        self.stem = nn.Sequential(nn.Conv2d(1, c1, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(c1),
                                  nn.ReLU(inplace=True))
        self.stage1 = BasicBlock(c1, c1)
        self.stage2 = BasicBlock(c1, c2, stride=2)
        self.stage3 = BasicBlock(c2, 2 * c2, stride=2)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(2 * c2 * (size // 8) ** 2, feat_dim),
                                  nn.ReLU(inplace=True))
        self.classifier = nn.Linear(feat_dim, n_classes)
        self.stages = ("stem", "stage1", "stage2", "stage3", "head")
        self.feat_dim = feat_dim

    def embed(self, x):
        return self.head(self.stage3(self.stage2(self.stage1(self.stem(x)))))

    def forward(self, x):
        return self.classifier(self.embed(x))


def init_weights(net: nn.Module, generator: torch.Generator) -> nn.Module:
    """Re-draw every parameter from ``generator`` (module doc's scheme), in ``named_modules`` order."""
    with torch.no_grad():
        for name, m in net.named_modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu", generator=generator)
                if m.bias is not None:
                    m.bias.zero_()
            elif isinstance(m, nn.Linear):
                if name == "classifier":
                    nn.init.normal_(m.weight, 0.0, 0.01, generator=generator)
                else:
                    nn.init.kaiming_uniform_(m.weight, nonlinearity="relu", generator=generator)
                if m.bias is not None:
                    m.bias.zero_()
            elif isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
                m.weight.fill_(1.0)
                m.bias.zero_()
                m.reset_running_stats()
        for m in net.modules():
            if isinstance(m, BasicBlock):
                m.bn2.weight.zero_()  # each residual block starts as the identity (Goyal et al. 2017)
    return net


def build_net(arch: str, n_classes: int, size: int = 32, generator: torch.Generator | None = None,
              seed: int = 0, feat_dim: int = 128) -> nn.Module:
    """A freshly initialised ``arch`` net with ``n_classes`` outputs (weights from ``generator``, else from ``seed``).

    The net is built on the CPU (so the weights do not depend on the device); move it with ``.to(device)``.
    """
    check_arch(arch)
    if not isinstance(n_classes, int) or n_classes < 2:
        raise ValueError(f"n_classes: need an int ≥ 2, got {n_classes!r}")
    if not isinstance(size, int) or size < 8 or size % 8:
        raise ValueError(f"size: need a multiple of 8 that is ≥ 8 (two or three stride-2 stages), got {size!r}")
    if generator is None:
        generator = torch.Generator().manual_seed(int(seed))
    net = LeNet(n_classes, size, feat_dim) if arch == "lenet" else SmallResNet(n_classes, size, feat_dim)
    return init_weights(net, generator)


def flops_per_image(net: nn.Module, size: int = 32) -> float:
    """Multiply-adds × 2 of one forward pass on a ``1×size×size`` image (convolutions and linear layers only)."""
    total = 0.0
    hooks = []

    def conv_hook(m, inp, out):
        nonlocal total
        total += 2.0 * out.numel() * (m.in_channels // m.groups) * math.prod(m.kernel_size)

    def lin_hook(m, inp, out):
        nonlocal total
        total += 2.0 * out.numel() * m.in_features

    for m in net.modules():
        if isinstance(m, nn.Conv2d):
            hooks.append(m.register_forward_hook(conv_hook))
        elif isinstance(m, nn.Linear):
            hooks.append(m.register_forward_hook(lin_hook))
    p = next(net.parameters())
    was_training = net.training
    try:
        net.eval()
        with torch.no_grad():
            net(torch.zeros(1, 1, size, size, device=p.device, dtype=p.dtype))
    finally:
        net.train(was_training)
        for h in hooks:
            h.remove()
    return total
