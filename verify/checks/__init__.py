"""The built-in checks: one package per paper (nd, vc, fg, rd) and real/ (trained networks); docs/architecture.md.

Every module of these packages is imported by :func:`verify.registry.discover`, except names starting with ``_``
(helpers: ``_shared/`` for several papers, ``<paper>/_name.py`` for one).
"""
