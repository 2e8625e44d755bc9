"""theory.validate: the input contract every theory function relies on — covariances (symmetry and PSD
tolerances, zero and negative diagonals), scalars and indices (each error names the argument), non-finite
entries, and array input numpy cannot read."""
from __future__ import annotations

import numpy as np
import pytest

from theory import validate as V
from theory.validate import as_float_array

C3 = np.array([[2.0, 0.5, 0.1], [0.5, 1.0, 0.2], [0.1, 0.2, 1.5]])


# ---- covariances: symmetry and PSD tolerances, zero and negative diagonals

def test_zero_covariance_is_accepted_and_other_non_positive_diagonals_are_not():
    z = V.as_covariance(np.zeros((3, 3)))  # E[f fᵀ] of dead logits: valid (PSD), not an error
    assert z.shape == (3, 3) and not z.any()
    for bad in (np.array([[0.0, 1.0], [1.0, 0.0]]), -np.eye(2)):  # zero diagonal with entries, or all < 0
        with pytest.raises(ValueError, match="cov: not PSD"):
            V.as_covariance(bad)


def test_negative_diagonal_message_names_the_negative_entry():
    c = np.diag([1.0, -1e-3, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"cov\[1,1\] = -0.001 < 0"):
        V.as_covariance(c)


def test_as_covariance_symmetrises_and_names_the_asymmetric_pair():
    c = C3.copy()
    c[0, 2] += 1e-12  # within sym_rtol: accepted, returned exactly symmetric
    out = V.as_covariance(c)
    assert np.array_equal(out, out.T) and out[0, 2] == pytest.approx(0.1 + 0.5e-12, abs=1e-15)
    c[2, 1] += 1e-3
    with pytest.raises(ValueError, match=r"\|cov\[(2,1|1,2)\] - cov\[(1,2|2,1)\]\|"):
        V.as_covariance(c)


def test_symmetry_tolerance_is_inclusive():
    """Symmetric within sym_rtol means |K_ij − K_ji| ≤ sym_rtol (docstring): on a unit-diagonal matrix K = cov
    exactly, so an asymmetry of exactly 2⁻¹⁰ passes at sym_rtol = 2⁻¹⁰, and sym_rtol = 0 accepts exact symmetry."""
    c = np.array([[1.0, 0.5], [0.5 + 2.0**-10, 1.0]])
    out = V.as_covariance(c, sym_rtol=2.0**-10)
    assert out[0, 1] == out[1, 0] == 0.5 + 2.0**-11
    with pytest.raises(ValueError, match="not symmetric"):
        V.as_covariance(c, sym_rtol=2.0**-11)
    V.as_covariance(np.array([[1.0, 0.5], [0.5, 1.0]]), sym_rtol=0.0)


def test_psd_rtol_zero_means_exactly_psd():
    """psd_rtol = 0: exactly PSD is accepted — a dead logit (a zero row and column) included — and a negative
    eigenvalue is not."""
    out = V.as_covariance(np.diag([1.0, 0.0, 2.0]), psd_rtol=0.0)
    assert out.tolist() == np.diag([1.0, 0.0, 2.0]).tolist()
    with pytest.raises(ValueError, match="not PSD"):
        V.as_covariance(np.array([[1.0, 1.0 + 1e-9], [1.0 + 1e-9, 1.0]]), psd_rtol=0.0)


def test_psd_tolerance_is_relative_and_scale_free():
    q = np.linalg.qr(np.random.default_rng(0).standard_normal((4, 4)))[0]
    for lam_min, ok in ((-1e-13, True), (-1e-6, False)):
        c = (q * np.array([1.0, 1.0, 1.0, lam_min])) @ q.T
        c = 0.5 * (c + c.T)
        for s in (1e-200, 1.0, 1e200):
            if ok:
                V.as_covariance(s * c)
            else:
                with pytest.raises(ValueError, match="not PSD.*smallest eigenvalue"):
                    V.as_covariance(s * c)


def test_as_covariance_psd_tolerance_is_1e_minus_10_times_n():
    """The default PSD tolerance (K + psd_rtol·n·I ≻ 0, psd_rtol = 1e−10): a 2×2 correlation 1 + 1.5e−10 (smallest
    eigenvalue −1.5e−10, rounding of a Gram matrix) is accepted, 1 + 3e−10 (−3e−10 < −2e−10) is refused."""
    from theory.validate import as_covariance
    as_covariance(np.array([[1.0, 1.0 + 1.5e-10], [1.0 + 1.5e-10, 1.0]]))
    with pytest.raises(ValueError, match=r"not PSD: .* smallest eigenvalue -3e-10 < -1e-10 \* n"):
        as_covariance(np.array([[1.0, 1.0 + 3e-10], [1.0 + 3e-10, 1.0]]))


@pytest.mark.parametrize("skew", [2e-9, -2e-9])
def test_as_covariance_judges_psd_on_the_symmetric_part(skew):
    """A rank-one covariance [[1, 1], [1, 1]] (PSD, eigenvalue 0) stored with an asymmetry of 4e−9 (within
    sym_rtol = 1e−8): it is accepted whichever triangle carries the excess, because PSD is judged on the symmetric
    part; one triangle alone has an eigenvalue of −2e−9, beyond psd_rtol·n = 2e−10."""
    from theory.validate import as_covariance
    C = np.array([[1.0, 1.0 + skew], [1.0 - skew, 1.0]])
    np.testing.assert_array_equal(as_covariance(C), np.ones((2, 2)))


# ---- scalars and indices: the error names the argument and what it must be

def test_check_positive_excludes_zero_unless_allowed():
    assert V.check_positive(2.5, "x") == 2.5
    assert V.check_positive(0, "x", allow_zero=True) == 0.0
    for bad in (0, 0.0, -1e-300, np.nan, np.inf):
        with pytest.raises(ValueError, match="x: must be > 0"):
            V.check_positive(bad, "x")
    with pytest.raises(ValueError, match="y: must be >= 0"):
        V.check_positive(-1, "y", allow_zero=True)


def test_check_index_and_check_tolerance_refuse_out_of_range_and_non_numbers():
    assert V.check_index(np.int64(2), 3) == 2
    for bad in (3, -1):
        with pytest.raises(ValueError, match="out of range for n = 3"):
            V.check_index(bad, 3, "i")
    for bad in (True, 1.0, "1"):
        with pytest.raises(ValueError, match="k: must be an integer"):
            V.check_index(bad, 3, "k")
    assert V.check_tolerance(0, "tol") == 0.0
    for bad, err in ((True, TypeError), ("1e-3", TypeError), (-1e-9, ValueError), (np.nan, ValueError)):
        with pytest.raises(err, match="tol"):
            V.check_tolerance(bad, "tol")


def test_check_real_and_check_int_refuse_non_finite_and_non_numbers():
    assert V.check_real(np.float32(0.25), "x") == 0.25 and V.check_real(3, "x") == 3.0
    for bad in (np.nan, np.inf, -np.inf):
        with pytest.raises(ValueError, match="x: must be finite"):
            V.check_real(bad, "x")
    for bad in (True, "1", None, 1j, np.array(1.0)):
        with pytest.raises(TypeError, match="x: must be a real number"):
            V.check_real(bad, "x")
    assert V.check_int(np.int64(3), "n", 1, 3) == 3
    for bad, err in ((0, ValueError), (4, ValueError), (2.0, TypeError), (True, TypeError)):
        with pytest.raises(err, match="n: must be an integer"):
            V.check_int(bad, "n", 1, 3)


# ---- arrays: non-finite entries and input numpy cannot read

def test_check_finite_names_the_first_bad_entry():
    a = np.zeros((2, 3))
    a[1, 2], a[0, 1] = np.inf, np.nan
    with pytest.raises(ValueError, match=r"x: 2 non-finite value\(s\); first is NaN at column 1 \(entry \(0, 1\)\)"):
        V.check_finite(a, "x")
    with pytest.raises(ValueError, match=r"first is Inf at entry \(2,\)"):
        V.check_finite(np.array([0.0, 1.0, -np.inf]), "v")


class _DtypeRaises:
    """An object whose ``.dtype`` raises TypeError: np.iscomplexobj propagates it (it only catches AttributeError)."""

    @property
    def dtype(self):
        raise TypeError("no dtype here")


RAGGED = [[1.0, 2.0], [3.0]]


@pytest.mark.parametrize("bad", [RAGGED, _DtypeRaises()], ids=["ragged", "dtype-raises"])
def test_as_float_array_refuses_input_numpy_cannot_read(bad):
    """as_float_array: input on which np.iscomplexobj itself raises is a ValueError 'cannot be read', not a crash."""
    with pytest.raises(ValueError, match=r"x: cannot be read as a float64 array"):
        as_float_array(bad, "x")
