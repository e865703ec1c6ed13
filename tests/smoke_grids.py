"""Smoke-profile grid overrides shared by tests/experiments/test_experiments_smoke.py and
tests/papers/test_claim_verdicts.py (a helper module, so neither test file imports the
other: test files in different folders are not on each other's sys.path).

Keyed by experiment name (``dpbench.runner.grid.choices("experiment")``), wherever the
yaml sits under conf/experiment/.
"""

from __future__ import annotations

# Grids narrowed to one or two datasets where the whole smoke grid takes minutes; the
# datasets left out go through the same code (their loaders have their own tests).
NARROW: dict[str, list[str]] = {
    "binagg_sim": ["datasets=[{binagg_sim_d5:{n:[500]}},{binagg_sim_d5:{x_upper:[2.0]}}]"],
    "binagg_real": ["datasets=[binagg_liver]"],
    "binagg_sdg": ["datasets=[binagg_liver]"],
    "binagg_ablation": ["datasets=[binagg_intrusion_proxy]"],
}
