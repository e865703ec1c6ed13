"""Reference fits (dpbench/runner/reference_costs.py): measured trials that ship with a
paper size a grid in ``plan`` before the user's store holds any of it; the user's own
trials come first; a damaged reference file is refused in one line naming file and line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dpbench.entry import main
from dpbench.runner.cost import (
    MODEL,
    REFERENCE,
    SAME_CELL,
    Estimator,
    cost_lines,
    grid_cost,
    reference_trials,
    stored_trials,
)
from dpbench.runner.reference_costs import export, read_reference, reference_line
from dpbench.runner.schema import ConfigError
from dpbench.runner.store import ResultStore

sys.path.insert(0, str(Path(__file__).parent))
from test_plan_cost import put, spec  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def record(s, seconds: float, cpu: float | None, n: int = 1000, d: int = 5,
           mem: float = 100.0) -> dict:
    """An ok record of ``s`` as a store holds it (timing sums to ``seconds``)."""
    rec = {"key": s.key, "status": "ok", "spec": s.to_dict(), "metrics": {"mse": 0.5},
           "timing": {"data_s": 0.0, "fit_s": seconds, "eval_s": 0.0}, "n_train": n,
           "d": d, "peak_rss_mb": mem, "finished_at": "2026-11-27T02:00:00+00:00",
           "commit": "abc"}
    if cpu is not None:
        rec["cpu_s"] = cpu
    return rec


def test_reference_line_keeps_cpu_seconds_else_the_wall_time() -> None:
    s = spec("a", "m", 1.0)
    assert reference_line(record(s, 9.0, 4.0), "box")["seconds"] == 4.0
    line = reference_line(record(s, 9.0, None), "box")
    assert line["seconds"] == 9.0 and line["seconds_are"] == "wall"
    assert "artifact_key" not in line


def test_a_reference_line_keeps_the_shared_fit_its_trial_used(tmp_path: Path) -> None:
    """The artifact key and whether the trial found it built survive export and reading,
    so that a plan knows which cells share a fit; a line with a malformed pair is refused."""
    s = spec("a", "m", 1.0)
    rec = {**record(s, 3.0, 2.0), "info": {"artifact_key": "f1", "cache_hit": True}}
    path = tmp_path / "costs.jsonl"
    export([rec], path, "box")
    (line,) = read_reference(path)
    assert (line["artifact_key"], line["cache_hit"]) == ("f1", True)
    (trial,) = reference_trials([line])
    assert (trial.artifact, trial.artifact_hit) == ("f1", True)
    path.write_text(json.dumps({**line, "cache_hit": "yes"}) + "\n")
    with pytest.raises(ConfigError, match="line 1 lacks a valid artifact_key and cache_hit"):
        read_reference(path)


def test_sources_in_order_store_then_reference_then_one_model(tmp_path: Path) -> None:
    """A stored cell beats the reference; a reference cell gives its mean and longest; a
    cell neither has comes from one model fitted on both (times ~ k, exact here)."""
    store = ResultStore(tmp_path)
    put(store, spec("a", "m", 1.0, k=2), 2.0)
    put(store, spec("a", "m", 1.0, k=4), 4.0)
    ref = reference_trials([reference_line(record(spec("a", "m", 1.0, t, k=k), 0.0, cpu), "x")
                            for t, k, cpu in ((0, 2, 50.0), (0, 16, 16.0), (1, 16, 20.0))])
    est = Estimator(stored_trials(store), ref)
    own = est.estimate(spec("a", "m", 1.0, 5, k=2))
    assert own.source == SAME_CELL and own.seconds == 2.0      # not the reference's 50
    far = est.estimate(spec("a", "m", 1.0, 5, k=16))
    assert far.source == REFERENCE and far.seconds == 18.0 and far.longest == 20.0
    mid = est.estimate(spec("a", "m", 1.0, 5, k=8))
    assert mid.source == MODEL and mid.beyond == ()    # k = 8 inside the reference's range
    assert 4.0 < mid.seconds < 50.0


def test_export_replaces_a_trials_line_and_keeps_the_others(tmp_path: Path) -> None:
    path = tmp_path / "costs.jsonl"
    a, b = spec("a", "m", 1.0), spec("b", "m", 1.0)
    assert export([record(a, 3.0, 2.0), record(b, 5.0, 5.0)], path, "box") == 2
    assert export([record(a, 9.0, 7.0), {"status": "failed", "key": "zz"}], path, "box2") == 1
    lines = {ln["key"]: ln for ln in read_reference(path)}
    assert lines[a.key]["seconds"] == 7.0 and lines[a.key]["machine"] == "box2"
    assert lines[b.key]["seconds"] == 5.0 and len(lines) == 2


@pytest.mark.parametrize("damage, says", [
    ("not json", "line 2 is not JSON"),
    ('{"key": "k"}', "line 2 lacks a valid spec, seconds"),
    ("SWAP", "line 2: its key is not its spec's"),
])
def test_a_damaged_reference_is_refused_naming_its_line(tmp_path: Path, damage: str,
                                                        says: str) -> None:
    path = tmp_path / "costs.jsonl"
    export([record(spec("a", "m", 1.0), 3.0, 2.0)], path, "box")
    good = path.read_text().splitlines()[0]
    if damage == "SWAP":
        line = json.loads(good)
        line["spec"]["epsilon"] = 2.0
        damage = json.dumps(line)
    path.write_text(f"{good}\n{damage}\n")
    with pytest.raises(ConfigError, match=says):
        read_reference(path)


def test_plan_states_a_grid_from_the_reference_alone(tmp_path: Path, monkeypatch,
                                                     capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    """A real run's trials exported by scripts/export_costs.py (to a file given by --out)
    size the same grid for an empty store: its CPU-hours are the trials' CPU seconds."""
    from dpbench import workspace

    grid_args = ["experiment=linreg_adult", "methods=[ssp,adassp]", "profile=smoke"]
    ran, fresh = tmp_path / "ran", tmp_path / "fresh"
    assert main(["run", *grid_args, f"results_dir={ran}", "runner.progress=false",
                 "runner.n_jobs=1"]) == 0
    out = tmp_path / "costs.jsonl"
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "export_costs.py"),
                           "--out", str(out), *grid_args, f"results_dir={ran}"],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = read_reference(out)
    assert lines and all(ln["seconds_are"] == "cpu" for ln in lines)
    monkeypatch.setattr(workspace, "reference_files", lambda paper, experiment: [out])
    capsys.readouterr()
    assert main(["plan", *grid_args, f"results_dir={fresh}"]) == 0
    text = capsys.readouterr().out
    assert f"{len(lines)} from reference fits of the same cells" in text, text
    assert (f"reference fits: {len(lines)} trial(s) ({len(lines)} in "
            f"{out.parent.name}/costs.jsonl)") in text
    specs = workspace.grid(workspace.compose_config([*grid_args, f"results_dir={fresh}"]))
    expect = cost_lines(grid_cost(specs, specs, ResultStore(fresh / "store"),
                                  reference_trials(lines), "note"), workers=1)[0]
    assert expect.split(";")[0] in text, (expect, text)
    assert sum(ln["seconds"] for ln in lines) > 0


