"""Each recorded release's sensitivity, checked on data (issue 36).

Every private method yaml runs on a small dataset D (``N_ROWS`` random rows of its smoke
cell, ``tests/smoke_cells.py``; ``ROWS`` for the few that need more) and on neighbours D' of D
under the relation its class declares (``neighbours``): one row removed or one row of the
domain added (``add_remove``), or one row replaced by a row of the domain
(``replace_one``). Both fits run under ``draws.recording()`` with the same seed, so they
draw the same noise until a noisy choice differs. The two traces are paired draw by draw
while mechanism, label, size, norm and relation agree (a release whose query depends on an
earlier noisy choice names it in its label: BinAgg's bins, a selected clique), and for
every paired draw that carries its exact released statistic (``value``) the test asserts

    ||value(D) - value(D')||  <=  sensitivity * (1 + 1e-9)

in the draw's norm (the exponential mechanism's value is its score vector, norm linf); the
sensitivity is the smaller of the two runs' declarations (under add/remove n is private, so
a declared sensitivity must not grow with it). Every kind of release (label before its
first " (") that D records must be compared on at least ``MIN_COMPARED`` neighbours.

New rows come from the data's domain (``_Domain``): uniform integer codes over ``domain``
encoded as the loader does (discrete data), uniform in the public box ``x_range`` /
``y_range`` (BinAgg), or uniform in a ball of 1.1 ``x_bound`` with a random label (the
GLM data; rows outside the bound test the method's drop / clip rule). Extreme rows join
them: the largest-norm code row of 64 random ones, the box's far corners (they reach
BinAgg's per-bin bounds exactly), and for replace-one on the ball a row moved onto the
sphere ||x|| = x_bound with |y| = y_bound, replaced by one at 120 degrees with the same
label, where Kulkarni et al.'s Lemmas 3.4.1-3.4.2 are tight. For the families instrumented
here (``TIGHT``) the test also asserts that some neighbour reaches 99.9% of the declared
bound, so the rows are strong enough to catch a bound that is too small, and one case
with a halved declared sensitivity must fail (``test_a_halved_sensitivity_is_caught``).

Seeds: data subsample ``SEED_DATA``, new rows ``SEED_ROWS`` (+ a hash of the yaml name),
fits: the (seed, epsilon) pairs of ``FITS`` (seeds 1-3, epsilon 1 and 8 at delta 1e-5,
taken in turn by the neighbours; epsilon 8 grows deeper PrivTrees). Tolerance: relative
1e-9 (``REL_TOL``; float sums of a few hundred rows are exact to ~1e-13).

Which yamls (``test_every_private_yaml_is_checked_or_excused`` keeps the lists whole):

- ``FAST``: bayes (the GLM release; 100 random + 12 extreme neighbours each) and binagg
  (PrivTree's biased counts, bin counts, feature and label sums; 90 random + 12 corner
  neighbours each), run in every test session (~45 s);
- ``SLOW`` (``@pytest.mark.slow``, ``N_SLOW`` neighbours each): one yaml per shared draw
  code path (``SAME_PATH`` names the yamls that share a checked one's), checked on whatever
  draws carry a ``value``. An adaptive method's later statistics depend on its earlier
  noisy releases (AIM's model, MWEM's synthetic distribution), so D and D' see the same
  history only before its first selection: those draws are compared (``_before_adaptive``);
- ``NOT_CHECKED``: the yamls whose privacy does not rest on a traced statistic's
  sensitivity, each with its reason.

Non-private yamls (``approx/*``, ``nondp_logistic``, ``public_logistic``, ``public``,
``original``) draw no noise and are not listed.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from typing import Any
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from numpy.typing import NDArray
from smoke_cells import smoke_cell, view

from dpbench.data.base import TabularData
from dpbench.privacy import draws
from dpbench.privacy.accountant import Accountant
from dpbench.runner.execute import import_object
from dpbench.runner.grid import _merged_params, load_entry
from dpbench.runner.schema import choices

SEED_DATA, SEED_ROWS = 0, 2
#: (seed, epsilon) of the fits, taken in turn by the neighbours (delta = DELTA)
FITS = [(seed, eps) for seed in (1, 2, 3) for eps in (1.0, 8.0)]
DELTA = 1e-5
N_ROWS = 300
#: yamls that need more rows than N_ROWS (Iyengar et al.'s DP-SGD draws batches of B = 1000)
ROWS = {"dpsgd_iyengar": 1200, "dpsgd_iyengar_rdp": 1200}
REL_TOL = 1e-9
MIN_COMPARED = 3

FAST = {**{m: 100 for m in choices("method") if m.startswith("bayesglm_")},
        **{m: 90 for m in choices("method") if m.startswith("binagg")}}
N_SLOW = 12
#: fewer neighbours where one fit costs seconds (GEM trains its generator each round)
SLOW_COUNT = {"gem": 6}
#: the slow tier checks one yaml per shared draw code path; these share a checked one's
#: (same module and mechanism calls, other settings or downstream models)
SAME_PATH = {
    **dict.fromkeys(("aim_mixture_synth", "aim_mixture_synth_logistic", "aim_synth",
                     "aim_synth_logistic", "aim_tabular", "aim_tstr", "aim_tstr_lr", "ddssp",
                     "ddssp_logistic", "ddssp_mixture", "ddssp_mixture_logistic", "ddssp_mst",
                     "ddssp_mst_logistic", "mst_synth_logistic"),
                    "mst_synth (marginals/noise.py's measure, the same 1-way measurements)"),
    "mwem_vanilla": "mwem", "gem_pub": "gem", "gem_pub_reduced": "gem",
    "rap_softmax": "rap", "dpgd_grid_real": "dpgd_grid_sim",
}
NOT_CHECKED = {
    "objpert": "objective perturbation (Chaudhuri et al.): the noise enters the training "
               "objective and the guarantee rests on the loss's gradient and curvature "
               "bounds; no statistic is released with additive noise",
    **dict.fromkeys(("dpsgd_iyengar", "dpsgd_iyengar_rdp", "dpsgd_lin_optimistic",
                     "dpsgd_lin_realistic", "dpsgd_optimistic", "dpsgd_realistic"),
                    "DP-SGD's per-step clipped batch sums are not traced (T steps of "
                    "d values); its sensitivity is the clipping norm, applied in code"),
    "pate": "its student rows are private rows published without noise by design (the "
            "paper's choice, declared as unprotected_rows): replacing one moves every vote; "
            "pate_public is the same mechanism with public student rows",
    "uniform": "the uniform baseline reads no private row (its one recorded step is "
               "0-DP, sensitivity 0, no statistic to compare)",
}
#: release kinds whose declared bound the extreme rows reach (>= 99.9%): the bound is tight
#: and the rows are strong enough to expose one that is too small
TIGHT = {"bayesglm_": ("bayesglm",),
         "binagg": ("privtree", "bin counts", "feature sums / sd", "label sums")}
#: methods whose fit goes on after its last draw (posterior sampling): stopped there
STOP_AT = {"dpbench.methods.bayes.method.NoiseAwareGLM": "dpbench.methods.bayes.sampling.sample"}


class _Released(Exception):
    """Raised in place of the non-private work that follows a method's last draw."""


