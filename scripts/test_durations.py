"""The slowest tests and test modules of the last ``pytest`` run (tests/conftest.py keeps
every test's setup + call + teardown time in ``.pytest_cache/v/dpbench/durations``).

    python scripts/test_durations.py [--top 30]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

CACHE = Path(__file__).resolve().parents[1] / ".pytest_cache" / "v" / "dpbench" / "durations"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=30, help="how many tests and modules to list")
    parser.add_argument("--file", type=Path, default=CACHE, help="a durations file")
    args = parser.parse_args()
    if not args.file.exists():
        raise SystemExit(f"no durations at {args.file}: run pytest first")
    times: dict[str, float] = json.loads(args.file.read_text())
    total = sum(times.values())
    modules: dict[str, float] = defaultdict(float)
    for node, seconds in times.items():
        modules[node.split("::")[0]] += seconds
    print(f"{len(times)} tests, {total / 60:.1f} worker-minutes in all")
    for title, table in (("tests", times), ("modules", modules)):
        print(f"\nslowest {title}:")
        for name, seconds in sorted(table.items(), key=lambda kv: -kv[1])[:args.top]:
            print(f"{seconds:8.1f} s  {100 * seconds / total:5.1f}%  {name}")


if __name__ == "__main__":
    main()