def test_an_unfinished_reference_fit_is_a_lower_bound_the_plan_names(tmp_path: Path) -> None:
    """A reference fit stopped unfinished after 500 CPU-s (scripts/export_costs.py
    --unfinished) gives its cell at least 500 s, even beside a finished fit of 40 s; the
    plan says "at least" and names the cell; no cost model fits on the bound (the model's
    figures for other cells are those of the finished fits alone)."""
    from dpbench.runner.reference_costs import unfinished_line

    done = [reference_line(record(spec("a", "m", 1.0, 0, k=k), 0.0, cpu), "x")
            for k, cpu in ((2, 2.0), (4, 4.0), (8, 8.0))]
    slow = spec("a", "m", 1.0, 1, k=16)
    lines = [*done, reference_line(record(spec("a", "m", 1.0, 0, k=16), 0.0, 40.0), "x"),
             unfinished_line(slow, 500.0, (1000, 5), "x", "2026-11-27T09:00:00+00:00")]
    path = tmp_path / "costs.jsonl"
    path.write_text("".join(json.dumps(ln) + "\n" for ln in lines))
    ref = reference_trials(read_reference(path))
    est = Estimator([], ref)
    cell = est.estimate(spec("a", "m", 1.0, 3, k=16))
    assert cell.source == REFERENCE and cell.at_least
    assert cell.seconds == 500.0 and cell.longest == 500.0
    alone = Estimator([], ref[:3] + [ref[4]]).estimate(spec("a", "m", 1.0, 3, k=16))
    assert alone.seconds == 500.0 and alone.at_least            # the bound alone
    model = est.estimate(spec("a", "m", 1.0, 3, k=6))
    without = Estimator([], ref[:4]).estimate(spec("a", "m", 1.0, 3, k=6))
    assert model.source == MODEL and model.seconds == pytest.approx(without.seconds)
    todo = [spec("a", "m", 1.0, 3, k=16), spec("a", "m", 1.0, 3, k=2)]
    text = "\n".join(cost_lines(grid_cost(todo, todo, ResultStore(tmp_path / "s"), ref,
                                          "note"), workers=1))
    assert "at least " in text.splitlines()[0]
    assert "1 estimate(s) are lower bounds" in text and "a/m/1" in text
    line = dict(lines[-1], unfinished="yes")
    path.write_text(json.dumps(line) + "\n")
    with pytest.raises(ConfigError, match="lacks a valid unfinished"):
        read_reference(path)


