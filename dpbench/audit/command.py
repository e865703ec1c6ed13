"""``dpbench audit method=<name> [eps=...] [samples=...] [delta=...] [alpha=...] [seed=...]``.

Runs the audit ``conf/audit/<name>.yaml`` (``method=all``: every one, in turn) and prints
one line per audit: the claimed epsilon, the empirical lower bound, its confidence and the
number of fits. Every argument is checked, and every audit's pair, budget and claim fit
prepared, before the first sample fit; a bad one is one line naming it and the valid
choices. Exit status 1 if some bound is above its claim (a privacy bug shown by the data).
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable, Sequence
from typing import Any

from dpbench.audit import harness
from dpbench.cli import UserError
from dpbench.privacy._checks import check_delta, check_positive
from dpbench.runner.progress import progress_bar

#: argument -> (parser, what is valid)
ARGS: dict[str, tuple[Callable[[str], Any], str]] = {
    "method": (str, "an audit name or all"),
    "eps": (float, "a finite number > 0"),
    "samples": (int, "an integer >= 4"),
    "delta": (float, "a number in (0, 1)"),
    "alpha": (float, "a number in (0, 1)"),
    "seed": (int, "an integer >= 0"),
    "progress": (lambda v: {"true": True, "false": False}[v.lower()], "true or false"),
}


def parse(overrides: Sequence[str]) -> dict[str, Any]:
    """The arguments as values, each checked (a one-line UserError otherwise)."""
    out: dict[str, Any] = {}
    for ov in overrides:
        key, sep, text = ov.partition("=")
        if not sep or key not in ARGS:
            raise UserError(f"unknown argument {ov!r}; valid: "
                            f"{', '.join(f'{k}=...' for k in ARGS)}")
        convert, valid = ARGS[key]
        try:
            out[key] = convert(text)
        except (ValueError, KeyError):
            raise UserError(f"{key}={text!r} is invalid: it must be {valid}") from None
    if "method" not in out:
        raise UserError(f"audit needs method=<name>; valid: {', '.join(harness.audit_names())}, "
                        "all")
    try:
        if "eps" in out:
            check_positive(out["eps"], "eps")
        if "delta" in out:
            check_delta(out["delta"])
    except ValueError as exc:
        raise UserError(str(exc)) from None
    for key, ok in (("samples", lambda v: v >= 4), ("alpha", lambda v: 0 < v < 1),
                    ("seed", lambda v: v >= 0)):
        if key in out and not ok(out[key]):
            raise UserError(f"{key}={out[key]!r} is invalid: it must be {ARGS[key][1]}")
    return out


def names(method: str) -> list[str]:
    """The audits ``method=`` names."""
    valid = harness.audit_names()
    if method == "all":
        return valid
    if method not in valid:
        raise UserError(harness.unknown_audit(method))
    return [method]


def audit(args: argparse.Namespace) -> int:
    """``dpbench audit``."""
    return cmd_audit(args.overrides)


def cmd_audit(overrides: Sequence[str]) -> int:
    """Parse, prepare every audit (budget, pair, claim), then run each with a progress bar."""
    args = parse(overrides)
    seed, alpha = args.get("seed", 0), args.get("alpha", 0.05)
    plans = []
    for name in names(args["method"]):
        spec = harness.load_audit(name)
        eps, delta = args.get("eps", spec.epsilon), args.get("delta", spec.delta)
        try:
            prep = harness.prepare(spec, eps, delta, seed)
        except ValueError as exc:
            raise UserError(f"audit {name!r} at eps={eps:g}, delta={delta:g}: {exc}") from None
        plans.append((prep, eps, delta, args.get("samples", spec.samples)))
    violated = False
    for prep, eps, delta, samples in plans:
        with progress_bar(disable=not args.get("progress", True)) as bar:
            task = bar.add_task(f"audit {prep.spec.name}", total=2 * samples, status="")
            result = harness.run(prep, epsilon=eps, delta=delta, samples=samples, alpha=alpha,
                                 seed=seed, advance=functools.partial(bar.advance, task))
        print(result.line(), flush=True)
        violated |= result.violated
    return 1 if violated else 0

