"""Per-round and per-run CPU time and peak memory of GEM, RAP-softmax and RAP on ADULT (the
query-release paper's 13 attributes, 286 3-way marginals, 334,128 queries), one torch
thread, and the speed of the all-query answer engine against the authors' way.

1. **Answer engine.** Every query's answer on B = 1,000 random relaxed rows, once with
   :class:`~dpbench.methods.query_release.relaxed.AnswerPlan` (what a round of GEM or RAP
   uses: one matrix product per attribute, no loop over marginals) and once with the
   reference gather over every query (the authors' ``_get_fake_answers``); printed: both
   times (best of 3) and their ratio, the same process.
2. **Fits.** For each method (GEM, GEM-Pub, GEM-Pub (reduced), RAP-softmax, RAP) one
   fit at ``--eps`` (delta = 1/N^2, seed 0) at the given
   point, timed in process CPU seconds: the run, per round (mean, max), the optimiser steps
   (RAP: with ``--rap-step``, and how many rounds stop on which rule), and the process's
   peak RSS during the fit (Linux VmHWM, reset before each fit). GEM runs
   with the ``--net`` network: ``default`` (the default profile's embedding 128, residual
   (256, 256)) or ``paper`` (Table 2: 512, (1024, 1024)); GEM-Pub's run includes its
   public pre-training (``--pub-epochs`` / ``--pub-early-stop``: the default profile's
   300 / 50), which a grid pays once (an artifact).

3. **Steps** (``--steps``, instead of 1 and 2). One optimiser step of GEM (the ``--net``
   network at B = 1,000, the loss on ``--gem-measured`` measured queries, every one kept)
   and of RAP / RAP-softmax (n' = 1,000 rows, the loss on q = K, K (T + 1) / 2 and K T
   measured queries: the first, mean and last round of ``--rap-K`` x ``--rap-T``), each
   through the method's own update (``GEM._update``, ``RAP._project``: forward, loss,
   backward, Adam, and GEM's per-step errors of every measured query), in float32 (what
   the methods run) and float64, one torch thread, process CPU time per step (best of
   ``--repeats`` runs of ``--step-count`` steps; the loop step's per-round set-up is in
   its time, so give it a few hundred steps). Every matrix product a step runs is
   recorded (aten mm / addmm / bmm, forward and backward, with its shapes) and its
   arithmetic counted (2 m n k); the limit is the same products run alone by ``torch.mm``
   at those shapes and that dtype (best of ``--repeats``), in the same process. Printed:
   step time, GFLOP per step, achieved GFLOP/s, the limit's GFLOP/s and the ratio step
   time / limit time (how many x from the limit). RAP's step has no matrix product (a
   gather of the measured queries' columns and their product), so only its time, for
   ``step: gather`` (the authors', float32 and float64), ``columns``, ``closed`` and
   ``compiled`` (its compile excluded: best of the repeats) in float32, each with its
   ratio to the float32 gather step (same process); and ``loop`` (the round's whole
   loop compiled by Numba; its compile excluded the same way).

Run: nice python scripts/bench_neural_query_release.py [--eps 1.0] [--net default]
     [--gem-T 80] [--rap-K 25] [--rap-T 25] [--rap-max-iters 5000] [--rap-step compiled loop]
     [--pub-T 40]
     [--methods gem,gem_pub,gem_pub_reduced,rap_softmax,rap]
     python scripts/bench_neural_query_release.py --steps [--net paper] [--repeats 5]
         [--methods gem,rap_softmax,rap] [--step-count 300]
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from collections.abc import Callable

import numpy as np
import torch

from dpbench.data.queries import QuerySet, resolve_workload
from dpbench.data.query_release import load_query_data
from dpbench.methods.query_release.gem import GEM
from dpbench.methods.query_release.gem_pub import GEMPub
from dpbench.methods.query_release.rap import DEFAULT_STEP, RAP, STEPS
from dpbench.methods.query_release.relaxed import (
    AnswerPlan,
    all_answers,
    block_softmax,
    column_index,
    torch_session,
    with_ones,
)
from dpbench.privacy.accountant import Accountant
from dpbench.runner.execute import peak_rss_mb, reset_peak_rss
from dpbench.runner.grid import _merged_params, load_entry, task_view

REDUCED = ["sex", "race", "relationship", "marital-status", "occupation", "education-num",
           "age_10"]
NETS = {"default": {"embedding_dim": 128, "hidden": [256, 256]},
        "paper": {"embedding_dim": 512, "hidden": [1024, 1024]}}


def best_of(fn, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return min(times)


class MatmulLog(torch.utils._python_dispatch.TorchDispatchMode):
    """Records every matrix product run inside it (aten mm / addmm / bmm): the two
    factors' shapes, whether each is a transposed view, and the dtype."""

    OPS = {"aten::mm": 0, "aten::addmm": 1, "aten::bmm": 0}

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        first = self.OPS.get(func._schema.name)
        if first is not None:
            a, b = args[first], args[first + 1]
            self.calls.append((tuple(a.shape), _transposed(a), tuple(b.shape),
                               _transposed(b), a.dtype))
        return func(*args, **(kwargs or {}))


