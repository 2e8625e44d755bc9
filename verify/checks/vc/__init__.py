"""VC checks (Variability collapse): probe, decomposition, invariances, stability, App C tables, glyph networks."""
