"""sims.glyphs.render and .augment: the canonical layout, the prefilter, exact augmentation."""
from __future__ import annotations

import numpy as np
import pytest

from sims.glyphs import augment, fonts, render


@pytest.fixture(scope="module")
def dejavu():
    return fonts.load_font(next(f.path for f in fonts.faces() if f.name == "DejaVuSans"))


def _draw(font, ch, canvas=64):
    return render.render_canonical(font, font.get_char_index(ord(ch)), canvas)


def _ink_rows(img):
    rows = np.flatnonzero(img.max(axis=1))
    return rows[0], rows[-1]


def test_layout_keeps_the_baseline(dejavu):
    comma, quote = _ink_rows(_draw(dejavu, ",")), _ink_rows(_draw(dejavu, "'"))
    assert comma[0] > quote[1]                   # a comma sits below an apostrophe
    o, O = _ink_rows(_draw(dejavu, "o")), _ink_rows(_draw(dejavu, "O"))
    assert O[1] - O[0] > o[1] - o[0] + 5 and abs(O[1] - o[1]) <= 1   # same baseline, O taller
    x, H = _ink_rows(_draw(dejavu, "x")), _ink_rows(_draw(dejavu, "H"))
    assert abs(x[1] - H[1]) <= 1


def test_ink_is_centred_horizontally(dejavu):
    img = _draw(dejavu, "i")
    cols = np.flatnonzero(img.max(axis=0))
    assert abs((cols[0] + cols[-1]) / 2 - 31.5) <= 1


def test_oversized_glyphs_are_shrunk_to_fit():
    face = next(f for f in fonts.faces() if f.name == "STIXSizFourSymReg")
    font = fonts.load_font(face.path)
    img = render.render_canonical(font, fonts.candidates(face)[ord("(")], 64)
    r0, r1 = _ink_rows(img)
    assert r1 - r0 + 1 <= 0.95 * 64 + 1 and r1 - r0 + 1 >= 0.9 * 64 and r0 > 0 and r1 < 63


def test_render_rejects_bad_arguments(dejavu):
    with pytest.raises(ValueError, match="canvas"):
        render.render_canonical(dejavu, 36, 4)
    with pytest.raises(ValueError, match="gid"):
        render.render_canonical(dejavu, 10 ** 6, 64)


def test_prefilter_is_the_binomial_filter_with_a_zero_border():
    x = np.random.default_rng(0).integers(0, 256, (3, 10, 10), dtype=np.uint8)
    out = render.prefilter(x)
    assert out.shape == (3, 12, 12) and out.dtype == np.uint8
    assert not out[:, 0].any() and not out[:, -1].any() and not out[:, :, 0].any() and not out[:, :, -1].any()
    p = np.pad(x.astype(np.int64), ((0, 0), (1, 1), (1, 1)))
    k = np.array([1, 2, 1])
    ref = sum(k[a] * k[b] * p[:, a:a + 10, b:b + 10] for a in range(3) for b in range(3))
    np.testing.assert_array_equal(out[:, 1:-1, 1:-1], (ref + 8) // 16)


def test_identity_augmentation_halves_the_canvas_by_block_means():
    padded = render.prefilter(np.random.default_rng(1).integers(0, 256, (2, 16, 16), dtype=np.uint8))
    out = augment.augment(padded, np.array([0, 1]), augment.identity_params(2), 8, None)
    inner = padded[:, 1:-1, 1:-1].astype(np.float64) / 255
    blocks = inner.reshape(2, 8, 2, 8, 2).mean(axis=(2, 4))
    np.testing.assert_allclose(out, blocks, atol=1e-6)


def test_augmentation_is_per_sample_and_within_range():
    rng = np.random.default_rng(2)
    padded = render.prefilter(rng.integers(0, 256, (5, 32, 32), dtype=np.uint8))
    which = rng.integers(0, 5, 9)
    p = augment.params_from_uniform(rng.random((9, augment.N_PARAMS)))
    noise = rng.random((9, 16, 16), dtype=np.float32)
    full = augment.augment(padded, which, p, 16, noise)
    assert full.dtype == np.float32 and full.min() >= 0 and full.max() <= 1
    for i in (0, 4, 8):  # one sample alone gives the same bytes as inside the batch
        one = augment.augment(padded, which[i:i + 1], {k: v[i:i + 1] for k, v in p.items()}, 16, noise[i:i + 1])
        assert one.tobytes() == full[i:i + 1].tobytes()
    lo = augment.params_from_uniform(np.zeros((1, augment.N_PARAMS)))
    assert lo["scale"][0] == 0.85 and lo["noise"][0] == 0.0
    with pytest.raises(ValueError, match="shape"):
        augment.params_from_uniform(np.zeros((3, 2)))


def test_rotation_turns_a_bar():
    img = np.zeros((1, 32, 32), np.uint8)
    img[0, 15:17, 4:28] = 255                       # a horizontal bar
    padded = render.prefilter(img)
    p = augment.identity_params(1)
    p["tan_half"] = np.array([np.tan(np.radians(45))])  # θ = 90°
    out = augment.augment(padded, np.array([0]), p, 16, None)[0]
    rows, cols = np.flatnonzero(out.max(axis=1) > 0.3), np.flatnonzero(out.max(axis=0) > 0.3)
    assert len(rows) > 8 and len(cols) <= 3           # now vertical
