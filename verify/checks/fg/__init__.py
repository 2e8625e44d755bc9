"""FG checks (fine-grained labels in pretraining): data model, training, scaling, glyph networks."""
