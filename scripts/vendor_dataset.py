"""Copy a dataset from an offline dataset bundle (--bundle) into data/<name>/.

Writes data/<name>/MANIFEST.json (per file: sha256 of the uncompressed bytes,
the .gz hash, rows, origin) and data/<name>/SOURCE.md (attribution, licence).
Usage: python scripts/vendor_dataset.py NAME [NAME ...] [--bundle DIR] [--note TEXT ...]
(``--note`` adds our own remarks, e.g. on licence status, after the bundle's notes.)
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def vendor(name: str, bundle: Path, extra_notes: tuple[str, ...] = ()) -> Path:
    """Copy one bundle dataset into data/<name>/ and write its MANIFEST.json and SOURCE.md."""
    manifest = json.loads((bundle / "manifest.json").read_text())
    entries = {d["name"]: d for d in manifest["datasets"]}
    if name not in entries:
        raise SystemExit(f"unknown dataset {name!r}; valid: {', '.join(sorted(entries))}")
    entry = entries[name]
    out = ROOT / "data" / name
    out.mkdir(parents=True, exist_ok=True)
    files = {}
    for f in entry["files"]:
        src = bundle / f["path"]
        shutil.copyfile(src, out / src.name)
        files[src.name] = {
            k: f.get(k)
            for k in ("original_name", "sha256_uncompressed", "sha256_gz", "rows", "columns",
                      "header", "delimiter", "origin_repo", "origin_path", "origin_commit")
        }
    meta = {"name": name, "title": entry.get("title"), "source": entry.get("source"),
            "license": entry.get("license"), "status": entry.get("status"), "files": files}
    (out / "MANIFEST.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    lines = [f"# {name}: {entry.get('title', '')}", "", f"Source: {entry.get('source')}", "",
             f"Licence: {entry.get('license')}", "", f"Status: {entry.get('status')}", "",
             "Files (sha256 of the uncompressed bytes; verified by dpbench on every load):", ""]
    for fname, f in files.items():
        lines.append(f"- `{fname}` <- {f['origin_repo']}@{(f['origin_commit'] or '')[:12]}:"
                     f"{f['origin_path']} sha256 `{f['sha256_uncompressed']}`")
    notes = entry.get("notes")
    if notes:
        lines += ["", "Notes: " + (notes if isinstance(notes, str) else " ".join(notes))]
    for note in extra_notes:
        lines += ["", note]
    (out / "SOURCE.md").write_text("\n".join(lines) + "\n")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("names", nargs="+")
    ap.add_argument("--bundle", type=Path, default=ROOT.parent / "shared" / "datasets")
    ap.add_argument("--note", action="append", default=[],
                    help="a paragraph appended to every SOURCE.md written (repeatable)")
    args = ap.parse_args()
    for name in args.names:
        print(vendor(name, args.bundle, tuple(args.note)))


if __name__ == "__main__":
    main()
