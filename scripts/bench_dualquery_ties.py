"""DualQuery's tie rules measured: dpbench's DualQuery loop on ADULT (reduced) with each rule
for picking one of several maximising records, many seeds each, max and mean error.

The loop is :mod:`dpbench.methods.query_release.dualquery`'s (the same sampler, update and
stopping rule; one pass at the largest eps, smaller eps cut from it, as the authors' code
does); only the best response's pick among tied records changes:

- ``random``: a uniformly random maximiser (dpbench's rule before issue 62);
- ``first`` / ``last``: the first / last maximiser in C order of the codes;
- ``partial``: dpbench's ``ties: partial`` with enumeration (the default since issue 62);
- ``negpartial``: the maximisers matching the fewest cells of the sampled *negated*
  queries, then uniformly (HiGHS's lean, measured; a probe, not an option of the method);
- ``solver``: HiGHS's MIP as it comes (``oracle: mip, ties: solver``);
- ``mip_partial``: HiGHS's MIP with the ``partial`` secondary objective (the paper profile);
- ``gurobi``: the authors' own best response (their ``Util/oracle_dq.py``, imported from
  ``--checkout`` unedited and given the round's draws in draw order, duplicates kept, as
  their ``dualquery.py`` does), with ``Threads 1``; needs gurobipy importable:
  ``pip install --target DIR gurobipy`` and ``--gurobi-path DIR``.

    python scripts/bench_dualquery_ties.py --rules random partial --seeds 0 80
    python scripts/bench_dualquery_ties.py --rules gurobi --checkout /path/to/iterative-dp \
        --gurobi-path /tmp/gurobi_site --seeds 0 40 --eps 0.1 0.5 1

Prints per rule and eps: runs, rounds, max and mean error (mean ± s.e.), CPU seconds, the
median number of tied records per round and whether every pick was a true maximiser; with
``--out`` the per-run rows as JSON. One thread. Not a test.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
from numpy.typing import NDArray

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dpbench.data.queries import QuerySet  # noqa: E402
from dpbench.methods.query_release import dualquery as dq  # noqa: E402
from dpbench.privacy import noise  # noqa: E402
from dpbench.privacy.conversions import cdp_rho  # noqa: E402

RULES = ("random", "first", "last", "partial", "negpartial", "solver", "mip_partial", "gurobi")
DATASET = "qr_adult_reduced"


def load() -> tuple[Any, QuerySet, NDArray]:
    """ADULT (reduced)'s private rows, its 35 3-way marginals and their true answers."""
    from dpbench.data.queries import resolve_workload
    from dpbench.data.query_release import load_query_data
    from dpbench.runner.grid import _merged_params, load_entry, task_view

    view = task_view(DATASET, load_entry("dataset", DATASET), "query_release")
    data = load_query_data(rng=None, **_merged_params(view, "paper")).train
    domain = dict(data.domain)
    qs = QuerySet.build(domain, resolve_workload(domain, data.n, "all_3way"))
    return data, qs, qs.answers(data.discrete)


def gurobi_oracle(checkout: str, qs: QuerySet) -> Callable[[NDArray], int]:
    """The authors' Gurobi best response for one round's draws (in draw order), as a flat
    record index; their module imported from ``checkout``."""
    sys.path.insert(0, checkout)
    from Util.oracle_dq import dualquery_best_response

    sizes = np.asarray(qs.sizes)
    start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    dim = int(sizes.sum())
    shape = SimpleNamespace(shape=tuple(int(v) for v in sizes))

    def onehot(ids: NDArray) -> NDArray:
        rows = np.zeros((len(ids), dim))
        for i, (axes, cell) in enumerate(dq.query_cells(qs, ids)):
            rows[i, [start[a] + v for a, v in zip(axes, cell, strict=True)]] = 1
        return rows

    def pick(drawn: NDArray) -> int:
        nq = qs.n_queries
        x = np.asarray(dualquery_best_response(onehot(drawn[drawn < nq]),
                                               onehot(drawn[drawn >= nq] - nq), dim, shape, 0))
        record = [int(np.argmax(x[b:b + m])) for b, m in zip(start, sizes, strict=True)]
        return int(np.ravel_multi_index(tuple(record), qs.sizes))

    return pick


