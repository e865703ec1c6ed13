"""dpbench's DualQuery beside the authors' (iterative-dp's ``dualquery.py`` with Gurobi) on
ADULT (reduced): max and mean workload error per eps, many seeds a side, s.e. and z.

The query-release paper's authors (Liu, Vietri & Wu, NeurIPS 2021) run DualQuery with a
Gurobi MIP as the best response; this runs their code from the user's own checkout,
unedited, in the virtual environment of ``make bench-peers-qr`` (``.bench-peers-qr-venv``,
gitignored; created on first use with scripts/bench_peers_qr.py's pins, then gurobipy
added: its bundled size-limited licence is enough for ADULT (reduced)), through
scripts/bench_peers_qr_dq_authors.py. Both sides read the same file (their
Datasets/adult.csv, vendored as data/itdp_adult), keep the same 43,944 private rows (their
``adult_seed`` 0 split) and answer the same 35 3-way marginals (14,955 queries).

    git clone https://github.com/terranceliu/iterative-dp /path/to/iterative-dp
    make bench-peers-qr-dq PEER_QR=/path/to/iterative-dp          # the lines below, 20 trials
    python scripts/bench_peers_qr_dq.py --checkout /path/to/iterative-dp --trials 20
    python scripts/bench_peers_qr_dq.py --checkout ... --eta 2 --samples 25 --eps 0.1 1
    python scripts/bench_peers_qr_dq.py --checkout ... --ties random     # the old rule

Per side ``--trials`` runs, seeds ``--seed`` .. ``--seed`` + trials - 1 on each (the
authors' seed their numpy global generator, ours a ``default_rng``: independent draws).
dpbench: its DualQuery with the yaml's parameters under ``--profile`` (default: the best
response by enumeration; ``paper``: HiGHS's MIP) with ``--eta``, ``--samples`` and
``--ties`` on top, one independent fit per eps; the authors': one pass per seed at the
largest eps, the smaller eps cut from it (their checkpoints), so their eps are correlated
within a seed, each still with the right distribution. Then per eps and metric: both means
± s.e. and z = (dpbench - authors) / sqrt(se_d^2 + se_a^2). One thread a side, one run
after the other; the authors' Gurobi with ``Threads 1``. The script prints how long it
expects to take before it starts. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from _timing import ensure_venv, sitting, write_report  # noqa: E402
from bench_peers_qr import (  # noqa: E402
    PEER_PINS,
    PEER_RDT,
    PEER_VENV,
    checkout_problem,
    versus,
)

PEER_SCRIPT = ROOT / "scripts" / "bench_peers_qr_dq_authors.py"
#: the Gurobi the measurements in papers/qr/README.md ran (its pick among tied records
#: is its own and may move with the version)
GUROBI = "gurobipy==13.0.3"
CHECKOUT_FILES = ("dualquery.py", "Util/oracle_dq.py", "Util/qm.py", "Util/util_general.py",
                  "Datasets/adult.csv", "Datasets/adult-domain.json")
CLONE = ("git clone https://github.com/terranceliu/iterative-dp /path/to/iterative-dp, then "
         "make bench-peers-qr-dq PEER_QR=/path/to/iterative-dp")
DATASET = "qr_adult_reduced"
#: CPU seconds per 57 rounds (eta 3, s 100, eps 1; 2026-11-28, this 2-core machine): the
#: authors' 2.8 (one pass serves every eps), dpbench's 0.35 enumerating, 2.3 with the MIP
SECONDS = {"authors": 2.8, "default": 0.35, "paper": 2.3}


def expected_rounds(args: argparse.Namespace, eps: list[float], n: int = 43_944) -> int:
    """Rounds of one run at each of ``eps``, summed (for the duration printed first)."""
    from dpbench.methods.query_release.dualquery import rounds_affordable
    from dpbench.privacy.conversions import cdp_rho

    return sum(rounds_affordable(args.eta, args.samples, n, cdp_rho(e, 1 / n**2)) for e in eps)


def peer_python(venv: Path) -> Path:
    """The peer venv's python with gurobipy importable (installed on first use); exits with
    one line when gurobipy does not install on this platform."""
    python = ensure_venv(venv, PEER_PINS, ["--no-deps", "--ignore-requires-python", PEER_RDT])
    if subprocess.run([str(python), "-c", "import gurobipy"], capture_output=True).returncode:
        print(f"adding {GUROBI} to {venv}", flush=True)
        got = subprocess.run([str(python), "-m", "pip", "install", "--quiet", GUROBI],
                             capture_output=True, text=True)
        if got.returncode:
            sys.exit(f"gurobipy did not install in {venv}, so the authors' DualQuery cannot "
                     f"run here: {got.stderr.strip().splitlines()[-1:]}")
    return python


def dpbench_runs(args: argparse.Namespace) -> list[dict[str, Any]]:
    """dpbench's DualQuery: one fit per (seed, eps) with its own default_rng(seed)."""
    import numpy as np
    from threadpoolctl import threadpool_limits

    from dpbench.data.query_release import load_query_data
    from dpbench.methods.query_release.dualquery import DualQuery
    from dpbench.privacy.accountant import Accountant
    from dpbench.runner.grid import _merged_params, load_entry, task_view

    view = task_view(DATASET, load_entry("dataset", DATASET), "query_release")
    data = load_query_data(rng=None, **_merged_params(view, "paper")).train
    params = dpbench_params(args)
    out = []
    with threadpool_limits(limits=1):
        for seed in range(args.seed, args.seed + args.trials):
            for eps in args.eps:
                model = DualQuery(**params)
                start = time.process_time()
                model.fit(data, Accountant(eps, 1 / data.n**2, "zcdp"),
                          np.random.default_rng(seed))
                cpu = time.process_time() - start
                err = np.abs(model.queries(data).answers(data.discrete) - model.answers_)
                out.append({"side": "dpbench", "seed": seed, "eps": eps,
                            "records": model.rounds_run_, "max_error": float(err.max()),
                            "mean_error": float(err.mean()), "rho": model.rho_, "cpu_s": cpu,
                            "n": int(data.n), "queries": int(err.size)})
    return out


