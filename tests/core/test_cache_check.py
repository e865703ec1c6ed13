"""dpbench/cache_check.py: a damaged entry of JAX's compilation cache is caught, deleted and
written again, in fresh processes sharing one cache folder (as trials do)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dpbench import cache_check, compile_cache

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import json, logging, warnings
from jax import monitoring
hits = []
monitoring.register_event_listener(
    lambda name, **_: hits.append(1) if name == "/jax/compilation_cache/cache_hits" else None)
logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
warnings.simplefilter("always")
from dpbench import compile_cache
import jax, jax.numpy as jnp
compile_cache.configure()
out = jax.jit(lambda x: jnp.sin(x).sum() * 3.0)(jnp.arange(7.0))
print(json.dumps({"out": float(out), "hits": len(hits)}))
"""


def _probe(root: Path) -> tuple[dict, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), compile_cache.ROOT_ENV: str(root),
           compile_cache.SWITCH_ENV: "on"}
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def _entry(root: Path) -> Path:
    (entry,) = (root / "jax").glob("jit__lambda-*-cache")
    return entry


def _flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    start = offset % len(data)
    for i in range(start, min(start + 8, len(data))):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("where", ["start", "middle", "end"])
def test_a_damaged_entry_is_deleted_compiled_and_written_again(tmp_path, where):
    clean, _ = _probe(tmp_path)
    entry = _entry(tmp_path)
    good = entry.read_bytes()
    assert (tmp_path / "jax" / cache_check.SUMS / entry.name.removesuffix("-cache")).exists()
    _flip(entry, {"start": 0, "middle": len(good) // 2, "end": -8}[where])
    bad = entry.read_bytes()
    damaged, err = _probe(tmp_path)
    assert damaged["out"] == clean["out"]
    assert f"{entry} is damaged" in err and "Error reading" not in err, err
    rewritten = entry.read_bytes()                  # compiled and written again, with its digest
    assert rewritten != bad and hashlib.sha256(rewritten).hexdigest() == (
        tmp_path / "jax" / cache_check.SUMS / entry.name.removesuffix("-cache")).read_text()
    after, err = _probe(tmp_path)                   # the next process: a hit, no warning
    assert after["out"] == clean["out"] and after["hits"] >= 1
    assert "damaged" not in err and "Error reading" not in err, err


def test_an_unchecked_damaged_entry_warns_once_then_is_replaced(tmp_path):
    """An entry without a digest (written before the check): JAX cannot read it and warns;
    its compile replaces the entry (JAX alone would keep it), so the next process is quiet."""
    clean, _ = _probe(tmp_path)
    entry = _entry(tmp_path)
    (tmp_path / "jax" / cache_check.SUMS / entry.name.removesuffix("-cache")).unlink()
    _flip(entry, len(entry.read_bytes()) // 2)
    damaged, err = _probe(tmp_path)
    assert damaged["out"] == clean["out"] and "Error reading persistent compilation" in err
    after, err = _probe(tmp_path)
    assert after["out"] == clean["out"] and after["hits"] >= 1
    assert "Error reading" not in err and "damaged" not in err, err


def test_without_the_hook_the_cache_is_left_as_jax_makes_it(monkeypatch):
    from jax._src import compilation_cache as cc

    monkeypatch.delattr(cc, "get_file_cache")
    assert cache_check.install() is False


def test_pruning_an_entry_drops_its_digest(tmp_path):
    sums = tmp_path / cache_check.SUMS
    sums.mkdir()
    for name in ("a", "b"):
        (tmp_path / f"{name}-cache").write_bytes(b"z" * 100)
        (sums / name).write_text("0" * 64)
        os.utime(tmp_path / f"{name}-cache", ns=(10**9 * (name == "b") + 10**9,) * 2)
    assert compile_cache.prune(tmp_path, 150) == 1
    assert sorted(p.name for p in sums.iterdir()) == ["b"]
