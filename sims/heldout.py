"""A read-out scored on the images (or samples) it was fitted on is not held out: a byte-for-byte guard."""
from __future__ import annotations

import hashlib

import numpy as np


def _digests(X) -> set:
    a = np.ascontiguousarray(X.numpy() if hasattr(X, "numpy") else np.asarray(X))
    return {hashlib.blake2b(r.tobytes(), digest_size=16).digest() for r in a.reshape(len(a), -1)}


def check_held_out(X_fit, X_eval, what: str) -> None:
    """No row of ``X_eval`` may be a row of ``X_fit`` (compared byte for byte, same dtype): ValueError naming ``what``
    and how many coincide."""
    common = _digests(X_fit) & _digests(X_eval)
    if common:
        raise ValueError(f"{what}: {len(common)} of the held-out images are images the read-out was fitted on "
                         "(scored in sample, not held out)")
