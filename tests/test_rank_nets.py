"""sims.rank_nets: the guards of the rank experiments (the MLP-50 spectra of rd.mlp50_decay)."""
import numpy as np
import pytest

from sims import rank_nets


def test_singular_values_must_satisfy_the_trace_identity():
    """sims.rank_nets.check_singular_values: the Jacobian's σ read off its float64 Gram pass (Σσ² = ‖J‖_F² to
    ≈ 1e-12 at n = 500); σ² taken for σ (an independent review's plant in the MLP-50 path) or the Gram of a
    different matrix is a ValueError, not a rank curve."""
    rng = np.random.default_rng(0)
    j = rng.standard_normal((500, 500)) / np.sqrt(500)
    for _ in range(5):
        j = (rng.standard_normal((500, 500)) / np.sqrt(500)) @ j
    s = np.sqrt(np.clip(np.linalg.eigvalsh(j.T @ j), 0, None))
    rank_nets.check_singular_values(s, j)
    with pytest.raises(ValueError, match="trace identity"):
        rank_nets.check_singular_values(s ** 2, j)
    with pytest.raises(ValueError, match="trace identity"):
        rank_nets.check_singular_values(s, j[:, ::-1] * 1.001)
