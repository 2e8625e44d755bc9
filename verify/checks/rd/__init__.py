"""RD checks (Rank diminishing): rank, partial Jacobians, depth, products of many layers."""
