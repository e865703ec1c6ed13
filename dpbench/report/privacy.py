"""What a report must say about the privacy of the trials behind its numbers.

Three facts a reader cannot see in a metric: the neighbouring relation each method's
guarantee is stated for (add/remove or replace-one: the same epsilon means different
things), any method whose paper's accounting under-states its true cost (the ledger records
the true spend as ``spent_*`` and ``understated = 1``; ``Accountant.charge_mu`` /
``charge_eps_delta(actual=...)``), and any method that releases private rows without noise
(``unprotected_rows`` and the weaker ``delta_any_row``; ``Accountant.declare_unprotected``).
All are read from the results frame (``privacy.*`` columns), so they are stated wherever the
numbers appear: every figure, table and claims file (``render.provenance``; the last two in
red, :func:`alerts`) and the run summary.
"""

from __future__ import annotations

import math

import pandas as pd

RELATION_TEXT = {"add_remove": "add/remove one record", "replace_one": "replace one record"}


def stated_relation(frame: pd.DataFrame) -> pd.Series:
    """The relation each trial's (epsilon, delta) is stated for: the cell's
    (``privacy.relation``, set where the method's own guarantee was converted by group
    privacy) or else the method's own (``privacy.neighbours``)."""
    own = frame.get("privacy.neighbours", pd.Series("not recorded", index=frame.index))
    cell = frame.get("privacy.relation", pd.Series(None, index=frame.index, dtype=object))
    return cell.where(cell.notna(), own).fillna("not recorded").astype(str)


def group_note(frame: pd.DataFrame) -> str | None:
    """Which private methods' cells hold by group privacy from their own relation, or None
    (a non-private reference has no guarantee to convert, though its cell states the
    relation)."""
    if "privacy.group_k" not in frame:
        return None
    conv = frame[frame["privacy.group_k"].fillna(1) > 1]
    if "privacy.private" in conv:
        conv = conv[conv["privacy.private"].fillna(False).astype(bool)]
    if conv.empty:
        return None
    names = sorted({str(x) for x in _family(conv)})
    return (f"by group privacy (k = 2) from their add/remove analysis: {', '.join(names)} "
            "(run at the budget whose group guarantee is the cell's)")


def neighbours_note(frame: pd.DataFrame) -> str | None:
    """``neighbouring relation: add/remove one record (every private method)``, or one
    clause per relation naming its methods; None without private trials."""
    if frame.empty or "privacy.private" not in frame:
        return None
    private = frame[frame["privacy.private"].fillna(False).astype(bool)]
    if private.empty:
        return None
    rel = stated_relation(private)
    by: dict[str, list[str]] = {}
    for label, r in zip(_family(private), rel, strict=True):
        names = by.setdefault(RELATION_TEXT.get(str(r), str(r)), [])
        if label not in names:
            names.append(str(label))
    group = group_note(private)
    tail = f"; {group}" if group else ""
    if len(by) == 1:
        return f"neighbouring relation: {next(iter(by))} (every private method){tail}"
    return "neighbouring relations: " + "; ".join(
        f"{r} ({', '.join(sorted(ms))})" for r, ms in sorted(by.items())) + tail


UNIT_TEXT = {"mu": "mu-GDP", "rho": "rho-zCDP"}


def _unit(frame: pd.DataFrame) -> str:
    """The frame's budget unit (epsilon when not recorded)."""
    if "budget_unit" not in frame or frame["budget_unit"].dropna().empty:
        return "epsilon"
    return str(frame["budget_unit"].dropna().iloc[0])


def budget_note(frame: pd.DataFrame) -> str | None:
    """``budget: mu = 1 (mu-GDP), every trial`` (or ``budget unit: mu (mu-GDP)`` over
    several values) when the budget is not given as epsilon, so a figure whose axes do not
    show it still says what it is; None for an epsilon budget."""
    unit = _unit(frame)
    if frame.empty or unit == "epsilon":
        return None
    values = sorted(frame["epsilon"].dropna().unique())
    if len(values) == 1:
        return f"budget: {unit} = {values[0]:g} ({UNIT_TEXT.get(unit, unit)}), every trial"
    return f"budget unit: {unit} ({UNIT_TEXT.get(unit, unit)})"