# -- data and neighbours ------------------------------------------------------------------
def _take(data: TabularData, rows: NDArray) -> TabularData:
    """The given rows of ``data`` (in that order)."""
    frame = None if data.discrete is None else data.discrete.iloc[rows].reset_index(drop=True)
    return replace(data, X=data.X[rows], y=data.y[rows], discrete=frame)


def _stack(a: TabularData, b: TabularData) -> TabularData:
    """The rows of ``a`` followed by those of ``b``."""
    frame = None if a.discrete is None else pd.concat([a.discrete, b.discrete],
                                                      ignore_index=True)
    return replace(a, X=np.vstack([a.X, b.X]), y=np.concatenate([a.y, b.y]), discrete=frame)


def _put(data: TabularData, i: int, row: TabularData) -> TabularData:
    """``data`` with row i replaced by ``row`` (same position)."""
    n = data.n
    return _stack(_stack(_take(data, np.arange(i)), row), _take(data, np.arange(i + 1, n)))


@dataclass
class _Domain:
    """Rows a neighbour may add or put in: random ones and extreme ones."""

    data: TabularData

    @property
    def kind(self) -> str:
        d = self.data
        if d.discrete is not None and d.encoding is not None and d.domain is not None:
            return "codes"
        return "box" if d.x_range is not None else "ball"

    def random(self, rng: np.random.Generator) -> TabularData:
        d = self.data
        if self.kind == "codes":
            frame = pd.DataFrame({a: rng.integers(0, m, 1) for a, m in d.domain.items()})
            X, y = d.encoding.encode(frame)
            return replace(d, X=X, y=y, discrete=frame)
        if self.kind == "box":
            lo, hi = np.asarray(d.x_range, dtype=float).T
            y_lo, y_hi = d.y_range if d.y_range is not None else (-d.y_bound, d.y_bound)
            return replace(d, X=rng.uniform(lo, hi)[None, :], y=rng.uniform(y_lo, y_hi, 1))
        u = rng.standard_normal(d.d)
        x = 1.1 * d.x_bound * rng.uniform() ** (1 / d.d) * u / np.linalg.norm(u)
        labels = np.unique(d.y)
        y = rng.choice(labels) if labels.size <= 2 else rng.integers(0, int(d.y_bound) + 2)
        return replace(d, X=x[None, :], y=np.array([float(y)]))

    def extreme(self, rng: np.random.Generator) -> list[TabularData]:
        """Rows that reach the per-row bounds (largest norm, box corners, sphere)."""
        d = self.data
        if self.kind == "codes":
            rows = [self.random(rng) for _ in range(64)]
            return [max(rows, key=lambda r: float(np.linalg.norm(r.X)) + abs(float(r.y[0])))]
        if self.kind == "box":
            lo, hi = np.asarray(d.x_range, dtype=float).T
            y_lo, y_hi = d.y_range if d.y_range is not None else (-d.y_bound, d.y_bound)
            far = np.where(np.abs(hi) >= np.abs(lo), hi, lo)
            near = np.where(np.abs(hi) >= np.abs(lo), lo, hi)
            y_far = y_hi if abs(y_hi) >= abs(y_lo) else y_lo
            return [replace(d, X=x[None, :], y=np.array([y])) for x, y in
                    ((far, y_far), (near, y_lo if y_far == y_hi else y_hi))]
        u = rng.standard_normal(d.d)
        return [replace(d, X=(d.x_bound * u / np.linalg.norm(u))[None, :],
                        y=np.array([d.y_bound]))]

    def tight_replacement(self, rng: np.random.Generator, i: int
                          ) -> tuple[TabularData, TabularData]:
        """(D with row i on the sphere, D with row i at 120 degrees from it), |y| = y_bound:
        <x, x'> = -R^2 / 2 maximises the GLM statistics' change (Lemmas 3.4.1-3.4.2)."""
        d = self.data
        u, w = np.linalg.qr(rng.standard_normal((d.d, 2)))[0].T
        y = np.array([d.y_bound])
        x = d.x_bound * u
        x2 = d.x_bound * (-0.5 * u + math.sqrt(3) / 2 * w)
        return (_put(d, i, replace(d, X=x[None, :], y=y)),
                _put(d, i, replace(d, X=x2[None, :], y=y)))


