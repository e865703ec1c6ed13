"""The authors' DualQuery (iterative-dp's ``dualquery.py``, Gurobi best responses) on ADULT
(reduced): the peer side of scripts/bench_peers_qr_dq.py.

Runs in the benchmark's own virtual environment (``.bench-peers-qr-venv`` with gurobipy; its
bundled size-limited licence is enough for ADULT (reduced)) and imports nothing from
dpbench. It imports the authors' modules from their checkout, unedited, and calls their
``generate`` the way their ``__main__`` block does (``randomKway('adult', 35, 3)`` on the
``adult_seed`` 0 split with ADULT (reduced)'s seven attributes, their ``QueryManager``,
delta = 1/N^2, their ``cdp_rho`` of each eps rounded to 3 decimals, MIP gap 0), one pass per
run at the largest eps with the smaller eps cut from it as their checkpoints (so one run's
eps are correlated, as in their results), from a scratch directory holding a link to the
checkout's ``Datasets/`` and a ``gurobi.env`` with ``Threads 1`` (Gurobi reads it from the
working directory; their code sets no thread count). Their script seeds nothing; this one
seeds numpy's global generator (their sampler draws from it) and ``random`` with each seed.

    python bench_peers_qr_dq_authors.py CHECKOUT WORKDIR --eta 3 --samples 100 \
        --eps 0.1 0.5 1 --seeds 0 1 2

Prints one JSON line per (seed, eps): records (rounds run), max and mean absolute error over
the workload (their ``get_errors``), rho, the run's process-CPU seconds, N and the number of
queries; first a line with the set-up (N, queries, versions).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import sys
import time
from types import SimpleNamespace


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkout")
    ap.add_argument("workdir")
    ap.add_argument("--eta", type=float, required=True)
    ap.add_argument("--samples", type=int, required=True)
    ap.add_argument("--eps", type=float, nargs="+", required=True)
    ap.add_argument("--seeds", type=int, nargs="+", required=True)
    args = ap.parse_args()

    os.makedirs(args.workdir, exist_ok=True)
    os.chdir(args.workdir)
    if not os.path.exists("Datasets"):
        os.symlink(os.path.join(args.checkout, "Datasets"), "Datasets")
    with open("gurobi.env", "w") as f:
        f.write("Threads 1\n")
    sys.path.insert(0, args.checkout)

    import numpy as np

    log = io.StringIO()
    with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        import dualquery
        import gurobipy
        from Util.cdp2adp import cdp_rho
        from Util.data_pub_sampling import get_filters, get_proj, randomKway
        from Util.qm import QueryManager
        from Util.util_general import get_errors

        proj = get_proj("adult-small")
        split = SimpleNamespace(dataset="adult", adult_seed=0)
        private, _ = get_filters(split)
        data, workloads = randomKway("adult", 35, 3, seed=0, proj=proj, filter=private,
                                     args=split)
        qm = QueryManager(data.domain, workloads)
        real = qm.get_answer(data, concat=False)
        n = data.df.shape[0]
        delta = 1.0 / n**2
        eps = [float(e) for e in np.round(np.array(args.eps, dtype=float), 3)]
        rhos = [cdp_rho(e, delta) for e in eps]
    print(json.dumps({"setup": True, "n": n, "queries": int(qm.num_queries),
                      "numpy": np.__version__, "gurobi": ".".join(
                          map(str, gurobipy.gurobi.version()))}), flush=True)
    for seed in args.seeds:
        random.seed(seed)
        np.random.seed(seed)  # noqa: NPY002  (their sampler draws from the global generator)
        start = time.process_time()
        with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            fakes = dualquery.generate(data=data, query_manager=qm,
                                       real_answers=np.concatenate(real), rho_ckpts=rhos,
                                       eta=args.eta, samples=args.samples, mip_gap=0)
        cpu = time.process_time() - start
        for e, rho in zip(eps, rhos, strict=True):
            fake = fakes[rho]
            errors = get_errors(real, qm.get_answer(fake, concat=False))
            print(json.dumps({"seed": seed, "eps": e, "rho": rho,
                              "records": int(fake.df.shape[0]),
                              "max_error": float(errors["max"]),
                              "mean_error": float(errors["mean"]), "cpu_s": cpu, "n": n,
                              "queries": int(qm.num_queries)}), flush=True)


if __name__ == "__main__":
    main()