def dpbench_params(args: argparse.Namespace) -> dict[str, Any]:
    """dualquery.yaml's parameters under ``--profile``, with eta, samples and ties."""
    from dpbench.runner.grid import _merged_params, load_entry

    params = _merged_params(load_entry("method", "dualquery"), args.profile)
    params.update(eta=args.eta, samples=args.samples)
    if args.ties:
        params["ties"] = args.ties
    return params


def authors_runs(args: argparse.Namespace, python: Path) -> tuple[dict, list[dict[str, Any]]]:
    """The authors' runs (scripts/bench_peers_qr_dq_authors.py in the peer venv)."""
    work = tempfile.mkdtemp(prefix="bench_peers_qr_dq_")
    cmd = [str(python), str(PEER_SCRIPT), str(Path(args.checkout).resolve()), work,
           "--eta", str(args.eta), "--samples", str(args.samples),
           "--eps", *map(str, args.eps),
           "--seeds", *map(str, range(args.seed, args.seed + args.trials))]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1"}
    got = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=work)
    if got.returncode:
        sys.exit(f"the authors' DualQuery failed: {got.stderr.strip()[-600:]}")
    lines = [json.loads(line) for line in got.stdout.splitlines() if line.startswith("{")]
    setup = next(x for x in lines if x.get("setup"))
    return setup, [{"side": "authors", **x} for x in lines if not x.get("setup")]