def test_export_costs_records_an_unfinished_cell_or_refuses_in_one_line(tmp_path: Path
                                                                       ) -> None:
    import importlib.util

    loc = importlib.util.spec_from_file_location("export_costs",
                                                 REPO / "scripts" / "export_costs.py")
    mod = importlib.util.module_from_spec(loc)
    loc.loader.exec_module(mod)
    store = ResultStore(tmp_path)
    put(store, spec("a", "m", 0.5), 3.0, n=700, d=9)
    specs = [spec("a", "m", 0.5), spec("a", "m", 2.0, 0), spec("a", "m", 2.0, 1)]
    (line,) = mod.unfinished_lines(specs, store, ["a/m/2=900"])
    assert line["unfinished"] is True and line["seconds"] == 900.0
    assert (line["n_train"], line["d"]) == (700, 9) and line["key"] == specs[1].key
    for bad, says in (("a/m/0.5=900", "no unfinished trial of that cell"),
                      ("a/m/2=-1", "CPU_SECONDS > 0"), ("a/m/2", "CPU_SECONDS > 0")):
        with pytest.raises(ValueError, match=says):
            mod.unfinished_lines(specs, store, [bad])


def test_a_plan_reads_every_shipped_reference_its_own_first(tmp_path: Path, monkeypatch
                                                            ) -> None:
    """reference_files: the experiment's own file first (its paper's; for an experiment of
    no paper, the one next to its yaml), then every other shipped one; a trial two files
    hold counts once (the first file's line); a paper with no file adds nothing."""
    from dpbench import workspace
    from dpbench.runner.reference_costs import home_of, reference_files, shipped_files

    a, b = spec("a", "m", 1.0), spec("b", "m", 2.0)
    for paper, recs in (("zz_own", [record(a, 3.0, 2.0)]),
                        ("aa_other", [record(a, 3.0, 9.0), record(b, 5.0, 5.0)])):
        (tmp_path / "papers" / paper).mkdir(parents=True)
        export(recs, tmp_path / "papers" / paper / "costs.jsonl", "box")
    (tmp_path / "papers" / "no_file").mkdir()
    group = tmp_path / "conf" / "experiment" / "mine"
    group.mkdir(parents=True)
    (group / "paperless.yaml").write_text("# @package _global_\nexperiment: {name: paperless}\n")
    export([record(b, 5.0, 7.0)], group / "costs.jsonl", "box")
    monkeypatch.setenv("DPBENCH_PATH", str(tmp_path))

    files = reference_files("zz_own", "linreg_adult")
    assert files[0] == tmp_path / "papers" / "zz_own" / "costs.jsonl"
    assert set(files) == set(shipped_files()) and len(files) == len(set(files))
    names = {p.parent.name for p in files}
    assert {"aa_other", "mine"} <= names and "no_file" not in names
    assert home_of(None, "paperless") == group / "costs.jsonl"
    assert reference_files(None, "paperless")[0] == group / "costs.jsonl"
    with pytest.raises(ConfigError, match="unknown paper 'nope'; valid: .*zz_own"):
        home_of("nope", "linreg_adult")

    cfg = workspace.compose_config(["experiment=linreg_adult"])
    cfg.experiment.paper = "zz_own"
    trials, note = workspace.reference_of(cfg)
    mine = [t for t in trials if t.spec.key in (a.key, b.key)]
    assert sorted(t.seconds for t in mine) == [2.0, 5.0]   # a: zz_own's line; b: aa_other's
    assert note.startswith("reference fits: ") and "1 in zz_own/costs.jsonl, " in note, note


