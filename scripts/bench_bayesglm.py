"""Noise-aware Bayesian GLM: compile cost vs per-fit cost, CPU seconds.

For each setting: the first fit in a process (compiles the sampler, or loads it from
JAX's persistent cache in results/cache/jax), then the median of further fits (sampling
only) and of the cached non-private baseline's first computation. Ratios show how much of
a trial is compilation. Run: python scripts/bench_bayesglm.py [--repeats 3] [--profile default]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from dpbench.data.bayesglm import adult, synthetic_glm
from dpbench.methods.bayes.baseline import nonprivate_posterior
from dpbench.methods.bayes.method import NoiseAwareGLM
from dpbench.privacy import Accountant

CHAINS = {"smoke": {"num_warmup": 100, "num_samples": 200},
          "default": {"num_warmup": 1000, "num_samples": 4000},
          "paper": {"num_warmup": 30000, "num_samples": 30000}}


def cpu(fn) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def bench(name: str, split, glm: str, params: dict, repeats: int) -> None:
    def fit(seed: int) -> NoiseAwareGLM:
        m = NoiseAwareGLM(glm, **params)
        return m.fit(split.train, Accountant(1.0, 1e-5, currency="gdp"),
                     np.random.default_rng(seed))

    first = cpu(lambda: fit(0))
    again = statistics.median(cpu(lambda s=s: fit(s)) for s in range(1, repeats + 1))
    m = fit(0)
    base = cpu(lambda: nonprivate_posterior(*m.bounded(split.train), m.baseline_spec(),
                                            use_cache=False))
    print(f"{name:32s} first fit {first:7.1f} s   further fits {again:6.2f} s   "
          f"(first/further {first / max(again, 1e-9):5.1f}x)   non-private {base:6.1f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--profile", choices=sorted(CHAINS), default="default")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    nuts = CHAINS[args.profile]
    bench("logistic synthetic N=1000 (NUTS)", synthetic_glm(rng=rng), "logistic",
          {**nuts, "norm_bound_sq": "truth"}, args.repeats)
    bench("logistic Adult N=5000 (NUTS)", adult(rng=rng), "logistic", nuts, args.repeats)
    mh = {"num_warmup": 25000, "num_samples": 100000} if args.profile != "smoke" else \
        {"num_warmup": 500, "num_samples": 2000}
    bench("Poisson synthetic N=500 (MH)",
          synthetic_glm(rng=rng, glm="poisson", n=500, theta=[0.3, -0.6, 0.8]), "poisson",
          mh, args.repeats)


if __name__ == "__main__":
    main()
