"""Data layer: checksums, encodings, DD-SSP split, the BinAgg DGP."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from dpbench.data.discrete import load_discrete, read_discrete
from dpbench.data.encoding import build_encoding, feature_bound, scalar_levels
from dpbench.data.files import DataError, verified_path
from dpbench.data.splits import shuffle_split
from dpbench.data.synthetic import linear_regression
from dpbench.runner.grid import load_entry

REPO = Path(__file__).resolve().parents[2]


def test_every_vendored_file_matches_its_manifest() -> None:
    manifests = sorted((REPO / "data").glob("*/MANIFEST.json"))
    assert manifests, "no vendored datasets"
    for m in manifests:
        for fname in json.loads(m.read_text())["files"]:
            verified_path(m.parent.name, fname, root=REPO / "data")


def test_corruption_and_absence_are_named(tmp_path: Path) -> None:
    shutil.copytree(REPO / "data" / "ddssp_adult", tmp_path / "ddssp_adult")
    f = tmp_path / "ddssp_adult" / "adult_test.csv"
    f.write_text(f.read_text().replace("0", "1", 1))
    with pytest.raises(DataError, match="checksum mismatch.*adult_test.csv"):
        verified_path("ddssp_adult", "adult_test.csv", root=tmp_path)
    f.unlink()
    with pytest.raises(DataError, match="missing data file"):
        verified_path("ddssp_adult", "adult_test.csv", root=tmp_path)
    with pytest.raises(DataError, match="valid: "):
        verified_path("ddssp_adult", "nope.csv", root=tmp_path)


@pytest.mark.parametrize("damage,message", [
    ("directory", "is not a file (a directory?)"),
    ("manifest not json", "MANIFEST.json is not valid JSON"),
    ("manifest without files", 'MANIFEST.json has no "files" table'),
    ("entry without digest", "has no sha256_uncompressed"),
])
def test_a_damaged_data_folder_is_one_line_naming_the_file(tmp_path: Path, damage: str,
                                                           message: str) -> None:
    shutil.copytree(REPO / "data" / "ddssp_adult", tmp_path / "ddssp_adult")
    folder = tmp_path / "ddssp_adult"
    manifest = folder / "MANIFEST.json"
    if damage == "directory":
        (folder / "adult_test.csv").unlink()
        (folder / "adult_test.csv").mkdir()
    elif damage == "manifest not json":
        manifest.write_text("{not json")
    elif damage == "manifest without files":
        manifest.write_text("{}")
    else:
        data = json.loads(manifest.read_text())
        data["files"]["adult_test.csv"] = {}
        manifest.write_text(json.dumps(data))
    with pytest.raises(DataError, match=re.escape(message)) as exc:
        verified_path("ddssp_adult", "adult_test.csv", root=tmp_path)
    assert "\n" not in str(exc.value) and str(folder) in str(exc.value)


def test_adult_frame_and_domain() -> None:
    frame, domain = read_discrete("ddssp_adult", "adult.csv.gz", "adult-domain.json")
    assert frame.shape == (48_842, 15)  # MANIFEST: 48,842 x 15
    assert list(frame.columns) == list(domain)
    assert (frame.max() < np.array(list(domain.values()))).all()


def test_encoding_is_reduced_one_hot_and_scaled() -> None:
    domain = {"a": 3, "b": 4, "y": 5}
    enc = build_encoding(domain, "y", categorical=["a"])
    import pandas as pd

    frame = pd.DataFrame({"a": [0, 1, 2], "b": [0, 3, 2], "y": [0, 4, 2]})
    X, y = enc.encode(frame)
    # a: first level dropped -> columns a=1, a=2; b: levels 0..3 -> -1, -1/3, 1/3, 1
    np.testing.assert_allclose(X, [[0, 0, -1], [1, 0, 1], [0, 1, 1 / 3]], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(y, [-1, 1, 0])
    assert enc.columns == ("a=1", "a=2", "b")
    assert feature_bound(enc) == pytest.approx(np.sqrt(2))  # Prop. 3.1: sqrt(#attributes)
    np.testing.assert_array_equal(scalar_levels(1), [0.0])


def test_adult_split_and_bounds() -> None:
    cfg = load_entry("dataset", "adult")
    split = load_discrete(rng=np.random.default_rng(0), **cfg["params"])
    assert split.test.n == 1000 and split.train.n == 47_842  # 48,842 - 1,000 (< 50,000 cap)
    norms = np.linalg.norm(split.train.X, axis=1)
    assert norms.max() <= split.train.x_bound + 1e-12
    assert split.train.x_bound == pytest.approx(np.sqrt(14))
    assert np.abs(split.train.y).max() <= split.train.y_bound == 1.0
    capped = load_discrete(rng=np.random.default_rng(0), **{**cfg["params"], "n_train_max": 500})
    assert capped.train.n == 500


def test_noleak_variant_drops_education() -> None:
    cfg = load_entry("dataset", "adult_noleak")
    assert cfg["params"]["drop"] == ["education"] and cfg["params"]["target"] == "education-num"
    split = load_discrete(rng=np.random.default_rng(0), **cfg["params"])
    assert not any(c.startswith("education=") for c in split.train.feature_names)


def test_shuffle_split_is_disjoint_and_seeded() -> None:
    tr, te = shuffle_split(100, 10, None, np.random.default_rng(1))
    assert len(te) == 10 and len(tr) == 90 and not set(tr) & set(te)
    tr2, te2 = shuffle_split(100, 10, None, np.random.default_rng(1))
    assert (tr == tr2).all() and (te == te2).all()
    with pytest.raises(ValueError, match="n_test"):
        shuffle_split(10, 10, None, np.random.default_rng(1))


def test_binagg_dgp_recovers_beta_with_ols() -> None:
    # n = 100,000, noise sd 1: OLS error per coefficient ~ 1/sqrt(n var(x)) ~ 0.01;
    # tolerance 0.05 (seed 3).
    split = linear_regression(rng=np.random.default_rng(3), n=100_000, d=5, n_test=10)
    beta = split.train.truth["beta"]
    assert ((beta >= 1) & (beta <= 2)).all()
    assert (split.train.X >= 0).all() and (split.train.X <= 1).all()
    est = np.linalg.lstsq(split.train.X, split.train.y, rcond=None)[0]
    np.testing.assert_allclose(est, beta, atol=0.05)
    resid = split.train.y - split.train.X @ beta
    assert abs(resid.std() - 1.0) < 0.02