def _transposed(t: torch.Tensor) -> bool:
    return t.dim() == 2 and not t.is_contiguous() and t.t().is_contiguous()


def _factor(shape: tuple, transposed: bool, dtype: torch.dtype) -> torch.Tensor:
    if transposed:
        return torch.randn(shape[::-1], dtype=dtype).t()
    return torch.randn(shape, dtype=dtype)


def flops(calls: list[tuple]) -> float:
    """2 m n k per product (times the batch for bmm)."""
    return float(sum(2 * np.prod(a) * b[-1] for a, _, b, _, _ in calls))


def matmul_limit(calls: list[tuple], repeats: int) -> float:
    """CPU seconds of the same products run alone by torch.mm / bmm at the same shapes,
    layouts and dtype (each the best of ``repeats``, looped to >= 20 ms per timing)."""
    total = 0.0
    for key in set(calls):
        ash, at, bsh, bt, dtype = key
        a, b = _factor(ash, at, dtype), _factor(bsh, bt, dtype)
        run = _products(torch.bmm if len(ash) == 3 else torch.mm, a, b)
        loops = 1
        while best_of(lambda: run(loops), 1) < 0.02:          # noqa: B023 (called here)
            loops *= 4
        total += calls.count(key) * best_of(lambda: run(loops), repeats) / loops  # noqa: B023
    return total


def _products(mm: Callable, a: torch.Tensor, b: torch.Tensor) -> Callable[[int], None]:
    """``n`` -> run ``mm(a, b)`` n times."""
    def run(n: int) -> None:
        for _ in range(n):
            mm(a, b)
    return run


def gem_step(qs: QuerySet, true: np.ndarray, net: str, dtype: torch.dtype,
             measured: int, steps: int, repeats: int) -> tuple[float, list[tuple]]:
    """CPU seconds per step of GEM._update (every measured query kept) and the products
    of one step."""
    model = GEM(T=1, max_iters=steps, **NETS[net])
    rng = np.random.default_rng(0)
    with torch_session(rng) as (gen, _):
        g = model.network(int(sum(qs.sizes)), rng).to(dtype)
        z = torch.randn(model.params["batch_size"], model.params["embedding_dim"],
                        generator=gen).to(dtype)
        pick = rng.choice(qs.n_queries, measured, replace=False)
        past = torch.as_tensor(column_index(qs))[pick]
        target = torch.as_tensor(true[pick], dtype=dtype)

        def rows() -> torch.Tensor:
            return with_ones(block_softmax(g(z), qs.sizes))

        errors = torch.ones(measured, dtype=dtype)
        sec = best_of(lambda: model._update(g, rows, past, target, errors, 0.0), repeats)
        return sec / steps, _one_step(lambda: model._update(g, rows, past, target, errors,
                                                            0.0), steps)


