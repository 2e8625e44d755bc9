"""Helpers shared by the checks of several papers (not discovered: the leading underscore)."""
