"""scripts/bench_peers_qr.py refuses, in one line and before creating its virtual
environment, when it is not given the authors' checkout or given a folder that is not one
(for GEM-Pub: without their gem_nondp.py), or asked to run one side without a report of the
same cells and seeds to take the other from; its comparison of several seeds a side gives
each side's mean ± s.e. and z. The authors' side of GEM-Pub (bench_peers_qr_authors.py) runs
on a fake checkout: it pre-trains once, fine-tunes from that pre-training's generator and
latents, and refuses an unfinished one. (The benchmark itself is run by hand, ``make
bench-peers-qr``, ``make bench-peers-qr-gem-pub``; never as a test.)"""

from __future__ import annotations

import math
import subprocess
import sys

import pytest
from conftest import REPO

SCRIPT = REPO / "scripts" / "bench_peers_qr.py"


def refusal(*args: str) -> str:
    """The script's stderr when it refuses (exit status 1, nothing on stdout)."""
    done = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True,
                          text=True, timeout=30, cwd=REPO)
    assert done.returncode == 1, done
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_no_checkout_says_how_to_clone() -> None:
    line = refusal()
    assert "needs the authors' code" in line
    assert "git clone https://github.com/terranceliu/iterative-dp" in line
    assert "PEER_QR=" in line


@pytest.mark.parametrize("files", [[], ["mwem.py", "pep.py", "gem.py", "rap.py"]])
def test_a_folder_that_is_not_their_checkout(tmp_path, files) -> None:
    for name in files:
        (tmp_path / name).write_text("")
    line = refusal("--checkout", str(tmp_path), "--methods", "rap")
    assert f"{tmp_path} is not a checkout of terranceliu/iterative-dp" in line
    assert ("Util/qm.py" if files else "mwem.py") in line
    assert "git clone" in line


def _script():
    """The script as a module (its helpers, without running it)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_peers_qr", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def _checkout(tmp_path):
    """A folder the script takes for their checkout: its own list of telling files."""
    for name in _script().CHECKOUT_FILES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    return tmp_path


def test_one_side_needs_a_report_of_the_same_cells(tmp_path) -> None:
    import json

    checkout = _checkout(tmp_path / "itdp")
    one = ("--checkout", str(checkout), "--methods", "rap", "--datasets", "qr_adult_reduced",
           "--eps", "1", "--sides", "dpbench")
    assert "needs --reuse REPORT" in refusal(*one)
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"settings": {"seed": 0, "methods": {"rap": {"T": 3}}},
                                  "runs": []}))
    assert "ran other settings or another seed" in refusal(*one, "--reuse", str(report))
    same = {"seed": 0, "methods": {"rap": _script().settings("rap", {})}}
    report.write_text(json.dumps({"settings": same, "runs": []}))
    line = refusal(*one, "--reuse", str(report))
    assert f"{report} has no run of ('authors', 'rap', 'qr_adult_reduced', 1.0, 0)" in line
    # --trials 2: every seed of the other side must be in the report
    report.write_text(json.dumps({"settings": same, "runs": [
        {"side": "authors", "method": "rap", "dataset": "qr_adult_reduced", "eps": 1.0,
         "status": "ok"}]}))                           # a report from before --trials: seed 0
    line = refusal(*one, "--trials", "2", "--reuse", str(report))
    assert f"{report} has no run of ('authors', 'rap', 'qr_adult_reduced', 1.0, 1)" in line


def test_gem_pub_needs_their_pretraining_script(tmp_path) -> None:
    checkout = _checkout(tmp_path / "itdp")           # the files GEM, RAP, ... need
    line = refusal("--checkout", str(checkout), "--methods", "gem_pub")
    assert "no gem_nondp.py" in line
    (checkout / "gem_nondp.py").write_text("")
    done = subprocess.run([sys.executable, str(SCRIPT), "--checkout", str(checkout),
                           "--methods", "gem_pub", "--datasets", "qr_adult_reduced"],
                          capture_output=True, text=True, timeout=30, cwd=REPO)
    assert done.returncode == 2 and "GEM-Pub on qr_adult only" in done.stderr


def test_errors_compared_with_standard_errors_and_z() -> None:
    script = _script()
    runs = [{"side": side, "method": "gem_pub", "dataset": "qr_adult", "eps": 1.0, "seed": i,
             "status": "ok", "max_error": m, "mean_error": 0.001}
            for side, values in (("authors", [0.10, 0.12, 0.14]), ("dpbench", [0.11, 0.13]))
            for i, m in enumerate(values)]
    runs.append({**runs[0], "seed": 3, "status": "timeout"})     # not counted
    runs.append({"side": "authors", "method": "gem_pub", "dataset": "qr_adult",
                 "phase": "pretrain", "status": "ok"})            # not a fit
    (max_row, mean_row) = script.compare(runs)
    assert max_row["runs"] == {"authors": 3, "dpbench": 2}
    assert max_row["authors"] == pytest.approx(0.12)
    assert max_row["authors_se"] == pytest.approx(0.02 / 3 ** 0.5)
    assert max_row["dpbench_se"] == pytest.approx(0.01)
    assert max_row["z"] == pytest.approx(0.0)
    assert mean_row["ratio"] == pytest.approx(1.0)
    assert math.isnan(mean_row["z"])                    # no spread on either side
    table = script.errors_table([max_row])
    assert "0.12000 ± 0.01155 (3) | 0.12000 ± 0.01000 (2) | 1.000 | +0.00" in table


#: the authors' checkout as far as bench_peers_qr_authors.py's GEM-Pub reads it: a
#: pre-training that leaves a generator (weight 0.25) and latents (2.0) in best.pkl and
#: counts its calls, and a GEM whose answers are its generator on its latents (0 on fresh
#: ones) and whose fine-tuning leaves them as they are; every true answer is 0
FAKE_AUTHORS = {
    "Util/data_pub_sampling.py": """