def rap_step(qs: QuerySet, true: np.ndarray, softmax: bool, q: int, dtype: torch.dtype,
             steps: int, repeats: int, step: str = "gather") -> tuple[float, list[tuple]]:
    """CPU seconds per step of RAP._project on q measured queries (no plateau stop; the
    targets carry N(0, 0.05) noise, as measurements do, so the loss does not reach
    RAP's 1e-8 either) from the same rows each repeat, and the products of one step."""
    model = RAP(T=1, K=q, softmax=softmax, lr=0.1 if softmax else 1e-3, max_iters=steps,
                patience=10**9, step=step)
    model.steps_, model.stops_ = [], []
    rng = np.random.default_rng(0)
    with torch_session(rng) as (gen, _):
        W0 = (2 * torch.rand(1000, int(sum(qs.sizes)), generator=gen) - 1).to(dtype)
        W = W0.clone().requires_grad_(True)
        pick = rng.choice(qs.n_queries, q, replace=False)
        past = torch.as_tensor(column_index(qs))[pick]
        target = torch.as_tensor(np.clip(true[pick] + rng.normal(0, 0.05, q), 0, 1),
                                 dtype=dtype)

        def rows() -> torch.Tensor:
            return block_softmax(W, qs.sizes) if softmax else W

        def run() -> None:
            with torch.no_grad():
                W.copy_(W0)
            model._project(W, rows, past, target, qs.sizes)

        sec = best_of(run, repeats)
        if model.steps_[-1] != steps:
            raise RuntimeError(f"RAP's round stopped after {model.steps_[-1]} of {steps} "
                               f"steps ({model.stops_[-1]}): the time per step would be wrong")
        # no products to record, and under the recording's dispatch mode torch.compile
        # ran the compiled step eagerly for the rest of the process (measured)
        return sec / steps, [] if step in ("compiled", "loop") else _one_step(run, steps)


def _one_step(run: Callable[[], object], steps: int) -> list[tuple]:
    """The matrix products of one step (``run`` takes ``steps`` steps)."""
    with MatmulLog() as log:
        run()
    per = len(log.calls) // steps
    return log.calls[:per]


