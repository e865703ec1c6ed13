"""A whole paper as data, outside the repository, with no change to dpbench.

In ``tmp_path``: a toy method module (a ``LinearModel`` releasing OLS coefficients plus
Gaussian noise, charged to a GDP ledger), method / dataset / experiment yamls under
``conf/``, and ``papers/toy/{numbers.csv, claims.yaml}``. The real CLI (a subprocess, with
``DPBENCH_PATH`` naming tmp_path and ``PYTHONPATH`` the toy package) runs the experiment and
builds its figures; the test checks the paper-vs-ours table, the claims' verdicts (one
claim is built to FAIL, one row to SKIP) and that nothing was written into the repository.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import textwrap
from pathlib import Path

from conftest import REPO, dpbench_cmd

METHOD = '''
"""Toy private method: OLS coefficients plus Gaussian noise (a test fixture)."""

from __future__ import annotations

import numpy as np

from dpbench.methods.base import LinearModel


class NoisyOLS(LinearModel):
    """coef = OLS + N(0, sigma^2 I), sigma = sensitivity / mu (the whole budget, once).

    ``sensitivity`` is a declared constant, not a derived bound: a fixture, not a method.
    """

    accounting = "gdp"
    serves = frozenset({"regression"})

    def __init__(self, sensitivity: float = 10.0) -> None:
        super().__init__(sensitivity=sensitivity)
        self.sensitivity = float(sensitivity)

    def fit(self, data, accountant, rng):
        sigma = self.sensitivity / (0.999 * accountant.mu_total)
        accountant.charge_gaussian(self.sensitivity, sigma, "noisy coefficients")
        ols = np.linalg.lstsq(data.X, data.y, rcond=None)[0]
        self.coef_ = ols + rng.normal(0.0, sigma, size=ols.shape)
        return self
'''

FILES = {
    "toy_pkg/toy_method.py": METHOD,
    "conf/method/toy_noisy_ols.yaml": """
        _target_: toy_method.NoisyOLS
        label: Toy noisy OLS
        params: {sensitivity: 10.0}
        """,
    "conf/method/toy_public.yaml": """
        _target_: dpbench.methods.regression.public.PublicOLS
        label: Toy public OLS
        params: {}
        """,
    "conf/dataset/toy_data.yaml": """
        _target_: dpbench.data.synthetic.linear_regression
        label: Toy linear data
        tasks: [regression]
        provides: [truth, x_range]
        params: {n: 300, d: 3, noise_sd: 1.0, n_test: 300}
        """,
    "conf/experiment/toy/toy_exp.yaml": """
        # @package _global_
        experiment:
          name: toy_exp
          paper: toy
          task: regression
          figures:
            - {name: toy_mse_vs_eps, kind: metric_vs_eps, metric: mse, logy: true}
            - name: toy_table1
              kind: paper_table
              table: "1"
              caption: "Toy Table 1: test MSE"
              columns:
                - {method: toy_public, metric: mse, digits: 3}
                - {method: toy_noisy_ols, metric: mse, digits: 3}
        datasets: [toy_data, toy_data_proxy]
        methods: [toy_public, toy_noisy_ols]
        epsilons: [0.01, 1.0]
        trials: 3
        """,
    # a second dataset, a stand-in for one the toy paper used: its row is not comparable
    "conf/dataset/toy_data_proxy.yaml": """
        base: toy_data
        label: Toy proxy data
        params: {n: 200}
        """,
    "papers/toy/numbers.csv": """
        table,dataset,method,metric,stat,epsilon,value,digits,comparable,note
        1,toy_data,toy_public,mse,mean_se,0.01,1.01,3,true,"Table 1, public OLS"
        1,toy_data_proxy,toy_public,mse,mean_se,0.01,1.5,3,false,"Table 1, a stand-in dataset"
        """,
    "papers/toy/claims.yaml": """
        better: {mse: lower}
        claims:
          - id: public_beats_noisy
            text: "Public OLS MSE < noisy OLS MSE at eps = 0.01 (Toy Sec. 1)"
            kind: better
            where: {datasets: [toy_data], eps: "<=0.01"}
            a: toy_public
            b: toy_noisy_ols
            metric: mse
          - id: noisy_beats_public
            text: "Noisy OLS MSE < public OLS MSE at eps = 0.01 (wrong on purpose)"
            kind: better
            where: {datasets: [toy_data], eps: "<=0.01"}
            a: toy_noisy_ols
            b: toy_public
            metric: mse
          - id: table1
            text: "Table 1 reproduced"
            kind: matches_paper
            table: "1"
            tol: 30   # public OLS's test MSE is ~1.01; its s.e. over 3 trials ~0.01-0.05
        """,
}


def _write_paper(root: Path) -> None:
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))


def _repo_status() -> str:
    return subprocess.run(["git", "status", "--porcelain", "--", "dpbench", "conf", "papers"],
                          cwd=REPO, capture_output=True, text=True, check=True).stdout


def test_a_paper_as_data_runs_and_reports_outside_the_repo(tmp_path: Path) -> None:
    before = _repo_status()
    root = tmp_path / "toy_root"
    _write_paper(root)
    results = tmp_path / "results"
    env = {**os.environ, "DPBENCH_PATH": str(root), "MPLBACKEND": "Agg",
           "PYTHONPATH": os.pathsep.join([str(root / "toy_pkg"), str(REPO),
                                          os.environ.get("PYTHONPATH", "")])}

    def cli(*args: str) -> str:
        proc = subprocess.run(dpbench_cmd(*args, "experiment=toy_exp",
                                          f"results_dir={results}"),
                              cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, f"dpbench {args}:\n{proc.stdout}\n{proc.stderr}"
        return proc.stdout

    cli("run", "runner.progress=false", "runner.n_jobs=1")
    out = cli("figures")
    figs = results / "figures" / "toy_exp"

    # the paper-vs-ours table, with the paper's printed number and our mean ± s.e.
    md, tex = figs / "toy_table1.md", figs / "toy_table1.tex"
    assert md.exists() and tex.exists(), out
    table = md.read_text()
    assert "1.010" in table and "1.010" in tex.read_text()
    assert re.search(r"\| \d\.\d{3} ± \d\.\d{3} / 1\.010 \([+-]\d+\.\d\) \|", table), table
    assert "[PROXY, not comparable]" in table
    assert (figs / "toy_mse_vs_eps.png").exists() and (figs / "toy_mse_vs_eps.pdf").exists()

    # the claims: verdicts as designed, and the CLI's summary line
    claims_md, claims_json = figs / "claims.md", figs / "claims.json"
    assert claims_md.exists() and claims_json.exists(), out
    verdicts = {(v["claim"], v["dataset"]): v["status"]
                for v in json.loads(claims_json.read_text())}
    assert verdicts == {("public_beats_noisy", "toy_data"): "PASS",
                        ("noisy_beats_public", "toy_data"): "FAIL",
                        ("table1", "toy_data"): "PASS",
                        ("table1", "toy_data_proxy"): "SKIP"}, verdicts
    assert f"{claims_md}: 2 PASS, 1 FAIL, 1 SKIP" in out.splitlines(), out
    assert "wrong on purpose" in out  # each FAIL row is printed

    # nothing written into the repository (entries named toy: others may come from
    # someone editing the tree while the test runs)
    new = set(_repo_status().splitlines()) - set(before.splitlines())
    assert not [ln for ln in new if "toy" in ln], new
    assert not any((REPO / d / "toy").exists() for d in ("papers", "conf/experiment"))
