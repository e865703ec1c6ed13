"""Named AIM / MST settings: ``paper`` is the DD-SSP paper's, the others are reductions.

The method yamls repeat these numbers in their ``profiles`` blocks (the runner
reads yamls); this module is the single reference the benchmark script and
docs/ddssp.md use, and a test checks the yamls agree with it.
"""

from __future__ import annotations

AIM_PROFILES: dict[str, dict[str, object]] = {
    "paper": {"max_model_size": 200.0, "max_iters": 1000},
    "default": {"max_model_size": 200.0, "max_iters": 1000},
    "smoke": {"max_model_size": 1.0, "max_iters": 50, "rounds": 40},
}
