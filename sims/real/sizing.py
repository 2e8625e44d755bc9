"""Memory of a real-model capture and analysis from the sizes alone (images, crops, logits, features, batch).

The estimates feed :func:`sims.resources.require` before any image is decoded or any array is made
(``theorylab analyze``, ``theorylab geometry``, :func:`sims.real.images.folder`):

* :func:`decoded_bytes`: the RGB pixels of image files, read from their headers (nothing is decoded);
* :func:`batch_bytes`: one forward pass of ``batch`` images of ``size`` × ``size``: the float32 input and the
  network's live activations, taken as ``ACTIVATIONS`` times the input (a convolutional network in inference keeps
  a few feature maps at a time, each a few times its input: EfficientNet-Lite0's widest is 8× the input);
* :func:`capture_bytes`: the kept float32 logits and features of ``n`` samples (and their concatenation);
* :func:`analysis_bytes`: ``analyze``'s float64 copies (logits, features, W·F, the PCA of the features).
"""
from __future__ import annotations

from pathlib import Path

ACTIVATIONS = 32


def decoded_bytes(paths) -> int:
    """Bytes of the RGB uint8 pixels of the image files ``paths`` (their headers only); an unreadable file
    counts 0 (it is skipped later, by name)."""
    from PIL import Image

    total = 0
    for f in paths:
        try:
            with Image.open(Path(f)) as im:
                w, h = im.size
        except (OSError, ValueError, SyntaxError):
            continue
        total += 3 * int(w) * int(h)
    return total


def batch_bytes(batch: int, size: int) -> float:
    """A forward pass of ``batch`` images of ``size`` × ``size`` pixels (module doc)."""
    return 4.0 * batch * 3 * size * size * (1 + ACTIVATIONS)


def capture_bytes(n: int, n_logits: int, n_features: int) -> float:
    """The kept float32 logits and features of ``n`` samples, twice (chunks, then their concatenation)."""
    return 2 * 4.0 * n * (n_logits + n_features)


def analysis_bytes(n: int, n_logits: int, n_features: int) -> float:
    """``analyze``'s float64 arrays: logits, features and W·F (and a copy of each), the PCA of the features
    (a centred copy, its d × d Gram matrix and eigenvectors), the logits' second moments."""
    return 8.0 * (3 * n * n_logits + 4 * n * n_features + 3 * n_features ** 2 + 2 * n_logits ** 2)
