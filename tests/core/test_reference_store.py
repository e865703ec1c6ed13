"""The reference results beside the local store (runner/reference.py): written from records,
read back as the store's answer where the local store lacks a key, the local record
winning, its origin named, its size capped, its stale keys found."""

from __future__ import annotations

import gzip
import json
import lzma
from pathlib import Path

import pytest

from dpbench.runner import reference as ref
from dpbench.runner.spec import TrialSpec
from dpbench.runner.store import ResultStore


def spec(trial: int, method: str = "m") -> TrialSpec:
    return TrialSpec(dataset="d", dataset_target="toy.load", dataset_params={},
                     method=method, method_target="toy.m", method_params={},
                     task="regression", epsilon=1.0, delta=1e-5, budget_unit="epsilon",
                     trial=trial, meta={"experiment": "toy"})


def record(s: TrialSpec, mse: float, commit: str = "a" * 40) -> dict:
    return {"key": s.key, "status": "ok", "spec": s.to_dict(), "metrics": {"mse": mse},
            "privacy": {"target_delta": 1e-5}, "timing": {"fit_s": 0.1}, "commit": commit,
            "cpu": "Toy CPU, 2 cores", "finished_at": "2026-11-28T12:00:00+00:00"}


def test_the_store_answers_from_the_reference_where_it_lacks_a_key(tmp_path: Path) -> None:
    specs = [spec(t) for t in range(3)]
    ref.write_reference([record(s, 1.0 + s.trial) for s in specs], tmp_path / "ref")
    store = ResultStore(tmp_path / "store", ref.Reference(tmp_path / "ref"))
    store.put(record(specs[0], 9.0, commit="b" * 40))          # re-run here: it wins
    got = [store.get(s.key) for s in specs]
    assert got[0]["metrics"]["mse"] == 9.0 and "origin" not in got[0]
    assert [g["metrics"]["mse"] for g in got[1:]] == [2.0, 3.0]
    assert all(g["origin"] == ref.REFERENCE for g in got[1:])
    assert store.status(specs[2].key) == "ok"
    assert ref.origin_of(got[0]) == ref.LOCAL
    assert ref.origin_of(got[1]) == "reference, aaaaaaaaaa, 2026-11-28, Toy CPU, 2 cores"
    assert ResultStore(tmp_path / "store").get(specs[1].key) is None   # no reference: none


def test_written_reference_is_deterministic_with_a_manifest(tmp_path: Path) -> None:
    recs = [record(spec(t), float(t)) for t in range(4)]
    recs[1]["host_probe_s"], recs[2]["host_probe_s"] = 0.05, 0.12     # two recorded speeds
    a = ref.write_reference(recs, tmp_path / "a", {"toy@default": {"held": 4, "asked": 5}})
    ref.write_reference(list(reversed(recs)), tmp_path / "b",
                        {"toy@default": {"held": 4, "asked": 5}})
    files_a = ref.Reference(tmp_path / "a").files()
    files_b = ref.Reference(tmp_path / "b").files()
    assert [f.read_bytes() for f in files_a] == [f.read_bytes() for f in files_b]
    assert [f.name for f in files_a] == [f"{ref.OTHER_PART}{ref.PART_SUFFIX}"]
    manifest = ref.Reference(tmp_path / "a").manifest()
    assert manifest["trials"] == 4 and manifest["grids"] == {"toy@default": {"held": 4,
                                                                             "asked": 5}}
    assert manifest["hosts"] == {"Toy CPU, 2 cores": 4}
    assert manifest["host_probes"] == {"trials": 2, "range_s": [0.05, 0.12]}
    with lzma.open(files_a[0], "rt") as fh:
        lines = [json.loads(x) for x in fh]
    assert [x["key"] for x in lines] == sorted(r["key"] for r in recs)
    assert a == tmp_path / "a" / ref.PARTS_DIR


