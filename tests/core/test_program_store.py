"""dpbench/program_store.py: exported programs are keyed by everything that defines them.

The cross-process reuse and bit-identity on AIM fits are in test_compile_cache.py; here,
in one process, what makes two calls share a program and what keeps them apart.
"""

from __future__ import annotations

import functools
import importlib
import sys

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