def _neighbours(data: TabularData, relation: str, count: int, seed: int
                ) -> Iterator[tuple[str, TabularData, TabularData]]:
    """(description, D, D') pairs: ``count`` random ones, then the extreme ones."""
    rng = np.random.default_rng(seed)
    dom = _Domain(data)
    for k in range(count):
        i = int(rng.integers(data.n))
        if relation == "replace_one":
            yield f"row {i} replaced", data, _put(data, i, dom.random(rng))
        elif k % 2:
            yield f"row {i} removed", data, _take(data, np.delete(np.arange(data.n), i))
        else:
            yield "random row added", data, _stack(data, dom.random(rng))
    for j, row in enumerate(dom.extreme(rng)):
        for k in range(len(FITS)):   # one per fit: a corner may land in a dropped bin
            i = int(rng.integers(data.n))
            if relation == "replace_one":
                yield f"row {i} replaced by extreme row {j}", data, _put(data, i, row)
            else:
                yield f"extreme row {j} added ({k})", data, _stack(data, row)
    if relation == "replace_one" and dom.kind == "ball":
        for _ in range(len(FITS)):
            a, b = dom.tight_replacement(rng, int(rng.integers(data.n)))
            yield "row on the sphere replaced at 120 degrees", a, b


# -- fitting and pairing ---------------------------------------------------------------
@dataclass
class _Method:
    """One method yaml on its (subsampled) smoke data."""

    name: str
    cls: type
    params: dict[str, Any]
    data: TabularData

    @property
    def relation(self) -> str:
        """The relation this configured method declares (its ``relation`` parameter may
        choose another of the class's ``relations``)."""
        return str(self.cls(**self.params).neighbours)

    @classmethod
    def load(cls, name: str) -> _Method:
        me = load_entry("method", name)
        task, dataset = smoke_cell(name)
        de = view(dataset, task)
        split = import_object(de["_target_"])(rng=np.random.default_rng(SEED_DATA),
                                              **_merged_params(de, "smoke"))
        train = split.train
        rows = np.random.default_rng(SEED_DATA).permutation(train.n)[:ROWS.get(name, N_ROWS)]
        return cls(name, import_object(me["_target_"]), _merged_params(me, "smoke"),
                   _take(train, np.sort(rows)))

    def trace(self, data: TabularData, fit: tuple[int, float]) -> list[draws.Draw]:
        """The draws of one fit (seed, epsilon) on ``data`` (stopped after the last draw,
        see STOP_AT)."""
        seed, epsilon = fit
        model = self.cls(**self.params)
        ledger = Accountant(epsilon, DELTA, currency=self.cls.accounting)
        target = STOP_AT.get(f"{self.cls.__module__}.{self.cls.__qualname__}")
        with ExitStack() as stack:
            found = stack.enter_context(draws.recording())
            if target:
                stack.enter_context(mock.patch(target, side_effect=_Released))
            try:
                model.fit(data, ledger, np.random.default_rng(seed))
            except _Released:
                pass
        return found


