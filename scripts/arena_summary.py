"""Write (or check) the arenas' summaries quoted in README.md and docs/arena.md, and what
the reference holds of each grid (docs/reference.md), from the reference results that ship
with dpbench, so every quoted number is the reference's.

    python scripts/arena_summary.py            # rewrite the two blocks
    python scripts/arena_summary.py --check    # exit 1 if either block differs

The boards are the default profile's, built from the shipped reference alone (an empty
local store in front of it): README.md gets the best mean rank per arena, metric and
epsilon (``board_summary.leaders_markdown``), docs/arena.md the primary metric's full
summary (``board_summary.summary_markdown``). Each block sits between
``<!-- arena-summary:<name> -->`` and ``<!-- /arena-summary:<name> -->``.
"""

from __future__ import annotations

import re
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dpbench.report.board_summary import leaders_markdown, summary_markdown  # noqa: E402
from dpbench.report.leaderboard import Board  # noqa: E402
from dpbench.runner.reference import coverage_markdown, shipped  # noqa: E402
from dpbench.runner.schema import choices  # noqa: E402
from dpbench.workspace import Workspace, all_refused, arena_boards, is_arena  # noqa: E402

PROFILE = "default"
FILES = {"readme": ROOT / "README.md", "arena": ROOT / "docs" / "arena.md",
         "coverage": ROOT / "docs" / "reference.md"}


def boards(results_dir: Path) -> tuple[dict[str, list[Board]], list[str]]:
    """Each arena's default-profile boards (primary metric first; [] when the reference
    holds none of its trials) and where and when their trials ran."""
    ws = Workspace([f"results_dir={results_dir}"])
    out: dict[str, list[Board]] = {}
    dates: list[str] = []
    hosts: Counter[str] = Counter()
    commits: Counter[str] = Counter()
    for name in sorted(n for n in choices("experiment") if is_arena(n)):
        g = ws.grid(name, PROFILE)
        if not ws.held(g):
            out[name] = []
            continue
        refused = all_refused(g.cfg, ws.store, g.specs, g.refused)
        out[name] = list(arena_boards(g.cfg, ws.store, g.specs, refused)[0].values())
        for s in g.specs:
            rec = ws.store.get(s.key)
            if rec is not None and rec.get("status") == "ok":
                dates.append(str(rec.get("finished_at", ""))[:10])
                hosts[str(rec.get("cpu") or rec.get("host"))] += 1
                commits[str(rec.get("commit") or "unknown")] += 1
    per_cell = sorted({b[0].header.trials for b in out.values() if b})
    when = per_cell + ([f"{min(dates)} to {max(dates)}"] if dates else []) + \
        [f"{n} on {h}" for h, n in hosts.most_common()] + [commits_text(commits)]
    return out, when


def commits_text(commits: Counter[str]) -> str:
    """Which trees the trials ran from: how many commits, and how many trials came from a
    tree with changes not committed (``-dirty``: its code is not in the history)."""
    dirty = sum(n for c, n in commits.items() if c.endswith("-dirty"))
    return f"{len(commits)} commits, " + (f"{dirty} trials with uncommitted changes" if dirty
                                           else "none with uncommitted changes")


def blocks(results_dir: Path) -> dict[str, str]:
    """The text of each block, by name."""
    found, when = boards(results_dir)
    held = shipped()
    return {"readme": leaders_markdown(found, when),
            "arena": summary_markdown({n: (b[0] if b else None) for n, b in found.items()},
                                      when),
            "coverage": coverage_markdown(held.manifest() if held is not None else {})}


def replaced(text: str, name: str, block: str) -> str:
    """``text`` with the block ``name`` set to ``block`` (its markers must be there)."""
    pattern = re.compile(rf"(<!-- arena-summary:{name} -->\n).*?(<!-- /arena-summary:{name} -->)",
                         re.DOTALL)
    if not pattern.search(text):
        raise SystemExit(f"no <!-- arena-summary:{name} --> block to fill")
    return pattern.sub(lambda m: m.group(1) + block + m.group(2), text)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    with tempfile.TemporaryDirectory() as tmp:
        texts = blocks(Path(tmp))
    differ = []
    for name, path in FILES.items():
        old = path.read_text()
        new = replaced(old, name, texts[name])
        if new != old:
            differ.append(path.name)
            if not check:
                path.write_text(new)
    if check and differ:
        print(f"the arena summaries in {', '.join(differ)} are not the reference's: run "
              "python scripts/arena_summary.py", file=sys.stderr)
        return 1
    print("written: " + (", ".join(differ) or "nothing changed"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
