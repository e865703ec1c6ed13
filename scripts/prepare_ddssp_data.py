"""Prepare the DD-SSP datasets that cannot be vendored (raw data from their public sources).

Usage: python scripts/prepare_ddssp_data.py NAME [NAME ...] [--download]
NAME is a dataset yaml (acs_income, acs_public_coverage, fire, taxi). Without --download
the raw files must already be where the error message says; the prepared tables go to
data/cache/<name>/ with sha256 manifests and are then used offline.
"""

from __future__ import annotations

import argparse

import numpy as np

from dpbench.data.files import DataError
from dpbench.runner.execute import import_object
from dpbench.runner.grid import load_entry

PREPARABLE = ("acs_income", "acs_public_coverage", "fire", "taxi")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("names", nargs="+", choices=PREPARABLE)
    ap.add_argument("--download", action="store_true", help="fetch missing raw files")
    args = ap.parse_args()
    for name in args.names:
        entry = load_entry("dataset", name)
        params = {**entry["params"], "download": args.download}
        try:
            split = import_object(entry["_target_"])(rng=np.random.default_rng(0), **params)
        except DataError as exc:
            raise SystemExit(f"prepare_ddssp_data: {exc}") from None
        print(f"{name}: ready ({split.train.n} train / {split.test.n} test rows, "
              f"d = {split.train.d})")


if __name__ == "__main__":
    main()