def _norm(v: NDArray, norm: str) -> float:
    v = np.abs(np.ravel(v))
    if norm == "l1":
        return float(v.sum())
    if norm == "l2":
        return float(np.sqrt(np.sum(v * v)))
    if norm == "linf":
        return float(v.max(initial=0.0))
    raise AssertionError(f"unknown norm {norm!r}")


#: the selections of adaptive methods: what follows one depends on an earlier noisy release
SELECTIONS = ("exponential", "report_noisy_max")


def _before_adaptive(trace: list[draws.Draw]) -> list[draws.Draw]:
    """The draws before the first selection, or only the first draw if it is one (its
    scores then rest on data-independent state alone)."""
    for i, d in enumerate(trace):
        if d.mechanism in SELECTIONS:
            return trace[:max(i, 1)]
    return trace


def _query(d: draws.Draw) -> tuple:
    return d.mechanism, d.label, d.size, d.norm, d.relation


def _kind(d: draws.Draw) -> str:
    return d.label.split(" (")[0]


@dataclass
class _Report:
    """What the neighbours showed: comparisons and worst ratio per kind, violations."""

    compared: dict[str, int] = field(default_factory=dict)
    worst: dict[str, float] = field(default_factory=dict)
    kinds: set[str] = field(default_factory=set)
    violations: list[str] = field(default_factory=list)

    def add(self, how: str, a: list[draws.Draw], b: list[draws.Draw],
            adaptive: bool = False) -> None:
        """Pair the traces of D and D'. ``adaptive``: the method's later statistics depend
        on its earlier noisy releases (a model fitted on them, a selection), so only the
        draws before its first selection, or that selection as the trace's first draw,
        see the same history on D and D' and are compared."""
        a, b = (_before_adaptive(a), _before_adaptive(b)) if adaptive else (a, b)
        self.kinds |= {_kind(x) for x in a if x.value is not None}
        for x, y in zip(a, b, strict=False):
            if _query(x) != _query(y):
                break
            if x.value is None or y.value is None:
                continue
            if np.shape(x.value) != np.shape(y.value):
                self.violations.append(f"{x.label}: value shapes {np.shape(x.value)} vs "
                                       f"{np.shape(y.value)} under one query ({how})")
                continue
            moved = _norm(np.asarray(x.value) - np.asarray(y.value), x.norm)
            bound = min(x.sensitivity, y.sensitivity)
            k = _kind(x)
            self.compared[k] = self.compared.get(k, 0) + 1
            ratio = moved / bound if bound > 0 else (math.inf if moved > 0 else 0.0)
            self.worst[k] = max(self.worst.get(k, 0.0), ratio)
            if moved > bound * (1 + REL_TOL):
                self.violations.append(f"{x.label} ({x.mechanism}, {x.norm}): moved {moved:.6g}"
                                       f" > declared {bound:.6g} (x{ratio:.4f}) when {how}")