def test_failed_trials_stay_out_and_the_size_cap_holds(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    recs = [record(spec(t), float(t)) for t in range(3)]
    recs[1] = {**recs[1], "status": "failed", "error": "x"}
    ref.write_reference(recs, tmp_path / "r")
    assert len(ref.Reference(tmp_path / "r")) == 2
    monkeypatch.setattr(ref, "SIZE_CAP", 10)
    with pytest.raises(ValueError, match="more than the 0 MB cap"):
        ref.write_reference(recs, tmp_path / "s")
    assert not ref.Reference(tmp_path / "s").exists()
    monkeypatch.setattr(ref, "SIZE_CAP", 25 * 2**20)
    ref.write_reference(recs[:1], tmp_path / "s")
    monkeypatch.setattr(ref, "SIZE_CAP", 10)
    with pytest.raises(ValueError, match="cap"):                 # refused: the old one stays
        ref.write_reference(recs, tmp_path / "s")
    assert ref.Reference(tmp_path / "s").keys() == [recs[0]["key"]]


def test_stale_keys_are_the_ones_no_grid_has(tmp_path: Path) -> None:
    specs = [spec(t) for t in range(3)]
    ref.write_reference([record(s, 1.0) for s in specs], tmp_path / "r")
    moved = ref.stale_keys(ref.Reference(tmp_path / "r"), [specs[0].key, specs[2].key])
    assert moved == [specs[1].key]


def test_each_line_begins_with_its_key_and_an_older_file_still_reads(tmp_path: Path) -> None:
    """A record is parsed only when asked for: its key is read from the head of its line
    (``reference.LINE_HEAD``); a file written before, as sorted JSON lines, reads the same."""
    recs = [record(spec(t), float(t)) for t in range(3)]
    path = ref.write_reference(recs, tmp_path / "new")
    with lzma.open(path / f"{ref.OTHER_PART}{ref.PART_SUFFIX}", "rt") as fh:
        lines = fh.read().splitlines()
    assert all(ln.startswith(ref.LINE_HEAD + r["key"] + '"') for ln, r in
               zip(lines, sorted(recs, key=lambda r: r["key"]), strict=True))
    old = tmp_path / "old"
    old.mkdir()
    with gzip.open(old / ref.TRIALS_FILE, "wt") as fh:
        fh.writelines(json.dumps(r, sort_keys=True) + "\n" for r in recs)
    new_ref, old_ref = ref.Reference(tmp_path / "new"), ref.Reference(old)
    assert new_ref.keys() == old_ref.keys() == sorted(r["key"] for r in recs)
    for r in recs:
        assert new_ref.get(r["key"]) == old_ref.get(r["key"]) == {**r, "origin": ref.REFERENCE}
    assert new_ref.get("0" * 64) is None


def test_each_grid_has_its_own_file_and_a_record_reads_only_its_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file per part (a grid): a rebuild that changes one grid rewrites that file only
    (the repository keeps every other file's bytes once); asking for a record decompresses
    the file that holds it, not the others; the manifest's sha256 covers every file, and a
    file no part fills any more (and an older single trials file) is removed."""
    monkeypatch.setenv("DPBENCH_CACHE_DIR", str(tmp_path / "cache"))
    a = [record(spec(t, "a"), float(t)) for t in range(3)]
    b = [record(spec(t, "b"), 10.0 + t) for t in range(2)]
    parts = {**{r["key"]: "x@default" for r in a}, **{r["key"]: "y@default" for r in b}}
    folder = tmp_path / "r"
    (folder).mkdir()
    (folder / ref.TRIALS_FILE).write_bytes(gzip.compress(b""))   # an older layout's file
    ref.write_reference(a + b, folder, parts=parts)
    reference = ref.Reference(folder)
    assert [f.name for f in reference.files()] == ["x@default.jsonl.xz", "y@default.jsonl.xz"]
    x_bytes = reference.files()[0].read_bytes()
    manifest = reference.manifest()
    assert {n: f["trials"] for n, f in manifest["files"].items()} == {
        "trials/x@default.jsonl.xz": 3, "trials/y@default.jsonl.xz": 2}
    assert manifest["sha256"] == ref.files_digest(manifest["files"])
    opened: list[str] = []
    real = ref.decompress
    monkeypatch.setattr(ref, "decompress", lambda p: opened.append(p.name) or real(p))
    fresh = ref.Reference(folder)
    assert fresh.status(b[1]["key"]) == "ok"                     # kept: each file read once
    opened.clear()
    assert ref.Reference(folder).get(b[1]["key"])["metrics"]["mse"] == 11.0
    assert opened == ["y@default.jsonl.xz"]                      # y's file only
    b2 = [{**r, "metrics": {"mse": 0.5}} for r in b]
    compressed: list[int] = []
    real_xz = ref.lzma.compress
    monkeypatch.setattr(ref.lzma, "compress",
                        lambda d, **kw: compressed.append(len(d)) or real_xz(d, **kw))
    ref.write_reference(a + b2, folder, parts=parts)
    assert reference.files()[0].read_bytes() == x_bytes          # x untouched, byte for byte
    assert len(compressed) == 1                                  # and not compressed again
    assert ref.Reference(folder).get(b[0]["key"])["metrics"]["mse"] == 0.5
    ref.write_reference(a, folder, parts=parts)                  # y gone: its file too
    assert [f.name for f in ref.Reference(folder).files()] == ["x@default.jsonl.xz"]
    assert ref.Reference(folder).manifest()["sha256"] != manifest["sha256"]


def test_a_status_from_the_reference_parses_no_record_and_a_local_one_wins(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``status`` and ``brief`` answer a reference key from the kept briefs (a plan asks
    them of every trial of a grid): the first reading of a trials file parses each record
    once to keep them; a later one (another command) parses none, until the file changes. A
    record stored here, even a failed or damaged one, is the answer instead; a key neither
    holds is None."""
    monkeypatch.setenv("DPBENCH_CACHE_DIR", str(tmp_path / "cache"))
    specs = [spec(t) for t in range(3)]
    ref.write_reference([{**record(s, 1.0), "cpu_s": 2.5} for s in specs], tmp_path / "ref")
    parsed: list[object] = []
    real = ref.json.loads

    def loads(text: str | bytes, *args: object, **kwargs: object) -> object:
        parsed.append(text)
        return real(text, *args, **kwargs)

    monkeypatch.setattr(ref.json, "loads", loads)

    def reference_parses() -> int:
        return len([p for p in parsed if isinstance(p, bytes)])

    assert ref.Reference(tmp_path / "ref").status(specs[0].key) == "ok"
    assert reference_parses() == 3                  # kept: each record parsed once
    store = ResultStore(tmp_path / "store", ref.Reference(tmp_path / "ref"))
    store.put({**record(specs[1], 2.0), "status": "failed", "error": "planted"})
    damaged = store.path(specs[2].key)
    damaged.parent.mkdir(parents=True, exist_ok=True)
    damaged.write_text("{not json")
    assert [store.status(s.key) for s in specs] == ["ok", "failed", "corrupt"]
    assert store.status("0" * 64) is None
    assert store.brief(specs[0].key) == {"key": specs[0].key, "status": "ok", "cpu_s": 2.5,
                                         "timing": {"fit_s": 0.1}, "origin": ref.REFERENCE}
    assert reference_parses() == 3                  # a later reading parsed none
    assert store.get(specs[0].key)["metrics"]["mse"] == 1.0 and reference_parses() == 4
    ref.write_reference([record(specs[0], 1.0)], tmp_path / "ref")     # the files changed
    assert ref.Reference(tmp_path / "ref").keys() == [specs[0].key]
    assert reference_parses() == 5


def test_coverage_counts_complete_partial_and_empty_grids() -> None:
    """docs/reference.md's block: each grid's trials held / asked and its state."""
    text = ref.coverage_markdown({"trials": 1234, "bytes": 2 * 2**20, "grids": {
        "a@default": {"held": 5, "asked": 5}, "b@paper": {"held": 2, "asked": 9},
        "c@default": {"held": 0, "asked": 12000}}})
    assert text.splitlines()[0] == ("3 grids: 1 complete, 1 partial, 1 with no trial yet; "
                                    "1,234 trials, 2.00 MB.")
    assert "| a | default | 5 / 5 | complete |" in text
    assert "| b | paper | 2 / 9 | partial |" in text
    assert "| c | default | 0 / 12,000 | none yet |" in text


def test_a_compacted_record_keeps_only_the_named_metrics_and_says_so() -> None:
    """A grid too large to ship whole keeps the metrics its figures read; everything else
    in the record (provenance, privacy, timing) stays, and ``metrics_kept`` names them."""
    rec = {"key": "k", "status": "ok", "cpu_s": 1.5, "privacy": {"spent_epsilon": 1.0},
           "metrics": {"est_error": 0.1, "relmse": 0.5, "bias_0": 0.2, "se_0": 0.3}}
    out = ref.compacted(rec, ["relmse", "est_error", "absent"])
    assert out["metrics"] == {"est_error": 0.1, "relmse": 0.5}
    assert out["metrics_kept"] == ["absent", "est_error", "relmse"]
    assert {k: v for k, v in out.items() if k not in ("metrics", "metrics_kept")} == \
        {k: v for k, v in rec.items() if k != "metrics"}
    assert rec["metrics"]["bias_0"] == 0.2                  # the store's record untouched
    # a trial two grids share: whole if either ships it whole, else the union
    assert ref.kept_metrics([["a"], None]) is None
    assert ref.kept_metrics([["b"], ["a", "b"]]) == ["a", "b"]
    assert ref.kept_metrics([]) == []
    text = ref.coverage_markdown({"grids": {"s@default": {"held": 2, "asked": 2,
                                                          "metrics": ["est_error"]}}})
    assert "| s | default | 2 / 2 | complete (metrics kept: est_error) |" in text
