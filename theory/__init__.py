"""theorylab's mathematics (numpy/scipy/numba/sympy; no torch, no I/O).

Importing the package first points numba's kernel cache at the user cache folder (see ``theory._cachedir``),
before any module here imports numba.
"""
from theory._cachedir import set_numba_cache_dir as _set_numba_cache_dir

_set_numba_cache_dir()
