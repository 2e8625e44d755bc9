"""Parameter sweeps that resume after interruption: local process pool by default, a Dask cluster when given one.

A sweep is a named experiment and a list of points (parameter dicts), given explicitly or as a grid / zip /
replicate spec. Each point is one task; its result is one JSON file ``OUT/points/<key>.json`` written
atomically, so a sweep killed at any moment (SIGKILL included) loses no finished point and leaves no
half-written file. At the end: ``OUT/index.json``, ``OUT/summary.csv``, ``OUT/summary.md``, ``OUT/plot.png``.

* Resume: rerunning the same sweep skips every point whose file is a valid record of it. A point that raised
  (``failed``, with its traceback) or killed its worker on every try (``crashed``) is rerun only with
  ``retry_failed=True``. A damaged point file is reported and the point runs again.
* Reproducibility: a point's seed is derived by hashing (experiment, canonical parameters, sweep seed), so a
  point gives the same result in any order, on any worker, local or remote.
* One sweep per folder: the running sweep holds a lock on it; a second one refuses or waits.
* Memory: a point whose estimated memory does not fit this machine is refused before anything runs or is
  written (``force`` runs it), and the local pool runs only as many points at once as fit.
* Plugins: ``register_experiment(Experiment(...))`` in a plugin module adds an experiment, and a plugin's FG
  data model runs in ``multiview`` points (docs/datamodel.md); ``run_sweep(..., plugins=[...])`` /
  ``theorylab sweep --plugins`` load them, the workers import them too, and a point's key includes the plugin
  code's fingerprint, so editing a plugin reruns its points.

Modules (imports point downward: verify.sweep → sims → theory; nothing in sims or theory imports them):

==============  ===========================================================================================
``schema``      what an experiment declares: typed, ranged parameters (:class:`Param`), result fields
``experiments`` the named experiments (toy, massive_floors, lyapunov, multiview)
``points``      grid / zip / replicate specs → points, derived seeds and keys, TOML configs
``task``        one point in a worker: result or error + traceback
``pool``        the local backend: worker processes that survive a dying worker
``backends``    scheduler specs, serial and Dask backends
``store``       the folder: lock, point files (validated), index, manifest
``runner``      :func:`run_sweep`, :func:`load_sweep`, :func:`sweep_runner`
``summary``     summary.csv / summary.md;  ``plot``: plot.png
``budget``      the points' memory from their parameters, checked before anything runs
==============  ===========================================================================================
"""
from verify.sweep.experiments import register_experiment, unregister_experiment
from verify.sweep.points import derive_seed, expand_points, load_config, point_key
from verify.sweep.schema import Experiment, Param
from verify.sweep.runner import SweepResult, load_sweep, run_sweep, sweep_runner
from verify.sweep.store import to_jsonable
from verify.sweep.summary import flat_result, summary_rows

__all__ = ["register_experiment", "unregister_experiment", "Experiment", "Param", "run_sweep", "load_config", "load_sweep", "sweep_runner", "SweepResult", "expand_points", "derive_seed",
           "point_key", "to_jsonable", "flat_result", "summary_rows"]