def run(qs: QuerySet, true: NDArray, n: int, eta: float, s: int, rhos: list[float],
        seed: int, rule: str, gurobi: Callable[[NDArray], int] | None
        ) -> tuple[list[tuple[float, float, int]], list[int], bool]:
    """One pass of the loop at the largest rho with ``rule``; per rho (max error, mean
    error, rounds) of the records so far, the tie counts and whether every pick maximised."""
    rng = np.random.default_rng(seed)
    nq = qs.n_queries
    scores = np.zeros(nq)
    records: list[NDArray] = []
    ties_seen: list[int] = []
    all_best = True
    t, spent = 0, 0.0
    while spent + dq.round_rho(eta, t, n, s) <= max(rhos):
        spent += dq.round_rho(eta, t, n, s)
        drawn = noise.exponential_samples(np.concatenate([scores, -scores]), eta, t / n, s,
                                          rng, relation="replace_one",
                                          label=f"dualquery:sample:{t + 1}")
        ids, counts = np.unique(drawn, return_counts=True)
        pos, neg, w = ids % nq, ids >= nq, counts.astype(float)
        obj = dq.payoff_table(qs, pos, neg, w).ravel()
        tied = np.flatnonzero(obj >= obj.max() - 1e-9)
        ties_seen.append(int(tied.size))
        if rule == "random":
            # not privacy noise: a pick among records tied on the already-sampled queries
            flat = int(tied[rng.integers(tied.size)])
        elif rule in ("first", "last"):
            flat = int(tied[0 if rule == "first" else -1])
        elif rule == "partial":
            rec, _ = dq.enumerate_best_response(qs, pos, neg, w, rng=rng, ties="partial")
            flat = int(np.ravel_multi_index(tuple(rec), qs.sizes))
        elif rule == "negpartial":
            near = np.zeros(tied.size)
            codes = np.unravel_index(tied, qs.sizes)
            for (axes, cell), wi, ng in zip(dq.query_cells(qs, pos), w, neg, strict=True):
                if ng:
                    near -= wi * np.mean([codes[a] == v for a, v in zip(axes, cell,
                                                                        strict=True)], axis=0)
            kept = tied[near >= near.max() - 1e-9]
            # not privacy noise: a pick among records tied on the already-sampled queries
            flat = int(kept[rng.integers(kept.size)])
        elif rule in ("solver", "mip_partial"):
            rec, _, _ = dq.best_response(qs, pos, neg, w,
                                         ties="solver" if rule == "solver" else "partial")
            flat = int(np.ravel_multi_index(tuple(rec), qs.sizes))
        else:
            assert gurobi is not None
            flat = gurobi(drawn)
        all_best &= bool(obj[flat] >= obj.max() - 1e-9)
        record = np.array(np.unravel_index(flat, qs.sizes))
        records.append(record)
        scores += true
        np.subtract.at(scores, qs.row_positions(record[None, :])[0], 1.0)
        t += 1
    out = []
    for rho in rhos:
        rounds = dq.rounds_affordable(eta, s, n, rho)
        err = np.abs(true - qs.rows_answers(np.array(records[:rounds])))
        out.append((float(err.max()), float(err.mean()), rounds))
    return out, ties_seen, all_best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rules", nargs="+", choices=RULES, default=["random", "partial"])
    ap.add_argument("--eta", type=float, default=3.0)
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--eps", type=float, nargs="+", default=[1.0])
    ap.add_argument("--seeds", type=int, nargs=2, default=[0, 20], metavar=("FROM", "TO"))
    ap.add_argument("--checkout", help="the authors' iterative-dp checkout (rule gurobi)")
    ap.add_argument("--gurobi-path", help="a directory holding gurobipy (rule gurobi)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if "gurobi" in args.rules and not (args.checkout and args.gurobi_path):
        ap.error("rule gurobi needs --checkout and --gurobi-path")
    if args.gurobi_path:
        sys.path.append(args.gurobi_path)
        Path("gurobi.env").write_text("Threads 1\n")   # Gurobi reads it from the cwd
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    data, qs, true = load()
    eps = sorted(set(args.eps))
    rhos = [cdp_rho(e, 1 / data.n**2) for e in eps]
    gurobi = gurobi_oracle(args.checkout, qs) if "gurobi" in args.rules else None
    rows: list[dict[str, Any]] = []
    for rule in args.rules:
        for seed in range(*args.seeds):
            start = time.process_time()
            per_eps, ties, best = run(qs, true, data.n, args.eta, args.samples, rhos, seed,
                                      rule, gurobi)
            cpu = time.process_time() - start
            rows += [{"rule": rule, "seed": seed, "eps": e, "max_error": mx, "mean_error": mn,
                      "rounds": r, "cpu_s": cpu, "ties_median": float(np.median(ties)),
                      "all_maximisers": best} for e, (mx, mn, r) in zip(eps, per_eps,
                                                                         strict=True)]
        for e in eps:
            got = [r for r in rows if r["rule"] == rule and r["eps"] == e]
            stats = []
            for key in ("max_error", "mean_error"):
                v = np.array([r[key] for r in got])
                stats.append(f"{key} {v.mean():.5f} ± {v.std(ddof=1) / math.sqrt(v.size):.5f}")
            print(f"{rule} eps {e:g}: {len(got)} runs, {got[0]['rounds']} rounds, "
                  f"{', '.join(stats)}; {sum(r['cpu_s'] for r in got):.0f} CPU-s, median "
                  f"ties {np.median([r['ties_median'] for r in got]):g}, all maximisers "
                  f"{all(r['all_maximisers'] for r in got)}", flush=True)
    if args.out:
        args.out.write_text(json.dumps({"settings": vars(args) | {"out": str(args.out)},
                                        "rows": rows}, indent=1, default=str))


if __name__ == "__main__":
    main()