def print_steps(qs: QuerySet, true: np.ndarray, args: argparse.Namespace) -> None:
    """Section 3 of the module docstring."""
    print(f"one optimiser step, one torch thread, best of {args.repeats} x "
          f"{args.step_count} steps (CPU ms per step)")
    methods = args.methods.split(",")
    for dtype in (torch.float32, torch.float64) if "gem" in methods else ():
        name = str(dtype).removeprefix("torch.")
        sec, calls = gem_step(qs, true, args.net, dtype, args.gem_measured,
                              args.step_count, args.repeats)
        with torch_session(np.random.default_rng(0)):
            limit = matmul_limit(calls, args.repeats)
        work = flops(calls)
        print(f"GEM net={args.net} B=1000 measured={args.gem_measured} {name}: "
              f"{1e3 * sec:.1f} ms, {len(calls)} products, {work / 1e9:.2f} GFLOP, "
              f"{work / sec / 1e9:.1f} GFLOP/s; limit {work / limit / 1e9:.1f} GFLOP/s "
              f"({1e3 * limit:.1f} ms); {sec / limit:.2f}x the limit")
    K, T = args.rap_K, args.rap_T
    for softmax in (s for s, name in ((False, "rap"), (True, "rap_softmax"))
                    if name in methods):
        for q in (K, K * (T + 1) // 2, K * T):
            base = None
            for step, dtype in (("gather", torch.float32), ("gather", torch.float64),
                                ("columns", torch.float32), ("closed", torch.float32),
                                ("compiled", torch.float32), ("loop", torch.float32)):
                sec, calls = rap_step(qs, true, softmax, q, dtype, args.step_count,
                                      args.repeats, step)
                base = base or sec
                print(f"{'RAP-softmax' if softmax else 'RAP'} n'=1000 q={q} step={step} "
                      f"{str(dtype).removeprefix('torch.')}: {1e3 * sec:.2f} ms "
                      f"({base / sec:.1f}x the float32 gather step), {len(calls)} products")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--net", choices=sorted(NETS), default="default")
    ap.add_argument("--gem-T", type=int, default=80)
    ap.add_argument("--rap-K", type=int, default=25)
    ap.add_argument("--rap-T", type=int, default=25)
    ap.add_argument("--rap-max-iters", type=int, default=5000)
    ap.add_argument("--rap-step", choices=STEPS, nargs="+", default=[DEFAULT_STEP],
                    help="one RAP / RAP-softmax fit per step named, in this process")
    ap.add_argument("--pub-T", type=int, default=40)
    ap.add_argument("--pub-epochs", type=int, default=300)
    ap.add_argument("--pub-early-stop", type=int, default=50)
    ap.add_argument("--methods", default="gem,rap_softmax,rap")
    ap.add_argument("--steps", action="store_true", help="time optimiser steps only")
    ap.add_argument("--step-count", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--gem-measured", type=int, default=80)
    args = ap.parse_args()
    view = task_view("qr_adult", load_entry("dataset", "qr_adult"), "query_release")
    data = load_query_data(rng=None, **_merged_params(view, "default")).train   # + public
    domain = dict(data.domain)
    qs = QuerySet.build(domain, resolve_workload(domain, data.n))
    if args.steps:
        print_steps(qs, qs.answers(data.discrete), args)
        return
    torch.set_num_threads(1)
    X = torch.rand(1000, sum(qs.sizes), generator=torch.Generator().manual_seed(0))
    cols = column_index(qs)
    plan = AnswerPlan(qs, cols, torch.device("cpu"))
    index = torch.as_tensor(cols)
    fast, slow = best_of(lambda: plan(X)), best_of(lambda: all_answers(X, index))
    gap = float(np.max(np.abs(plan(X) - all_answers(X, index))))
    print(f"ADULT: {qs.n_queries:,} queries, {qs.n_marginals} marginals, d' = {sum(qs.sizes)}")
    print(f"all answers, B=1000: plan {fast:.3f} s, gather {slow:.3f} s, ratio "
          f"{fast / slow:.3f} (max |difference| {gap:.1e})")
    delta = 1 / data.n**2
    pub = {"pretrain_epochs": args.pub_epochs, "pretrain_early_stop": args.pub_early_stop,
           **NETS[args.net]}
    rap = {"T": args.rap_T, "K": args.rap_K, "max_iters": args.rap_max_iters}
    make = {"gem": lambda _: GEM(T=args.gem_T, **NETS[args.net]),
            "gem_pub": lambda _: GEMPub(T=args.pub_T, **pub),
            "gem_pub_reduced": lambda _: GEMPub(T=args.pub_T, public_attributes=REDUCED,
                                                **pub),
            "rap_softmax": lambda step: RAP(softmax=True, lr=0.1, step=step, **rap),
            "rap": lambda step: RAP(softmax=False, lr=1e-3, step=step, **rap)}
    runs = [(name, step) for name in args.methods.split(",")
            for step in (args.rap_step if name.startswith("rap") else [None])]
    for name, step in runs:
        model = make[name](step)
        acc = Accountant(args.eps, delta, "zcdp")
        reset_peak_rss()
        t0 = time.process_time()
        model.fit(data, acc, np.random.default_rng(0))
        sec = time.process_time() - t0
        info = model.info()
        rounds = info["round_cpu_seconds"]
        err = float(np.max(np.abs(qs.answers(data.discrete) - model.answers_)))
        if name == "gem":
            what = f"T={args.gem_T} net={args.net}"
        elif name.startswith("rap"):
            stops = Counter(info["step_stops"])
            what = (f"K={args.rap_K} T={args.rap_T} max_iters={args.rap_max_iters} step="
                    f"{step} [{info['step']}] (rounds stopping on: "
                    f"{', '.join(f'{r} x{n}' for r, n in stops.most_common())})")
        else:
            what = (f"T={args.pub_T} net={args.net} (pre-training: "
                    f"{info['pretrain_epochs_run']} epochs, {info['pretrain_cpu_seconds']:.1f} s "
                    f"CPU, best public max error {info['pretrain_best_max_error']:.4f})")
        print(f"{name:11s} {what} eps={args.eps:g}: {sec:7.1f} s CPU per run, "
              f"{np.mean(rounds):.2f} s per round (max {np.max(rounds):.2f}), "
              f"{sum(info['steps']):,} steps, peak RSS {peak_rss_mb():.0f} MiB, "
              f"max error {err:.4f}")


if __name__ == "__main__":
    main()