def compare(runs: list[dict[str, Any]], eps: list[float]) -> list[dict[str, Any]]:
    """Per eps and metric: each side's mean ± s.e. and z (dpbench - authors)."""
    rows = []
    for e in eps:
        for metric in ("max_error", "mean_error"):
            at = {s: [r for r in runs if r["side"] == s and abs(r["eps"] - e) < 1e-9]
                  for s in ("authors", "dpbench")}
            rows.append({"eps": e, "metric": metric,
                         **versus(*([r[metric] for r in at[s]] for s in at)),
                         "rounds": {s: sorted({r["records"] for r in at[s]}) for s in at}})
    return rows


def table(rows: list[dict[str, Any]], trials: int) -> str:
    """Markdown: one row per (eps, metric)."""
    lines = [f"| eps | metric | rounds (authors / dpbench) | authors ({trials}) | "
             f"dpbench ({trials}) | dpbench / authors | z |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        rounds = " / ".join(",".join(map(str, r["rounds"][s])) for s in ("authors", "dpbench"))
        lines.append(f"| {r['eps']:g} | {r['metric'].replace('_', ' ')} | {rounds} | "
                     f"{r['authors']:.5f} ± {r['authors_se']:.5f} | {r['dpbench']:.5f} ± "
                     f"{r['dpbench_se']:.5f} | {r['ratio']:.3f} | {r['z']:+.2f} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkout", help="the authors' iterative-dp checkout")
    ap.add_argument("--eta", type=float, default=3.0)
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--eps", type=float, nargs="+", default=[0.1, 0.5, 1.0])
    ap.add_argument("--trials", type=int, default=20, help="runs per side")
    ap.add_argument("--seed", type=int, default=0, help="the first seed of each side")
    ap.add_argument("--profile", choices=("default", "paper"), default="default",
                    help="dualquery.yaml's profile on dpbench's side (paper: the MIP)")
    ap.add_argument("--ties", choices=("partial", "random", "solver"),
                    help="dpbench's tie rule instead of the yaml's (random: enumeration "
                    "only; solver: the MIP only)")
    ap.add_argument("--venv", type=Path, default=PEER_VENV,
                    help="the peer virtual environment (default: make bench-peers-qr's)")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "bench_peers_qr_dq.json")
    args = ap.parse_args()
    problem = checkout_problem(args.checkout, CHECKOUT_FILES, CLONE)
    if problem:
        sys.exit(problem)
    if any(not e > 0 for e in args.eps) or args.trials < 2 or args.eta <= 0 \
            or args.samples < 1:
        ap.error("eps and eta must be > 0, samples >= 1 and trials >= 2")
    args.eps = sorted(set(args.eps))
    params = dpbench_params(args)
    from dpbench.methods.query_release.dualquery import DualQuery
    DualQuery(**params)                               # a bad --ties is refused here
    expect = args.trials * (SECONDS["authors"] * expected_rounds(args, [max(args.eps)])
                            + SECONDS[args.profile] * expected_rounds(args, args.eps)) / 57
    print(f"dpbench: {json.dumps(params)}; {args.trials} runs a side at eps {args.eps}. "
          f"Expected duration: about {expect / 60:.0f} min of CPU (one thread a side).",
          flush=True)
    python = peer_python(args.venv)
    start = sitting()
    setup, theirs = authors_runs(args, python)
    ours = dpbench_runs(args)
    if ours[0]["queries"] != setup["queries"] or ours[0]["n"] != setup["n"]:
        sys.exit(f"the sides differ: {setup['n']} rows, {setup['queries']} queries (authors) "
                 f"vs {ours[0]['n']}, {ours[0]['queries']} (dpbench)")
    rows = compare(theirs + ours, args.eps)
    write_report(args.out, start, settings={"eta": args.eta, "samples": args.samples,
                                            "eps": args.eps, "trials": args.trials,
                                            "seed": args.seed, "profile": args.profile,
                                            "dpbench": params, "authors": setup},
                 comparison=rows, runs=theirs + ours)
    print(table(rows, args.trials))
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
