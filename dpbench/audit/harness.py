"""An audit: fit a method yaml N times on each of two neighbouring datasets and bound its eps.

An audit yaml (``conf/audit/<name>.yaml``, the name its method yaml's unless ``method:``
says otherwise) is data only, the choices a privacy auditor makes for one mechanism:

```yaml
method: mean                     # conf/method/<name>.yaml (default: this file's stem)
params: {}                       # over the method yaml's (default profile) params
epsilon: 1.0                     # the claim audited by default (``eps=`` on the command line)
delta: 1.0e-5
samples: 2000                    # fits on each dataset
data:                            # D: numeric rows ...
  rows: [{x: [0.0], y: -1.0, count: 1000}]
  x_bound: 1.0                   # public bounds (and x_range / y_range for box methods)
  y_bound: 1.0
  # ... or integer codes: domain: {a: 2, y: 2}, target: y, rows: [{codes: {a: 0, y: 1}}],
  # encoding: {scheme: raw}, public: [{codes: ...}] (public rows)
neighbour: {add: {x: [0.0], y: 1.0}}        # or {replace: {index: 0, x: ..., y: ...}}
observable: {output: LinearFit, field: intercept}   # or field: coef, index: 0;
                                 # {output: SyntheticTable, rows: true}; {info: <key>}
thresholds: [0.0]                # optional: tests fixed in advance (else chosen on half)
```

``base: <other audit>`` takes the other's keys (a method audited with another's pair).

The pair must be of the relation the method declares (``neighbours``): ``add`` for
add/remove, ``replace`` for replace-one; anything else is refused, since a pair outside the
relation may legitimately show more than the claim. Every fit runs under a fresh ledger
``Accountant(eps, delta, currency=<the method's>)`` with a fresh seed (``SeedSequence(seed)``
spawned), and the observable is read from what the method publishes (``output`` kinds, or
its ``info()``, stored with every trial), never from its privacy trace. The claim is the
ledger's ``spent_epsilon`` of a separate fit on D at the audited eps.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpbench.data.base import TabularData
from dpbench.data.encoding import build_encoding, feature_bound
from dpbench.methods.outputs import OUTPUT_KINDS
from dpbench.privacy.accountant import Accountant, validate_budget
from dpbench.privacy.lower_bound import LowerBound, epsilon_lower_bound
from dpbench.runner.execute import import_object
from dpbench.runner.grid import _merged_params, load_entry
from dpbench.runner.schema import ConfigError, choices, did_you_mean

GROUP = "audit"
KEYS = ("method", "params", "epsilon", "delta", "samples", "data", "neighbour", "observable",
        "thresholds")
REQUIRED = ("data", "neighbour", "observable")
#: which neighbour form each relation's pairs take
PAIR_FORM = {"add_remove": "add", "replace_one": "replace"}
OUTPUTS = {k.__name__: k for k in OUTPUT_KINDS}


@dataclass(frozen=True)
class AuditSpec:
    """One audit yaml, checked (module docstring)."""

    name: str
    method: str
    params: dict[str, Any]
    epsilon: float
    delta: float
    samples: int
    data: dict[str, Any]
    neighbour: dict[str, Any]
    observable: dict[str, Any]
    thresholds: tuple[float, ...] | None


@dataclass(frozen=True)
class AuditResult:
    """What one audit found: the claim and the empirical lower bound."""

    name: str
    method: str
    relation: str
    currency: str
    #: the ledger's spent_epsilon at the audited (eps, delta): what the method claims
    claimed: float
    delta: float
    bound: LowerBound
    #: the target the sample fits ran at (= the audited eps unless a planted bug is simulated)
    spent_target: float
    #: wall seconds of the sample fits
    seconds: float

    @property
    def violated(self) -> bool:
        """True if the data prove the method spends more than it claims."""
        return self.bound.epsilon > self.claimed

    def line(self) -> str:
        b = self.bound
        verdict = ("ABOVE THE CLAIM: the method spends more than its ledger records"
                   if self.violated else "below the claim")
        return (f"{self.name}: claimed eps {self.claimed:.4g} (delta {self.delta:.3g}, "
                f"{self.currency}, {self.relation}); lower bound {b.epsilon:.4g} at "
                f"{b.confidence:.0%} confidence from {b.samples} fits per dataset (test: "
                f"score > {b.threshold:.4g}, FPR <= {b.fpr_upper:.3g}, FNR <= "
                f"{b.fnr_upper:.3g} on {b.tested}): {verdict} ({self.seconds:.0f} s)")


def audit_names() -> list[str]:
    """The audits ``conf/audit/`` defines."""
    return choices(GROUP)


def load_audit(name: str) -> AuditSpec:
    """The audit yaml ``name``, checked; a one-line ConfigError names what is wrong."""
    entry = load_entry(GROUP, name)
    unknown = sorted(set(entry) - set(KEYS))
    if unknown:
        raise ConfigError(f"audit {name!r}: unknown key {unknown[0]!r}; valid: {', '.join(KEYS)}")
    missing = [k for k in REQUIRED if k not in entry]
    if missing:
        raise ConfigError(f"audit {name!r}: {missing[0]!r} missing; needed: {', '.join(REQUIRED)}")
    if len(entry["neighbour"]) != 1 or next(iter(entry["neighbour"])) not in PAIR_FORM.values():
        raise ConfigError(f"audit {name!r}: neighbour must be one of "
                          f"{', '.join(PAIR_FORM.values())}, got {entry['neighbour']!r}")
    method = entry.get("method", name)
    me = load_entry("method", method)
    params = {**_merged_params(me, "default"), **(entry.get("params") or {})}
    thresholds = entry.get("thresholds")
    spec = AuditSpec(name=name, method=method, params=params,
                     epsilon=float(entry.get("epsilon", 1.0)),
                     delta=float(entry.get("delta", 1e-5)),
                     samples=int(entry.get("samples", 1000)), data=dict(entry["data"]),
                     neighbour=dict(entry["neighbour"]), observable=dict(entry["observable"]),
                     thresholds=None if thresholds is None else tuple(map(float, thresholds)))
    check_observable(spec)
    return spec


def check_observable(spec: AuditSpec) -> None:
    """Refuse an observable the harness cannot read."""
    obs = spec.observable
    if "info" in obs:
        return
    if obs.get("output") not in OUTPUTS:
        raise ConfigError(f"audit {spec.name!r}: observable output {obs.get('output')!r} "
                          f"unknown; valid: {', '.join(OUTPUTS)} (or info: <key>)")
    if not obs.get("rows") and "field" not in obs:
        raise ConfigError(f"audit {spec.name!r}: the observable needs a field (or rows: true)")


# -- the pair of datasets -------------------------------------------------------------

def _expand(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [r for r in rows for _ in range(int(r.get("count", 1)))]


def build_data(data: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> TabularData:
    """A dataset of ``rows`` (already expanded) with the public facts of ``data``."""
    if "domain" in data:
        domain = {a: int(m) for a, m in data["domain"].items()}
        enc = build_encoding(domain, data["target"], **(data.get("encoding") or {}))

        def codes(rs: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
            return pd.DataFrame([r["codes"] for r in rs], columns=list(domain), dtype=int)

        frame = codes(rows)
        X, y = enc.encode(frame)
        public = codes(_expand(data["public"])) if data.get("public") else None
        return TabularData(X=X, y=y, x_bound=feature_bound(enc),
                           y_bound=float(np.max(np.abs(enc.target_values))),
                           feature_names=enc.columns, target=enc.target, discrete=frame,
                           domain=domain, encoding=enc, public=public)
    X = np.array([r["x"] for r in rows], dtype=float)
    y = np.array([r["y"] for r in rows], dtype=float)
    x_range = data.get("x_range")
    y_range = data.get("y_range")
    return TabularData(X=X, y=y, x_bound=float(data["x_bound"]), y_bound=float(data["y_bound"]),
                       feature_names=tuple(f"x{j}" for j in range(X.shape[1])), target="y",
                       x_range=None if x_range is None else np.array(x_range, dtype=float),
                       y_range=None if y_range is None else tuple(map(float, y_range)))


def neighbours_of(spec: AuditSpec, relation: str) -> tuple[TabularData, TabularData]:
    """(D, D'): the yaml's rows and that set with one row added or replaced, refused unless
    the pair is of ``relation``."""
    (form, change), = spec.neighbour.items()
    if form != PAIR_FORM.get(relation):
        raise ConfigError(f"audit {spec.name!r}: a {form!r} pair is not a neighbour under "
                          f"{relation} (the method's relation); valid: "
                          f"{PAIR_FORM.get(relation)}")
    rows = _expand(spec.data["rows"])
    if form == "add":
        other = [*rows, change]
    else:
        i = int(change["index"])
        if not 0 <= i < len(rows):
            raise ConfigError(f"audit {spec.name!r}: replace index {i} outside the "
                              f"{len(rows)} rows")
        other = [*rows[:i], change, *rows[i + 1:]]
    return build_data(spec.data, rows), build_data(spec.data, other)


def observe(model: Any, observable: Mapping[str, Any]) -> float:
    """The observable's value on a fitted model: read from its published output or info."""
    if "info" in observable:
        return float(model.info()[observable["info"]])
    out = model.output(OUTPUTS[observable["output"]])
    if observable.get("rows"):
        return float(len(out.y))
    value = np.asarray(getattr(out, observable["field"]), dtype=float)
    return float(value[int(observable["index"])] if "index" in observable else value)


# -- running it ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Prepared:
    """An audit ready to run: the method, the pair, the claim (checked before any sample)."""

    spec: AuditSpec
    make: Callable[[], Any]
    pair: tuple[TabularData, TabularData]
    relation: str
    currency: str
    claimed: float


def prepare(spec: AuditSpec, epsilon: float, delta: float, seed: int = 0) -> Prepared:
    """Check the budget and the pair, and fit once on D at (epsilon, delta) for the claim.

    Bad input raises a one-line ValueError (ConfigError) before the sample fits start."""
    validate_budget(epsilon, delta)
    cls = import_object(load_entry("method", spec.method)["_target_"])

    def make() -> Any:
        return cls(**spec.params)

    model = make()
    relation, currency = model.neighbours, model.accounting
    pair = neighbours_of(spec, relation)
    for data in pair:
        model.check_data(data)
    ledger = Accountant(epsilon, delta, currency=currency)
    model.check_budget(ledger)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 1 << 30]))
    make().fit(pair[0], ledger, rng)
    claimed = float(ledger.summary()["spent_epsilon"])
    return Prepared(spec, make, pair, relation, currency, claimed)


