"""dpbench/program_store.py: exported programs are keyed by everything that defines them.

The cross-process reuse and bit-identity on AIM fits are in test_compile_cache.py; here,
in one process, what makes two calls share a program and what keeps them apart.
"""

from __future__ import annotations

import functools
import importlib
import sys
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

from dpbench import compile_cache, program_store


def _affine(scale: float, x: jnp.ndarray, y: dict[str, jnp.ndarray]) -> jnp.ndarray:
    return scale * x + y["b"]


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv(compile_cache.ROOT_ENV, str(tmp_path))
    monkeypatch.delenv(compile_cache.SWITCH_ENV, raising=False)
    monkeypatch.setattr(program_store, "_loaded", {})
    monkeypatch.setattr(program_store, "stats", {"exported": 0, "loaded": 0})
    return tmp_path / "jax-export"


def _call(scale: float, x: np.ndarray, b: np.ndarray) -> np.ndarray:
    fn = functools.partial(_affine, scale)
    return np.asarray(program_store.call(fn, (x, {"b": b}), static=repr(scale)))


def test_equal_descriptions_share_one_program_and_others_do_not(store):
    x, b = np.arange(3.0), np.ones(3)
    np.testing.assert_array_equal(_call(2.0, x, b), 2.0 * x + b)
    np.testing.assert_array_equal(_call(2.0, x + 1, b), 2.0 * (x + 1) + b)   # same program
    assert program_store.stats["exported"] == 1 and len(list(store.iterdir())) == 1
    np.testing.assert_array_equal(_call(3.0, x, b), 3.0 * x + b)             # static differs
    np.testing.assert_array_equal(_call(2.0, np.arange(4.0), np.ones(4)), 2.0 * np.arange(4.0) + 1)
    assert program_store.stats["exported"] == 3 and len(list(store.iterdir())) == 3


def test_a_new_process_state_loads_instead_of_exporting(store, monkeypatch):
    x, b = np.arange(3.0), np.ones(3)
    first = _call(2.0, x, b)
    monkeypatch.setattr(program_store, "_loaded", {})          # as a fresh interpreter
    second = _call(2.0, x, b)
    assert program_store.stats == {"exported": 1, "loaded": 1}
    np.testing.assert_array_equal(first, second)


def test_functions_without_a_stable_description_stay_in_memory(store):
    out = program_store.call(lambda x: x + 1, (np.zeros(2),), static="")
    np.testing.assert_array_equal(np.asarray(out), np.ones(2))
    assert program_store.stats["exported"] == 1 and not store.exists()


def test_switched_off_cache_writes_nothing(store, monkeypatch):
    monkeypatch.setenv(compile_cache.SWITCH_ENV, "off")
    _call(2.0, np.arange(3.0), np.ones(3))
    assert program_store.stats["exported"] == 1 and not store.exists()


def test_the_code_fingerprint_follows_the_source(tmp_path, monkeypatch):
    pkg = tmp_path / "fp_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("A = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    try:
        before = program_store.code_fingerprint(__name__, ("fp_pkg",))
        (pkg / "__init__.py").write_text("A = 2\n")
        program_store.code_fingerprint.cache_clear()
        assert program_store.code_fingerprint(__name__, ("fp_pkg",)) != before
    finally:
        program_store.code_fingerprint.cache_clear()
        sys.modules.pop("fp_pkg", None)


def test_a_program_that_cannot_be_exported_still_runs(store, monkeypatch):
    def refuse(*_: object) -> None:
        raise ValueError("cannot export")

    monkeypatch.setattr(program_store, "_export", refuse)
    np.testing.assert_array_equal(_call(2.0, np.arange(3.0), np.ones(3)), 2.0 * np.arange(3.0) + 1)
    np.testing.assert_array_equal(_call(2.0, np.ones(3), np.ones(3)), np.full(3, 3.0))
    assert not store.exists()


# --- damaged files: checked before use, deleted, traced again ----------------------------------

def _stored_file(store: Path) -> Path:
    files = [p for p in store.iterdir() if not p.name.startswith(".")]
    assert len(files) == 1, files
    return files[0]


def _flip(path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    offset %= len(data)
    for i in range(offset, min(offset + 8, len(data))):        # 8 flipped bytes, as in the issue
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("where", ["header", "digest", "payload start", "middle", "last byte"])
def test_a_damaged_program_file_is_deleted_traced_again_and_rewritten(store, caplog, where):
    x, b = np.arange(3.0), np.ones(3)
    clean = _call(2.0, x, b)
    path = _stored_file(store)
    good = path.read_bytes()
    head = len(program_store._TAG)
    offset = {"header": 0, "digest": head + 4, "payload start": head + 32,
              "middle": len(good) // 2, "last byte": -1}[where]
    _flip(path, offset)
    assert path.read_bytes() != good
    program_store.forget()                                      # as a later process
    with caplog.at_level("WARNING", logger=program_store.__name__):
        again = _call(2.0, x, b)
    np.testing.assert_array_equal(again, clean)                 # the call goes on, same result
    assert program_store.stats == {"exported": 2, "loaded": 0}
    assert [r for r in caplog.records if str(path) in r.getMessage()], caplog.text
    assert path.read_bytes()[:head] == program_store._TAG       # written again, sealed
    caplog.clear()
    program_store.forget()                                      # the next process: loads it,
    with caplog.at_level("WARNING", logger=program_store.__name__):
        np.testing.assert_array_equal(_call(2.0, x, b), clean)
    assert program_store.stats == {"exported": 2, "loaded": 1} and not caplog.records


def test_a_file_of_the_old_unsealed_format_is_replaced(store):
    import pickle

    x, b = np.arange(3.0), np.ones(3)
    clean = _call(2.0, x, b)
    path = _stored_file(store)
    path.write_bytes(pickle.dumps(("anything", None)))            # FORMAT 1: a bare pickle
    program_store.forget()
    np.testing.assert_array_equal(_call(2.0, x, b), clean)
    assert program_store.stats["exported"] == 2 and path.read_bytes().startswith(
        program_store._TAG)


def test_a_sealed_program_that_fails_at_its_first_call_is_traced_again(store, caplog):
    """The seal holds but the program does not fit the call (here another program's, of
    another shape, under this key): the first call fails inside the store's error handling,
    the file goes, and the call is traced again."""
    x, b = np.arange(3.0), np.ones(3)
    clean = _call(2.0, x, b)
    path = _stored_file(store)
    _call(2.0, np.arange(4.0), np.ones(4))                      # a second program, 4 wide
    other = next(p for p in store.iterdir() if p != path)
    path.write_bytes(other.read_bytes())                        # sealed, but the wrong one
    program_store.forget()
    with caplog.at_level("WARNING", logger=program_store.__name__):
        np.testing.assert_array_equal(_call(2.0, x, b), clean)
    assert program_store.stats["loaded"] == 0 and program_store.stats["exported"] == 3
    assert str(path) in caplog.text
    program_store.forget()
    np.testing.assert_array_equal(_call(2.0, x, b), clean)
    assert program_store.stats["loaded"] == 1
