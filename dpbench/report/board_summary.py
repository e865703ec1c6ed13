"""The arenas' boards in a few lines: what leads at each epsilon, for the README and
docs/arena.md (``scripts/arena_summary.py`` writes the lines from the shipped reference and
a test keeps the quoted ones equal to what the reference gives).

A line per (arena, epsilon) of the primary metric's board: how many of its tables are
complete, the three best mean ranks over them, the tables with a significant winner (the
confidence set for the best holds it alone and it beats the bar by test: ``rank_table``)
and the Friedman test's p over the tables. A board with no complete table says so; nothing
is ranked from incomplete tables (``rank_table``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dpbench.report.leaderboard import Board, fmt, ranks_methods

#: the summary's columns
COLUMNS = ["arena (metric)", "eps", "tables complete", "best mean ranks",
           "significant winners", "Friedman p"]
#: how many mean ranks a line quotes
TOP = 3


def _winners(board: Board, eps: float) -> str:
    out = []
    for t in board.tables:
        if t.epsilon != eps or not t.winner:
            continue
        row = next(r for r in t.rows if r.method == t.winner)
        out.append(f"{row.method_label} on {t.dataset_label} ({fmt(row.mean)} ± {fmt(row.se)})")
    return "; ".join(out) or "none"


def summary_rows(arena: str, board: Board) -> list[list[str]]:
    """One row per epsilon of ``board`` (:data:`COLUMNS`), ``arena`` naming it."""
    h = board.header
    name = f"{arena} ({h.metric}, {'higher' if h.higher_is_better else 'lower'} is better)"
    rows = []
    for a in board.across:
        at = [t for t in board.tables if t.epsilon == a.epsilon]
        done = sum(map(ranks_methods, at))
        ranks = sorted(zip(a.mean_ranks, a.labels, strict=True))[:TOP] if done else []
        rows.append([name, f"{a.epsilon:g}", f"{done} of {len(at)}",
                     ", ".join(f"{label} {rank:.1f}" for rank, label in ranks) or "-",
                     _winners(board, a.epsilon) if done else "-",
                     "-" if a.p is None else f"{a.p:.2g}"])
    return rows


def leaders_row(arena: str, board: Board) -> list[str]:
    """``arena``, the metric, and per epsilon the method with the best mean rank over the
    complete tables, with on how many of them it is a significant winner (``-``: no
    complete table); epsilons in a row with the same leader share one entry."""
    h = board.header
    found: list[tuple[str, list[str], list[str]]] = []      # leader, eps, wins
    for a in board.across:
        done = [t for t in board.tables if t.epsilon == a.epsilon and ranks_methods(t)]
        if done:
            rank, label = min(zip(a.mean_ranks, a.labels, strict=True))
            method = a.methods[a.labels.index(label)]
            wins = f"{sum(t.winner == method for t in done)}/{len(done)}"
        else:
            label, wins = "-", ""
        if found and found[-1][0] == label:
            found[-1][1].append(f"{a.epsilon:g}")
            found[-1][2].append(wins)
        else:
            found.append((label, [f"{a.epsilon:g}"], [wins]))
    if [label for label, _, _ in found] == ["-"]:
        return [arena, h.metric, "no complete table yet"]
    cells = [f"{', '.join(eps)}: {label}" + (f" (wins {', '.join(wins)})" if label != "-"
                                              else "") for label, eps, wins in found]
    return [arena, f"{h.metric} ({'higher' if h.higher_is_better else 'lower'} is better)",
            "; ".join(cells) or "-"]


def leaders_markdown(boards: Mapping[str, Sequence[Board]], when: Sequence[str]) -> str:
    """The README's answer to "which method should I use?": per arena and metric (each
    arena's boards, the primary first), :func:`leaders_row`."""
    lines = ["| arena | metric | best mean rank per eps (significant wins / tables) |",
             "|---|---|---|"]
    for arena, found in boards.items():
        rows = [leaders_row(arena, b) for b in found] or [[arena, "-",
                                                            "not in the reference yet"]]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
    lines += ["", "Trials: " + ("; ".join(when) if when else "none") + "."]
    return "\n".join(lines) + "\n"


def summary_markdown(boards: Mapping[str, Board | None], when: Sequence[str]) -> str:
    """A Markdown table of :func:`summary_rows` for each arena's primary board (None: no
    trial of it in the reference yet), then a line saying where and when the trials ran."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for arena, board in boards.items():
        rows = summary_rows(arena, board) if board is not None else []
        if not rows:
            rows = [[arena, "-", "0", "not in the reference yet", "-", "-"]]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
    lines += ["", "Trials: " + ("; ".join(when) if when else "none") + "."]
    return "\n".join(lines) + "\n"