def understated_notes(frame: pd.DataFrame) -> list[str]:
    """One sentence per method with trials whose paper's accounting under-states the true
    spend: the largest true spend against its target, in the budget's unit (mu for a mu
    budget, else epsilon), never the two mixed."""
    if frame.empty or "privacy.understated" not in frame:
        return []
    flagged = frame[frame["privacy.understated"].fillna(0).astype(float) > 0]
    out = []
    for label, part in flagged.groupby("method_label", sort=True):
        in_mu = _unit(part) == "mu" and "privacy.mu_spent" in part \
            and part["privacy.mu_spent"].notna().all()
        if in_mu:
            ratio = part["privacy.mu_spent"] / part["epsilon"]
            worst = part.loc[ratio.idxmax()]
            spend = (f"mu {worst['privacy.mu_spent']:.3g} at a target of mu = "
                     f"{worst['epsilon']:g}")
            claimed = worst.get("privacy.claimed_mu_spent", math.nan)
            if math.isfinite(claimed):
                spend += f" (its paper's accounting claims mu {claimed:.3g})"
        else:
            ratio = part["privacy.spent_epsilon"] / part["privacy.target_epsilon"]
            worst = part.loc[ratio.idxmax()]
            spend = (f"eps {worst['privacy.spent_epsilon']:.3g} at a target of eps "
                     f"{worst['privacy.target_epsilon']:.3g}")
            claimed = worst.get("privacy.claimed_spent_epsilon", math.nan)
            if isinstance(claimed, float) and math.isfinite(claimed):
                spend += f" (its paper's accounting claims eps {claimed:.3g})"
        out.append(f"PRIVACY: {label} follows its paper's accounting, which under-states the "
                   f"cost: {len(part)} trial(s) spend more than their target, up to {spend}")
    return out



def _family(frame: pd.DataFrame) -> pd.Series:
    """Each row's method without its sweep point (one alert for all the points of a sweep,
    e.g. of an ensemble's sizes), or its label where the frame has no family column."""
    return frame["method_family"] if "method_family" in frame else frame["method_label"]


def unprotected_notes(frame: pd.DataFrame) -> list[str]:
    """One sentence per method with trials that publish private rows without noise: how
    many rows, and the (eps, delta) a row of the split really gets (the worst trial)."""
    if frame.empty or "privacy.unprotected_rows" not in frame:
        return []
    flagged = frame[frame["privacy.unprotected_rows"].fillna(0).astype(float) > 0]
    out = []
    for label, part in flagged.groupby(_family(flagged), sort=True):
        worst = part.loc[part["privacy.delta_any_row"].astype(float).idxmax()]
        rows = sorted({int(r) for r in part["privacy.unprotected_rows"].astype(float)})
        count = f"{rows[0]}" if len(rows) == 1 else f"{rows[0]}-{rows[-1]}"
        out.append(f"PRIVACY: {label} publishes {count} private training rows without noise "
                   f"(its paper's choice): for a row of the training split the guarantee is "
                   f"only eps {worst['privacy.target_epsilon']:.3g} with delta up to "
                   f"{worst['privacy.delta_any_row']:.2g}, not "
                   f"{worst['privacy.target_delta']:.2g}")
    return out


def unpaid_selection_notes(frame: pd.DataFrame) -> list[str]:
    """One sentence per method whose release is the best of several private runs chosen
    without privacy: its recorded spend covers one run, not the procedure."""
    if frame.empty or "privacy.unpaid_selection_runs" not in frame:
        return []
    flagged = frame[frame["privacy.unpaid_selection_runs"].fillna(0).astype(float) > 0]
    return [f"PRIVACY: {label} releases the best of up to "
            f"{part['privacy.unpaid_selection_runs'].max():.0f} runs on the private data, "
            "chosen without privacy (its paper ignores the tuning cost): the recorded spend "
            "covers one run, the procedure is not differentially private"
            for label, part in flagged.groupby(_family(flagged), sort=True)]


def noiseless_notes(frame: pd.DataFrame) -> list[str]:
    """One sentence per method that stores statistics of its private rows without noise
    (``Method.noiseless_info``): shown as diagnostics, never as a release."""
    if frame.empty or "privacy.noiseless_info" not in frame:
        return []
    flagged = frame[frame["privacy.noiseless_info"].fillna("").astype(str) != ""]
    out = []
    for label, part in flagged.groupby(_family(flagged), sort=True):
        keys = sorted({k for v in part["privacy.noiseless_info"] for k in str(v).split(",")})
        out.append(f"PRIVACY: {label}'s {', '.join(f'info.{k}' for k in keys)} are computed "
                   "without noise from the private training rows (its paper's diagnostic, "
                   "not a private release)")
    return out


def alerts(frame: pd.DataFrame) -> list[str]:
    """Every privacy alert of the frame's trials (under-stated spends, unprotected rows,
    unpaid selections, noiseless diagnostics)."""
    return [*understated_notes(frame), *unprotected_notes(frame),
            *unpaid_selection_notes(frame), *noiseless_notes(frame)]
