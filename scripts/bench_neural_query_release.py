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
   point, timed in process CPU seconds: the run, per round (mean, max), the optimiser steps,
   and the process's peak RSS during the fit (Linux VmHWM, reset before each fit). GEM runs
   with the ``--net`` network: ``default`` (the default profile's embedding 128, residual
   (256, 256)) or ``paper`` (Table 2: 512, (1024, 1024)); GEM-Pub's run includes its
   public pre-training (``--pub-epochs`` / ``--pub-early-stop``: the default profile's
   300 / 50), which a grid pays once (an artifact).

Run: nice python scripts/bench_neural_query_release.py [--eps 1.0] [--net default]
     [--gem-T 80] [--rap-K 25] [--rap-T 25] [--rap-max-iters 5000] [--pub-T 40]
     [--methods gem,gem_pub,gem_pub_reduced,rap_softmax,rap]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from dpbench.data.query_release import load_query_data
from dpbench.methods.query_release.gem import GEM
from dpbench.methods.query_release.gem_pub import GEMPub
from dpbench.methods.query_release.queries import QuerySet, resolve_workload
from dpbench.methods.query_release.rap import RAP
from dpbench.methods.query_release.relaxed import AnswerPlan, all_answers, column_index
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--net", choices=sorted(NETS), default="default")
    ap.add_argument("--gem-T", type=int, default=80)
    ap.add_argument("--rap-K", type=int, default=25)
    ap.add_argument("--rap-T", type=int, default=25)
    ap.add_argument("--rap-max-iters", type=int, default=5000)
    ap.add_argument("--pub-T", type=int, default=40)
    ap.add_argument("--pub-epochs", type=int, default=300)
    ap.add_argument("--pub-early-stop", type=int, default=50)
    ap.add_argument("--methods", default="gem,rap_softmax,rap")
    args = ap.parse_args()
    view = task_view("qr_adult", load_entry("dataset", "qr_adult"), "query_release")
    data = load_query_data(rng=None, **_merged_params(view, "default")).train   # + public
    domain = dict(data.domain)
    qs = QuerySet.build(domain, resolve_workload(domain, data.n))
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
    make = {"gem": lambda: GEM(T=args.gem_T, **NETS[args.net]),
            "gem_pub": lambda: GEMPub(T=args.pub_T, **pub),
            "gem_pub_reduced": lambda: GEMPub(T=args.pub_T, public_attributes=REDUCED, **pub),
            "rap_softmax": lambda: RAP(softmax=True, lr=0.1, **rap),
            "rap": lambda: RAP(softmax=False, lr=1e-3, **rap)}
    for name in args.methods.split(","):
        model = make[name]()
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
            what = f"K={args.rap_K} T={args.rap_T} max_iters={args.rap_max_iters}"
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