def _check(method: _Method, count: int, relation: str | None = None) -> _Report:
    """Fit D and each neighbour D' with the same seed and compare their traces; neighbours
    under ``relation`` (default: the one the method declares)."""
    report = _Report()
    seed_rows = SEED_ROWS + zlib.crc32(method.name.encode()) % 1000
    base: dict[tuple[int, int], tuple[TabularData, list[draws.Draw]]] = {}  # D kept alive
    for k, (how, d, d2) in enumerate(_neighbours(method.data, relation or method.relation,
                                                  count, seed_rows)):
        fit = FITS[k % len(FITS)]
        if (id(d), k % len(FITS)) not in base:
            base[id(d), k % len(FITS)] = d, method.trace(d, fit)
        report.add(f"{how}, seed {fit[0]}, epsilon {fit[1]}", base[id(d), k % len(FITS)][1],
                   method.trace(d2, fit), adaptive=method.name not in FAST)
    return report


def _assert_sound(method: _Method, report: _Report) -> None:
    assert not report.violations, (
        f"{method.name} ({method.relation}): a released statistic moved more than its "
        f"declared sensitivity:\n" + "\n".join(report.violations[:10]))
    short = {k: report.compared.get(k, 0) for k in report.kinds
             if report.compared.get(k, 0) < MIN_COMPARED}
    assert not short, f"{method.name}: kinds compared on too few neighbours: {short}"


# -- the tests ----------------------------------------------------------------------------
def _private() -> list[str]:
    return [m for m in choices("method")
            if import_object(load_entry("method", m)["_target_"]).private]


def test_every_private_yaml_is_checked_or_excused() -> None:
    private = set(_private())
    slow = private - set(FAST) - set(NOT_CHECKED)
    assert set(FAST) <= private and set(NOT_CHECKED) <= private
    assert not set(FAST) & set(NOT_CHECKED)
    assert set(SAME_PATH) <= slow, set(SAME_PATH) - slow
    assert all(NOT_CHECKED.values())


