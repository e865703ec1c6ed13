"""The settings of AIM and MST, and the estimator choices they name, without mbi.

Method classes build these settings when they are constructed, and the grid expander
constructs methods to read their declarations (an arena's neighbouring relations): this
module imports no JAX or mbi, so that planning does not either. aim.py and mst.py (which
do) run the mechanisms; _mbi.py holds the oracles these names stand for.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

ESTIMATORS = ("mrf", "mixture")
#: names of the mrf estimator's marginal oracles, the keys of ``_mbi.ORACLES`` (the
#: functions; tests/methods/test_oracles.py checks the two agree)
ORACLES = ("hugin", "semistable", "guarded", "tables")
#: the mrf estimator's marginal oracle unless a method sets ``oracle``
DEFAULT_ORACLE = "guarded"

#: Oracles whose marginals are HUGIN's up to rounding on every input (semistable's are not
#: where it underflows): their small models may take flat.py's shared HUGIN program.
EXACT_ORACLES = ("hugin", "guarded", "tables")

#: Default of ``shared_max_cells``: models up to this many junction-tree cells are fitted by
#: the shared size-class program. From per-fit timings of AIM's Adult fits (docs/speed.md):
#: up to ~3,100 cells a shared program's fit is as fast as mbi's compiled one (and needs no
#: compile); at ~8,000 cells its oracle is ~3.7x slower.
SHARED_MAX_CELLS = 4096


@dataclass(frozen=True)
class AIMSettings:
    """AIM hyperparameters; defaults are the DD-SSP paper's (Sec. G.2, App. A)."""

    max_model_size: float = 200.0     # MB (paper: 200 MB; the AIM paper's default is 80)
    max_iters: int = 1000             # estimation iterations per round (paper: at most 1000)
    final_iters: int | None = None    # iterations of the final estimate (None: max_iters)
    rounds: int | None = None         # T (None: rounds_per_attribute x number of attributes)
    rounds_per_attribute: float = 16  # T / d, T rounded up (paper: 16)
    alpha: float = 0.9                # share of each round's budget spent on measurement
    estimator: str = "mrf"            # mrf (Private-PGM) | mixture (Fig. 6 ablation)
    mixture_components: int = 10      # as private-pgm's MixtureInference default
    mixture_lr: float = 1.0           # Adam step size (as MixtureInference)
    #: marginal oracle of the mrf estimator (ORACLES): guarded (default: HUGIN's
    #: marginals to rounding, einsums where they are exact; a fit takes hugin's program
    #: when short, tables' otherwise, the longest tables' checked contractions first and
    #: guarded's where one is inexact, _mbi._estimate: the name is a router since
    #: 2026-11-28, guarded's own program runs in no fit; measured against hugin on AIM on
    #: Adult at eps 1 when it did: 1.49x / 1.80x faster in a first / later process,
    #: 2026-11-25, docs/speed.md) | hugin (mbi's, the
    #: default before 2026-11-25) | semistable (mbi's fast oracle, not exact where it
    #: underflows) | tables (guarded's messages, the marginals read off a few belief tables
    #: per tree clique)
    oracle: str = DEFAULT_ORACLE
    #: models up to this many cells use the program shared by their size class (flat.py;
    #: EXACT_ORACLES); 0: mbi's program per model structure for every fit
    shared_max_cells: int = SHARED_MAX_CELLS

    def __post_init__(self) -> None:
        if not self.max_model_size > 0:
            raise ValueError(f"max_model_size={self.max_model_size} must be > 0 (MB)")
        if self.max_iters < 1 or (self.final_iters is not None and self.final_iters < 1):
            raise ValueError(f"max_iters={self.max_iters} / final_iters={self.final_iters} "
                             "must be >= 1")
        if self.rounds is not None and self.rounds < 1:
            raise ValueError(f"rounds={self.rounds} must be >= 1 or None")
        if not self.rounds_per_attribute > 1:
            raise ValueError(f"rounds_per_attribute={self.rounds_per_attribute} must be > 1 "
                             "(the initial 1-way measurements take d of the T rounds' budget)")
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha={self.alpha} must lie in (0, 1)")
        if self.estimator not in ESTIMATORS:
            raise ValueError(f"estimator={self.estimator!r}; valid: {', '.join(ESTIMATORS)}")
        if self.mixture_components < 1 or not self.mixture_lr > 0:
            raise ValueError("mixture_components must be >= 1 and mixture_lr > 0")
        if self.oracle not in ORACLES:
            raise ValueError(f"oracle={self.oracle!r}; valid: {', '.join(ORACLES)}")
        if self.shared_max_cells < 0:
            raise ValueError(f"shared_max_cells={self.shared_max_cells} must be >= 0 "
                             "(0: mbi's program per model structure)")
        if self.oracle != DEFAULT_ORACLE and self.estimator != "mrf":
            raise ValueError(f"oracle={self.oracle!r} applies to estimator='mrf' only "
                             f"(got estimator={self.estimator!r}, which has no oracle)")

    def as_dict(self) -> dict[str, object]:
        return asdict(self)

    def total_rounds(self, attributes: int) -> int:
        """T for data with this many attributes: ``rounds``, else ``rounds_per_attribute``
        x attributes rounded up."""
        return self.rounds or math.ceil(self.rounds_per_attribute * attributes)


@dataclass(frozen=True)
class MSTSettings:
    """MST hyperparameters (defaults: the MST reference implementation's)."""

    max_iters: int = 5000          # iterations of the final Private-PGM estimate
    select_iters: int = 1000       # iterations of the 1-way model used for selection
    compress: bool = True          # domain compression (the paper's MST; off: ablation)
    threshold: float = 3.0         # merge levels whose noisy count < threshold noise sds

    def __post_init__(self) -> None:
        if self.max_iters < 1 or self.select_iters < 1:
            raise ValueError(f"max_iters={self.max_iters} and select_iters={self.select_iters} "
                             "must be >= 1")
        if not self.threshold >= 0:
            raise ValueError(f"threshold={self.threshold} must be >= 0")

    def as_dict(self) -> dict[str, object]:
        return asdict(self)