def run(prep: Prepared, *, epsilon: float, delta: float, samples: int, alpha: float = 0.05,
        seed: int = 0, spend: float | None = None,
        advance: Callable[[], None] | None = None) -> AuditResult:
    """``samples`` fits on each dataset of the pair and the lower bound at 1 - alpha.

    ``spend`` (tests): the target the sample fits run at, to simulate a method that spends
    more than the claim made at ``epsilon`` (a planted bug); default ``epsilon``."""
    if not (isinstance(samples, int) and samples >= 4):
        raise ValueError(f"samples={samples!r} must be an integer >= 4")
    target = epsilon if spend is None else spend
    seeds = np.random.SeedSequence(seed).spawn(2 * samples)
    start = time.perf_counter()
    scores = np.empty((2, samples))
    for i in range(samples):
        for side in (0, 1):
            ledger = Accountant(target, delta, currency=prep.currency)
            model = prep.make().fit(prep.pair[side], ledger,
                                    np.random.default_rng(seeds[2 * i + side]))
            scores[side, i] = observe(model, prep.spec.observable)
            if advance is not None:
                advance()
    bound = epsilon_lower_bound(scores[0], scores[1], delta=delta, alpha=alpha,
                                thresholds=prep.spec.thresholds)
    return AuditResult(name=prep.spec.name, method=prep.spec.method, relation=prep.relation,
                       currency=prep.currency, claimed=prep.claimed, delta=delta, bound=bound,
                       spent_target=target, seconds=time.perf_counter() - start)


def audit(name: str, *, epsilon: float | None = None, delta: float | None = None,
          samples: int | None = None, alpha: float = 0.05, seed: int = 0,
          spend_factor: float = 1.0) -> AuditResult:
    """The audit ``name`` at its yaml's defaults unless given (Python callers and tests;
    ``spend_factor``: the sample fits run at that multiple of the audited eps)."""
    spec = load_audit(name)
    eps = spec.epsilon if epsilon is None else epsilon
    dl = spec.delta if delta is None else delta
    prep = prepare(spec, eps, dl, seed)
    return run(prep, epsilon=eps, delta=dl, samples=spec.samples if samples is None else samples,
               alpha=alpha, seed=seed, spend=eps * spend_factor)


def unknown_audit(name: str) -> str:
    """The one-line message for an audit name ``conf/audit/`` does not define."""
    valid = audit_names()
    return f"unknown method {name!r} for audit{did_you_mean(name, valid)}; valid: " \
           f"{', '.join(valid)}, all"

