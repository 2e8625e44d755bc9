"""The error bad caller input raises everywhere in theorylab's API and command line."""


class UsageError(ValueError):
    """Bad input from the caller (the command line prints it as one line and exits 2)."""