@pytest.mark.parametrize("name", sorted(FAST))
def test_declared_sensitivity_holds_on_data(name: str) -> None:
    method = _Method.load(name)
    report = _check(method, FAST[name])
    _assert_sound(method, report)
    assert report.kinds, f"{name} recorded no draw with a value"
    prefix = next(p for p in TIGHT if name.startswith(p))
    reached = {k: max((r for kind, r in report.worst.items() if kind.startswith(k)),
                      default=0.0) for k in TIGHT[prefix]}
    assert all(r >= 0.999 for r in reached.values()), \
        f"{name}: the extreme rows should reach each declared bound; worst ratios {reached}"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(set(_private()) - set(FAST) - set(NOT_CHECKED)
                                        - set(SAME_PATH)))
def test_declared_sensitivity_holds_on_data_slow(name: str) -> None:
    method = _Method.load(name)
    report = _check(method, SLOW_COUNT.get(name, N_SLOW))
    _assert_sound(method, report)
    assert report.kinds, f"{name} recorded no draw with a value"


@pytest.mark.parametrize("name", ["bayesglm_poisson", "binagg_sqrtd"])
def test_a_halved_sensitivity_is_caught(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A method declaring half its true sensitivity fails the check (Poisson GLM: 10.8 ->
    5.4; BinAgg: every release's bound halved)."""
    record: Callable[..., None] = draws.record

    def halved(*args: Any, sensitivity: float, **kwargs: Any) -> None:
        record(*args, sensitivity=sensitivity / 2, **kwargs)

    monkeypatch.setattr(draws, "record", halved)
    method = _Method.load(name)
    report = _check(method, 10)
    assert report.violations, f"{name}: a halved sensitivity went unnoticed"
    with pytest.raises(AssertionError, match="moved more than its declared sensitivity"):
        _assert_sound(method, report)


def test_marginals_at_the_replace_one_sensitivity_hold_and_are_tight() -> None:
    """The marginal mechanisms' own replace-one analysis (``relation=replace_one``, as an
    arena runs them), on the independent baseline (its fits take milliseconds; AIM's and
    MST's measurements go through the same ``measure`` at the same sensitivity, and their
    draws are audited under replace-one in test_audit.py): on replace-one neighbours every
    released table moves by at most its declared L2 sqrt(2), which is reached (a replaced
    row changes a 1-way marginal in two cells), and the add/remove declaration (L2 1) fails
    there. The selection scores' L1 bound: tests/privacy/test_relations.py."""
    method = _Method.load("independent")
    own = replace(method, params={**method.params, "relation": "replace_one"})
    assert own.relation == "replace_one"
    report = _check(own, N_SLOW)
    _assert_sound(own, report)
    assert report.kinds and max(report.worst.values()) >= 0.999, report.worst
    assert _check(method, 2, relation="replace_one").violations


@pytest.mark.parametrize("name", ["binagg", "binagg_synth"])
def test_recording_changes_no_result(name: str) -> None:
    """A fit under ``draws.recording()`` is bit-identical to one outside it (the trace reads
    the random stream nowhere), and its releases are recorded in the order they are drawn."""
    method = _Method.load(name)
    fits = []
    for recorded in (False, True):
        model = method.cls(**method.params)
        with draws.recording() if recorded else ExitStack() as found:
            model.fit(method.data, Accountant(8.0, DELTA, currency="gdp"),
                      np.random.default_rng(5))
        out = [model.coef_, model.stderr_, *getattr(model, "synthetic_", ())]
        fits.append(np.concatenate([np.ravel(a) for a in out]))
    assert np.array_equal(fits[0], fits[1], equal_nan=True)
    assert [_kind(d) for d in found] == ["privtree", "bin counts", "feature sums / sd",
                                         "label sums"]


def test_glm_release_is_unchanged_by_recording() -> None:
    from dpbench.methods.bayes.release import release

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 3)) / 3, rng.integers(0, 4, 40).astype(float)
    out = []
    for recorded in (False, True):
        with draws.recording() if recorded else ExitStack() as found:
            out.append(release("poisson", X, y, Accountant(1.0, DELTA, currency="gdp"),
                               np.random.default_rng(3)).z)
    assert np.array_equal(out[0], out[1]) and len(found) == 1


