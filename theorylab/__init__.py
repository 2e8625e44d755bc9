"""``python -m theorylab ...``: the ``theorylab`` command (:func:`verify.cli.main`); the code lives in ``verify``."""
