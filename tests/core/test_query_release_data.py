"""Query-release paper data (Liu, Vietri & Wu 2021; data/itdp_adult, data/adult_pgm,
conf/dataset/qr/): the authors' fixed 90/10 split, the projections, the paper's data facts
(App. F.6: query counts and how many answers exceed 0.1 / 0.2), one-line errors for tampered
files and for the extracts that cannot ship (ACS, LOANS), and the ACS loader on a local
fixture in the extract's real format."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _data_root import tmp_data_root  # noqa: F401  (fixture used below)
from raw_fixtures import fake_ipums_extract, write_ipums_extract

from dpbench.data.base import Split, capabilities
from dpbench.data.discrete import read_discrete
from dpbench.data.files import DataError
from dpbench.data.queries import QuerySet, domain_cells, resolve_workload
from dpbench.data.query_release import load_query_data
from dpbench.runner.grid import _merged_params, load_entry, task_view

REPO = Path(__file__).resolve().parents[2]
ADULT = ["sex", "income>50K", "race", "relationship", "marital-status", "workclass",
         "occupation", "education-num", "native-country", "capital-gain", "capital-loss",
         "hours-per-week", "age_10"]
REDUCED = ["sex", "income>50K", "race", "marital-status", "occupation", "education-num",
           "age_10"]
# the paper's workload of each dataset (scope 3.1; App. F.6 for ADULT*)
STAR_WORKLOAD = {"number": 64, "seed": 0, "max_cells": "n"}
MISSING = ["qr_acs", "qr_acs_reduced", "qr_acs_pub_pa10", "qr_acs_pub_ca18", "qr_acs_pub_oh18",
           "qr_loans"]


def params(name: str, profile: str = "default") -> dict:
    view = task_view(name, load_entry("dataset", name), "query_release")
    return _merged_params(view, profile)


def load(name: str, seed: int = 0) -> Split:
    return load_query_data(rng=np.random.default_rng(seed), **params(name))


def facts(split: Split, **workload: object) -> tuple[int, int, int, int]:
    """(marginals, queries, answers > 0.1, answers > 0.2) on the private rows."""
    dom = dict(split.train.domain)
    qs = QuerySet.build(dom, resolve_workload(dom, split.train.n, **workload))  # type: ignore[arg-type]
    a = qs.answers(split.train.discrete)
    return qs.n_marginals, qs.n_queries, int((a > 0.1).sum()), int((a > 0.2).sum())


def test_adult_is_the_authors_fixed_90_10_split_in_every_trial() -> None:
    split = load("qr_adult")
    assert (split.train.n, split.test.n) == (43_944, 4_869)      # scope 3.1 / paper Sec. 3
    assert list(split.train.domain) == ADULT and list(split.train.discrete.columns) == ADULT
    # the file's unnamed index column is gone, and the two parts are the file's rows
    frame, _ = read_discrete("itdp_adult", "adult.csv.gz", "adult-domain.json")
    assert len(frame) == 48_813
    both = pd.concat([split.train.discrete, split.test.discrete]).sort_values(ADULT)
    pd.testing.assert_frame_equal(both.reset_index(drop=True),
                                  frame[ADULT].sort_values(ADULT).reset_index(drop=True))
    # the authors' rule: RandomState(0).binomial(1, 0.9), 1 = private, rows in file order
    mask = np.random.RandomState(0).binomial(1, 0.9, size=len(frame)) == 1
    pd.testing.assert_frame_equal(split.train.discrete,
                                  frame.loc[mask, ADULT].reset_index(drop=True))
    # the trial's generator plays no part
    other = load("qr_adult", seed=12345)
    pd.testing.assert_frame_equal(other.train.discrete, split.train.discrete)
    pd.testing.assert_frame_equal(other.test.discrete, split.test.discrete)
    assert {"discrete", "binary_label", "public_rows"} <= capabilities(split.train)
    # the private part carries the public rows for public-data-assisted methods (GEM-Pub)
    pd.testing.assert_frame_equal(split.train.public, split.test.discrete)
    assert split.test.public is None


def test_adult_data_facts() -> None:
    # App. F.6: 334,128 queries, 487 answers above 0.1 and 181 above 0.2 (286 triples)
    assert facts(load("qr_adult")) == (286, 334_128, 487, 181)
    assert domain_cells(load("qr_adult").train.domain) == 731_566_080_000


def test_adult_reduced_data_facts() -> None:
    split = load("qr_adult_reduced")
    assert list(split.train.domain) == REDUCED
    assert (split.train.n, split.test.n) == (43_944, 4_869)
    m, q, _, _ = facts(split)
    assert (m, q) == (35, 14_955)
    assert domain_cells(split.train.domain) == 336_000


def test_adult_star_data_facts() -> None:
    split = load("qr_adult_star")
    assert split.train.n == 48_842 and split.test.n == 0        # every row private
    assert split.train.public is None and "public_rows" not in capabilities(split.train)
    assert len(split.train.domain) == 14
    dom = dict(split.train.domain)
    # 278 triples have at most N cells; 64 of them are drawn with seed 0
    assert len(resolve_workload(dom, split.train.n, max_cells="n")) == 278
    # App. F.6: 458,996 queries, 71 answers above 0.1 and 28 above 0.2
    assert facts(split, **STAR_WORKLOAD) == (64, 458_996, 71, 28)


@pytest.mark.usefixtures("tmp_data_root")      # the data root is tmp_path
def test_a_tampered_file_is_a_one_line_checksum_error(tmp_path: Path) -> None:
    shutil.copytree(REPO / "data" / "itdp_adult", tmp_path / "itdp_adult")
    f = tmp_path / "itdp_adult" / "adult-domain.json"
    f.write_text(f.read_text().replace('"sex": 2', '"sex": 3'))
    with pytest.raises(DataError, match="checksum mismatch.*adult-domain.json") as exc:
        load("qr_adult")
    assert "\n" not in str(exc.value)


def test_bad_projection_and_split_are_one_line_errors() -> None:
    p = params("qr_adult")
    with pytest.raises(ValueError, match=r"attributes \['nope'\] are not in the data; valid: "):
        load_query_data(rng=np.random.default_rng(0), **{**p, "attributes": ["sex", "nope"]})
    with pytest.raises(ValueError, match="target 'income>50K' is not among the attributes"):
        load_query_data(rng=np.random.default_rng(0), **{**p, "attributes": ["sex", "race"]})
    with pytest.raises(ValueError, match="split has unknown key 'frac'"):
        load_query_data(rng=np.random.default_rng(0), **{**p, "split": {"frac": 0.9}})


@pytest.mark.usefixtures("tmp_data_root")      # no extract under the (empty) data root
@pytest.mark.parametrize("name", MISSING)
def test_an_extract_that_cannot_ship_is_refused_in_one_line(name: str, tmp_path: Path) -> None:
    with pytest.raises(DataError) as exc:
        load(name)
    msg = str(exc.value)
    assert "\n" not in msg
    assert msg.startswith(f"dataset {name} needs ")
    p = params(name)
    assert f"put {p['file']} and {p['domain_file']} in {tmp_path / p['dataset_dir']}/" in msg


@pytest.mark.usefixtures("tmp_data_root")      # the data root is tmp_path
def test_acs_extract_in_its_real_format_loads(tmp_path: Path) -> None:
    attrs = params("qr_acs")["attributes"]
    frame, domain = fake_ipums_extract(attrs, n=90, seed=3)
    write_ipums_extract(frame, domain)
    write_ipums_extract(fake_ipums_extract(attrs, n=40, seed=4, domain=domain)[0], domain,
                        "acs_2010_1yr")
    split = load("qr_acs")
    pa = frame[frame["STATE"] == "PA"].reset_index(drop=True)
    assert split.test.n == 0 and list(split.train.domain) == attrs
    pd.testing.assert_frame_equal(split.train.discrete, pa[attrs].astype(np.int64))
    reduced = load("qr_acs_reduced")
    assert list(reduced.train.domain) == params("qr_acs_reduced")["attributes"]
    assert len(reduced.train.domain) == 15 and reduced.train.n == len(pa)
    ca = load("qr_acs_pub_ca18")
    assert ca.train.n == len(pa) and ca.test.n == int((frame["STATE"] == "CA").sum())
    assert load("qr_acs_pub_pa10").test.n > 0
    # the extract is pinned on first use: a later change is a one-line error
    path = tmp_path / "cache" / "itdp_acs" / "acs_2018_1yr.csv"
    path.write_text(path.read_text().replace("PA", "CA", 1))
    with pytest.raises(DataError, match="changed since it was pinned") as exc:
        load("qr_acs")
    assert "\n" not in str(exc.value)


@pytest.mark.usefixtures("tmp_data_root")      # the data root is tmp_path
def test_a_malformed_extract_is_a_one_line_error(tmp_path: Path) -> None:
    attrs = params("qr_loans")["attributes"]
    frame, domain = fake_ipums_extract(attrs, n=30, seed=5)
    out = tmp_path / "cache" / "itdp_loans"
    out.mkdir(parents=True)
    frame.assign(grade=domain["grade"]).to_csv(out / "loans.csv", index=False)  # out of range
    (out / "loans-domain.json").write_text(json.dumps(domain))
    with pytest.raises(DataError, match=r"loans.csv: column 'grade' must hold integer codes "
                                        r"in \[0, \d\)") as exc:
        load("qr_loans")
    assert "\n" not in str(exc.value)
    (out / "loans-domain.json").unlink()
    (out / "loans-domain.json.sha256").unlink()
    (out / "loans-domain.json").write_text("{not json")
    with pytest.raises(DataError, match="is malformed") as exc:
        load("qr_loans")
    assert "\n" not in str(exc.value)