from types import SimpleNamespace
import pandas as pd
def get_proj(name): return None
def get_filters(args): return ("_split", 1), ("_split", 0)
def randomKway(name, number, marginal, seed=0, proj=None, filter=None, args=None):
    df = pd.DataFrame({"a": [0] * (8 if filter[1] == 1 else 2)})
    return SimpleNamespace(df=df, domain=SimpleNamespace(attrs=("a",))), [("a",)]
""",
    "Util/qm.py": """
import numpy as np
class QueryManager:
    def __init__(self, domain, workloads): self.num_queries = 4
    def get_answer(self, data, concat=False): return [np.zeros(2), np.zeros(2)]
""",
    "Util/util_general.py": """
import numpy as np
def get_eps0_zCDP(eps, delta, T, alpha=0.5): return eps, eps
def get_errors(real, fake):
    e = np.abs(np.concatenate(real) - np.concatenate(fake))
    return {"max": e.max(), "mean": e.mean()}
""",
    "Util/util_gem.py": "def get_ema_weights(gem, T, k, beta, d):\n"
                        "    return gem.generator.state_dict()\n",
    "gem.py": r"""
import pickle
import torch
class GEM:
    def __init__(self, embedding_dim=128, gen_dim=(256, 256), batch_size=500, save_dir=None):
        self.save_dir, self.mean, self.std = save_dir, torch.zeros(1), torch.ones(1)
    def save(self, path):
        with open(path, "wb") as f: pickle.dump(self.__dict__, f)
    def load(self, path):
        with open(path, "rb") as f: self.__dict__.update(pickle.load(f))
    def setup_data(self, df, columns, domain, overrides=()):
        if not hasattr(self, "generator"):
            self.generator = torch.nn.Linear(1, 1, bias=False)
            self.generator.weight.data.fill_(0.0)
    def generate_fake_data(self, mean, std, resample=False):
        if not hasattr(self, "fakez"): self.fakez = torch.zeros(1, 1)
        return self.generator(self.fakez)
    def _get_fake_answers(self, fake, qm): return fake.mean().repeat(qm.num_queries)
    def fit(self, T, eps0, sensitivity, qm, real_answers, **kw):
        for t in range(T): print(f"Epoch {t}: True Error: 0 EM Error: 0\nIters: 3 Loss: 0")
""",
    "gem_nondp.py": r"""
import os
import torch
from gem import GEM
class GEM_nondp(GEM):
    def fit(self, lr=1e-4, eta_min=1e-5, qm=None, real_answers=None, resample=False,
            max_epochs=10000, max_idxs=100, max_iters=100, early_stopping=500,
            patience=100, verbose=False):
        with open(os.path.join(os.path.dirname(__file__), "calls"), "a") as f:
            f.write(f"{max_epochs} {early_stopping} {patience}\n")
        self.generator.weight.data.fill_(0.25)
        self.fakez = torch.full((1, 1), 2.0)
        self.save(os.path.join(self.save_dir, "best.pkl"))
        with open(os.path.join(self.save_dir, "log.csv"), "w") as f:
            f.write("epoch,max_error,iters_since_improvement,lr\n")
            f.writelines(f"{e + 1},{0.5 / (e + 1)},0,0.0001\n" for e in range(max_epochs))
""",
}


def test_gem_pub_authors_side_pretrains_once_then_starts_from_its_generator_and_latents(
        tmp_path) -> None:
    import json

    checkout = tmp_path / "itdp"
    for name, text in FAKE_AUTHORS.items():
        (checkout / name).parent.mkdir(parents=True, exist_ok=True)
        (checkout / name).write_text(text)
    (checkout / "Datasets").mkdir()

    def authors(pretrained, *extra: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, str(REPO / "scripts" / "bench_peers_qr_authors.py"),
             str(checkout), str(tmp_path / "work"), "--method", "gem_pub", "--dataset",
             "adult", "--eps", "1", "--T", "2", "--pretrained", str(pretrained),
             "--pretrain-epochs", "3", "--pretrain-early-stop", "7", *extra],
            capture_output=True, text=True, timeout=120, cwd=tmp_path)

    first = authors(tmp_path / "pre", "--pretrain-only")
    assert first.returncode == 0, first.stderr
    pre = json.loads(first.stdout.splitlines()[-1])
    assert pre["pretrain_epochs_run"] == 3 and pre["pretrain_best_max_error"] == 0.5 / 3
    assert pre["pretrain_public_rows"] == 2 and "max_error" not in pre
    for seed in ("0", "1"):
        fit = authors(tmp_path / "pre", "--seed", seed)
        assert fit.returncode == 0, fit.stderr
        out = json.loads(fit.stdout.splitlines()[-1])
        # 0.25 x 2.0: the pre-trained generator on the pre-trained latents (fresh: 0)
        assert out["max_error"] == out["mean_error"] == 0.5
        assert out["steps"] == 6 and "pretrain_epochs_run" not in out
    assert (checkout / "calls").read_text() == "3 7 100\n"      # pre-trained once
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "best.pkl").write_bytes(b"")          # killed mid-way: no "done"
    cut = authors(tmp_path / "half")
    assert cut.returncode == 1 and "unfinished pre-training" in cut.stderr
