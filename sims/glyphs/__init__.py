"""The glyph task: a real, offline 1000-class image-recognition task rendered from matplotlib's fonts.

``from sims.glyphs import GlyphTaskConfig, glyph_task``; see docs/glyphs.md and :mod:`sims.glyphs.task`.
"""
from sims.glyphs.task import SPLITS, TEST_FACES, GlyphTask, GlyphTaskConfig, glyph_task

__all__ = ["GlyphTaskConfig", "GlyphTask", "glyph_task", "TEST_FACES", "SPLITS"]