def test_a_reference_file_read_before_comes_from_its_cache(tmp_path: Path, monkeypatch
                                                           ) -> None:
    """``read_reference`` keeps each file's checked lines and trial identities in a sealed
    cache (plan <= 1 s): the same bytes are not checked again; changed bytes are, and a
    damaged cache file is read from the reference file again."""
    from dpbench.runner import cost, reference_costs
    monkeypatch.setenv("DPBENCH_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "costs.jsonl"
    a, b = spec("a", "m", 1.0), spec("b", "m", 1.0)
    export([record(a, 3.0, 2.0), record(b, 5.0, 5.0)], path, "box")
    parsed: list[int] = []
    real = reference_costs._parse
    monkeypatch.setattr(reference_costs, "_parse", lambda p, t: parsed.append(1) or real(p, t))
    first = read_reference(path)
    cost.IDENTITIES.clear()
    assert read_reference(path) == first and len(parsed) == 1
    assert cost.IDENTITIES[a.key] == (cost.cell_of(a), cost.budgets_of(a), cost.data_of(a))
    export([record(a, 9.0, 7.0)], path, "box2")
    assert {ln["seconds"] for ln in read_reference(path)} == {7.0, 5.0} and len(parsed) == 2
    (kept,) = (tmp_path / "cache" / "reference-costs").glob("*.pickle")   # the old one gone
    kept.write_bytes(kept.read_bytes()[:-4] + b"oops")
    assert {ln["seconds"] for ln in read_reference(path)} == {7.0, 5.0} and len(parsed) == 3
    line = json.loads(path.read_text().splitlines()[0])
    line["spec"]["epsilon"] = 2.0                        # a damaged file is still refused
    path.write_text(json.dumps(line) + "\n")
    with pytest.raises(ConfigError, match="its key is not its spec's"):
        read_reference(path)


def test_the_shipped_results_price_their_cells_at_every_budget(tmp_path: Path, monkeypatch
                                                               ) -> None:
    """``results_lines``: the shipped results' trials of a grid's dataset-and-method cells
    at every budget (a budget between two is interpolated), none of another method, each
    priced at its own CPU seconds on the machine it names; the index is built again when
    the trials file changes."""
    from dpbench.runner import reference as ref
    from dpbench.runner.reference_costs import results_lines
    monkeypatch.setenv("DPBENCH_CACHE_DIR", str(tmp_path / "cache"))
    a1, a2, other = spec("a", "m", 1.0), spec("a", "m", 2.0), spec("a", "other", 1.0)
    ref.write_reference([{**record(s, 9.0, cpu), "cpu": "Toy CPU, 2 cores"}
                         for s, cpu in ((a1, 3.0), (a2, 6.0), (other, 50.0))], tmp_path / "r")
    lines = results_lines(ref.Reference(tmp_path / "r"), [spec("a", "m", 1.5)])
    assert sorted(ln["seconds"] for ln in lines) == [3.0, 6.0]
    assert {(ln["machine"], ln["seconds_are"]) for ln in lines} == {("Toy CPU, 2 cores", "cpu")}
    between = Estimator([], reference_trials(lines)).estimate(spec("a", "m", 1.5))
    assert 3.0 < between.seconds < 6.0 and between.source != MODEL
    ref.write_reference([{**record(a1, 9.0, 4.0), "cpu": "Toy"}], tmp_path / "r")
    assert [ln["seconds"] for ln in results_lines(ref.Reference(tmp_path / "r"), [a1])] == [4.0]


def test_a_plan_prices_from_the_shipped_results_a_cell_no_costs_file_finished(
        tmp_path: Path, monkeypatch) -> None:
    """With ``reference=false`` (the results not counted as done), ``plan`` still prices
    a cell from the shipped results' trials of it: a finished trial there replaces the
    line of the same trial that a costs file holds as stopped unfinished (a lower bound);
    ``DPBENCH_REFERENCE=off`` leaves them out, and the bound is back."""
    from dpbench import workspace
    from dpbench.runner import reference as ref
    from dpbench.runner.reference_costs import unfinished_line
    monkeypatch.setenv("DPBENCH_CACHE_DIR", str(tmp_path / "cache"))
    cfg = workspace.compose_config(["experiment=linreg_adult", "profile=smoke",
                                    "methods=[ssp,adassp]", f"results_dir={tmp_path}",
                                    "reference=false"])
    specs = workspace.grid(cfg)
    ssp = [s for s in specs if s.method == "ssp"]
    ref.write_reference([{**record(s, 1.0, 40.0), "cpu": "Toy CPU"} for s in ssp],
                        tmp_path / "ref")
    costs = tmp_path / "costs.jsonl"
    export([], costs, "box", unfinished=[unfinished_line(ssp[0], 2.0, (1000, 5), "box",
                                                         "2026-11-27T00:00:00+00:00")])
    monkeypatch.setattr(workspace, "reference_files", lambda paper, experiment: [costs])
    monkeypatch.setenv("DPBENCH_REFERENCE", str(tmp_path / "ref"))
    fits, note = workspace.reference_of(cfg, specs)
    cost = grid_cost(specs, specs, ResultStore(tmp_path / "store"), fits, note)
    for s in ssp:
        est = cost.estimates[s.key]
        assert (est.source, est.seconds, est.at_least) == (REFERENCE, 40.0, False), est
    assert f"{len(ssp)} in {tmp_path.name}/ref" in str(note)
    monkeypatch.setenv("DPBENCH_REFERENCE", "off")
    fits, note = workspace.reference_of(cfg, specs)
    est = grid_cost(specs, specs, ResultStore(tmp_path / "store"), fits, note
                    ).estimates[ssp[0].key]
    assert (est.seconds, est.at_least) == (2.0, True)