#: neighbours of AIM's / MST's first selection (a fit stopped there takes ~0.5 s)
AIM_SELECTION_NEIGHBOURS = 40
#: (module, yaml, kind) of the marginal methods whose selection is checked on data
FIRST_SELECTIONS = [("aim", "aim_tstr", "aim:select:1"), ("mst", "mst_synth", "mst:select:1")]


def _first_selection_only(monkeypatch: pytest.MonkeyPatch, module: str = "aim") -> None:
    """AIM (or MST) with its 1-way measurements replaced by a data-independent vector (so
    the model its first selection scores against is the same on D and D') and stopped after
    that selection: the selection's scores then differ between D and D' by the data alone."""
    import importlib

    aim = importlib.import_module(f"dpbench.methods.marginals.{module}")

    def fixed(value: Any, sigma: float, rng: np.random.Generator, **_: Any) -> NDArray:
        # a constant table, heavy on odd codes and empty on even ones: a replaced row that
        # leaves a cell the model over-fills for one it under-fills moves a distance by 2
        out = np.zeros(np.size(value))
        out[1::2] = 10.0 * N_ROWS      # well above any noise threshold (MST's compression)
        return out

    real = aim.select

    def select_then_stop(*args: Any, **kw: Any) -> int:
        real(*args, **kw)
        raise _Released

    monkeypatch.setattr(aim, "measure", fixed)
    monkeypatch.setattr(aim, "select", select_then_stop)


@pytest.mark.slow
@pytest.mark.parametrize("module, name, kind", FIRST_SELECTIONS)
@pytest.mark.parametrize("relation", ["add_remove", "replace_one"])
def test_aim_selection_scores_hold_their_sensitivity_on_data(
        relation: str, module: str, name: str, kind: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """AIM's and MST's selection (the exponential mechanism's scores, L1 distances of the
    data's marginals to the model's, weighted) under each relation they have an analysis
    for: on neighbours of that relation no score moves by more than the declared
    sensitivity, and some neighbour reaches half of it (the rows are strong enough to
    matter). Declaring the add/remove sensitivity on replace-one neighbours (the factor 2
    dropped) is caught."""
    _first_selection_only(monkeypatch, module)
    method = _Method.load(name)
    own = replace(method, params={**method.params, "relation": relation})
    assert own.relation == relation
    report = _check(own, AIM_SELECTION_NEIGHBOURS)
    assert report.compared.get(kind, 0) >= MIN_COMPARED, report.compared
    _assert_sound(own, report)
    if module == "mst":
        # MST's first pairs, against a product of the fixed 1-ways over a compressed domain,
        # move by at most a third of the bound on these rows: sound, but too weak to expose a
        # dropped factor 2 (not known why; the catalogue has no MST selection entry)
        return
    assert report.worst[kind] >= 0.5, report.worst
    if relation == "replace_one":
        add_remove = replace(method, params={**method.params, "relation": "add_remove"})
        assert _check(add_remove, AIM_SELECTION_NEIGHBOURS, relation="replace_one").violations


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ssp", "adassp", "mean"])
def test_ssp_family_replace_one_sensitivities_hold_on_data(name: str) -> None:
    """SSP's, AdaSSP's and the mean baseline's own replace-one analysis (as an arena runs
    them): on replace-one neighbours (the sphere rows at 120 degrees included) every release
    moves by at most its declared sensitivity, and the add/remove declaration fails there."""
    method = _Method.load(name)
    own = replace(method, params={**method.params, "relation": "replace_one"})
    assert own.relation == "replace_one"
    _assert_sound(own, _check(own, N_SLOW))
    assert _check(method, N_SLOW, relation="replace_one").violations
