"""``dpbench site`` on a real smoke run: the pages' numbers are the stored trials' numbers,
every claim appears with its verdict, nothing is loaded from the network, every link
resolves, and only changed pages are rebuilt.

The module's site is built once from 12 smoke trials of linreg_adult (the data-independent
methods; the AIM cells stay unrun, so the page must say it is incomplete) and a toy arena
outside the repository (``DPBENCH_PATH``) whose records are fabricated through the real
store.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import numpy as np
import pandas as pd
import pytest
from conftest import REPO, run_cli, stored_records

SMOKE = ["experiment=linreg_adult", "profile=smoke", "methods=[public,ssp,adassp]",
         "runner.progress=false"]
PAGE = "linreg_adult-smoke"


class Parsed(HTMLParser):
    """Every tag with its attributes, and the rows (cells' text and attributes) of every
    table, of one page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.tables: list[dict] = []
        self._cell: dict | None = None
        self._row: dict | None = None
        self._stack: list[dict] = []
        self.style = ""
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = {k: v or "" for k, v in attrs}
        self.tags.append((tag, a))
        if tag == "table":
            self._stack.append({"attrs": a, "head": [], "rows": []})
        elif tag == "tr" and self._stack:
            self._row = {"attrs": a, "cells": []}
        elif tag in ("td", "th") and self._row is not None:
            self._cell = {"tag": tag, "attrs": a, "text": ""}
        elif tag == "style":
            self._in_style = True

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._cell["text"] = " ".join(self._cell["text"].split())
            self._row["cells"].append(self._cell)
            self._cell = None
        elif tag == "tr" and self._row is not None and self._stack:
            t = self._stack[-1]
            if all(c["tag"] == "th" for c in self._row["cells"]) and not t["head"]:
                t["head"] = [c["text"] for c in self._row["cells"]]
            else:
                t["rows"].append(self._row)
            self._row = None
        elif tag == "table" and self._stack:
            self.tables.append(self._stack.pop())
        elif tag == "style":
            self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell["text"] += data
        if self._in_style:
            self.style += data


def parse(path: Path) -> Parsed:
    p = Parsed()
    p.feed(path.read_text())
    return p


ARENA_YAML = """\
# @package _global_
# A toy arena: three regression methods on Adult.
experiment:
  name: toy_arena
  task: regression
  arena: true
  relation: replace_one
  baselines: [ssp]
  references: [public]
datasets: [adult]
methods: [public, ssp, adassp]
epsilons: [0.3, 0.7]       # none of linreg_adult's: no trial is shared
trials: 3
"""
LEVEL = {"public": 0.1, "ssp": 1.0, "adassp": 0.5}
ARENA_PAGE = "toy_arena-smoke"


def mse(method: str, eps: float, trial: int) -> float:
    """The toy arena's stored mse of a trial."""
    return LEVEL[method] / eps + 0.01 * trial * (1 + len(method))


def toy_arena(root: Path, results: Path) -> list:
    """A tiny arena experiment under ``root`` (for ``DPBENCH_PATH``) whose smoke grid's
    records are written through the real store (fabricated, no trial runs); its specs."""
    from dpbench import workspace

    (root / "conf" / "experiment").mkdir(parents=True)
    (root / "conf" / "experiment" / "toy_arena.yaml").write_text(ARENA_YAML)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DPBENCH_PATH", str(root))
        cfg = workspace.compose_config(["experiment=toy_arena", "profile=smoke",
                                  f"results_dir={results}"])
        specs = workspace.grid(cfg)
    store = workspace.store_of(cfg)
    for s in specs:
        store.put({"key": s.key, "status": "ok", "spec": s.to_dict(),
                   "metrics": {"mse": mse(s.method, s.epsilon, s.trial)},
                   "privacy": {"target_delta": 1e-5, "target_epsilon": s.epsilon,
                               "private": s.method != "public", "neighbours": "replace_one"},
                   "timing": {"fit_s": 0.1 * (1 + len(s.method))}, "peak_rss_mb": 100.0,
                   "versions": {"numpy": "2.0.0"}, "commit": "abc", "host": "vm",
                   "finished_at": "2026-11-26T10:00:00+00:00"})
    store.mark_run("toy_arena", "smoke", len(specs))
    return specs


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], list]:
    """The results folder with its site, the environment that finds the toy arena, and the
    toy arena's specs."""
    base = tmp_path_factory.mktemp("site")
    results = base / "results"
    run_cli("run", *SMOKE, f"results_dir={results}", "runner.n_jobs=2", check=True)
    specs = toy_arena(base / "root", results)
    env = {"DPBENCH_PATH": str(base / "root")}
    out = run_cli("site", f"results_dir={results}", "runner.progress=false", env=env,
                  check=True)
    # linreg_adult as written, its ad-hoc grid (SMOKE narrows the methods), the toy arena
    assert "3 page(s), 3 rebuilt" in out.stdout, out.stdout
    return results, env, specs


@pytest.fixture(scope="module")
def site(built: tuple[Path, dict[str, str], list]) -> Path:
    return built[0]


def pages(site: Path) -> list[Path]:
    return sorted((site / "site").rglob("*.html"))


def test_index_links_the_run_and_lists_every_experiment(site: Path) -> None:
    from dpbench.runner.schema import choices

    index = site / "site" / "index.html"
    p = parse(index)
    hrefs = [a["href"] for t, a in p.tags if t == "a" and "href" in a]
    assert f"{PAGE}/index.html" in hrefs
    text = index.read_text()
    for name in choices("experiment"):
        assert f">{name}<" in text or f">{name}</a>" in text, name
    for paper in (REPO / "papers").iterdir():
        if paper.is_dir():
            assert f"papers/{paper.name}.html" in hrefs
            assert (site / "site" / "papers" / f"{paper.name}.html").is_file()
    # the page is incomplete (the AIM cells were not run) and the index says so
    table, row = next((t, r) for t in p.tables for r in t["rows"]
                      if r["cells"] and r["cells"][0]["text"] == "linreg_adult")
    assert row["cells"][table["head"].index("complete")]["text"].startswith("no"), row


def test_every_cell_number_is_the_stored_trials_mean_and_se(site: Path) -> None:
    records = [r for r in stored_records(site).values()
               if r["status"] == "ok" and r.get("commit") != "abc"]   # the run's, not the toy's
    assert len(records) == 12
    want: dict[tuple[str, str, float, str], list[float]] = {}
    for r in records:
        spec = r["spec"]
        for metric, value in r["metrics"].items():
            if isinstance(value, int | float):
                cell = (spec["dataset"], spec["method"], float(spec["epsilon"]), metric)
                want.setdefault(cell, []).append(float(value))
    table = next(t for t in parse(site / "site" / PAGE / "index.html").tables
                 if t["attrs"].get("id") == "cells-table")
    assert table["head"][:6] == ["dataset", "method", "epsilon", "metric", "mean", "s.e."]
    seen = set()
    for row in table["rows"]:
        a, cells = row["attrs"], row["cells"]
        eps = float(cells[2]["attrs"]["data-sort"])
        values = want[(a["data-dataset"], a["data-method"], eps, a["data-metric"])]
        mean = float(np.mean(values))
        se = float(np.std(values, ddof=1) / math.sqrt(len(values)))
        assert float(cells[4]["attrs"]["data-sort"]) == pytest.approx(mean, rel=1e-12)
        assert float(cells[5]["attrs"]["data-sort"]) == pytest.approx(se, rel=1e-9)
        assert cells[4]["text"] == f"{mean:.4g}" and int(cells[6]["text"]) == len(values)
        seen.add((a["data-dataset"], a["data-method"], eps, a["data-metric"]))
    unseen = set(want) - seen
    assert not unseen, unseen      # every stored (cell, metric) is on the page


def test_every_claim_appears_with_its_verdict(site: Path) -> None:
    folder = site / "site" / PAGE
    claims = json.loads((folder / "claims.json").read_text())
    assert claims, "linreg_adult has claims"
    table = next(t for t in parse(folder / "index.html").tables
                 if t["head"][:2] == ["verdict", "claim"])
    rows = [[c["text"] for c in r["cells"]] for r in table["rows"]]
    assert len(rows) == len(claims)
    for c in claims:
        assert [c["status"], c["claim"], str(c["dataset"])] in [r[:3] for r in rows], c
    assert {r[0] for r in rows} <= {"PASS", "FAIL", "SKIP"}


def test_no_page_loads_anything_from_the_network_and_every_link_resolves(site: Path) -> None:
    for page in pages(site):
        p = parse(page)
        assert "http" not in p.style and "@import" not in p.style, page
        for tag, a in p.tags:
            if tag == "link":
                raise AssertionError(f"{page}: <link {a}> (stylesheets are inline)")
            for attr in ("src", "href"):
                url = a.get(attr)
                if not url or url.startswith("#") or (tag == "a" and url.startswith("http")):
                    continue                  # anchors, and citations the reader may follow
                assert not urlparse(url).scheme and not url.startswith("//"), (page, tag, url)
                target = (page.parent / unquote(url.split("#")[0])).resolve()
                assert target.exists(), (page, url)
            if tag == "img":
                assert a.get("alt"), (page, a)


def test_the_data_files_hold_every_trial_with_experiment_and_profile(built) -> None:
    site, _, specs = built
    frame = pd.read_parquet(site / "site" / "data" / "trials.parquet")
    assert list(frame.columns[:2]) == ["experiment", "profile"]
    assert set(frame["experiment"]) == {"linreg_adult", "toy_arena"}
    assert set(frame["profile"]) == {"smoke"}
    ok = {k for k, r in stored_records(site).items() if r["status"] == "ok"}
    assert set(frame["key"]) == ok and len(frame) == len(ok) == 12 + len(specs)
    assert len(pd.read_csv(site / "site" / "data" / "trials.csv")) == len(frame)


def test_only_a_page_whose_trials_changed_is_rebuilt(built) -> None:
    site, env, specs = built
    again = run_cli("site", f"results_dir={site}", "runner.progress=false", env=env,
                    check=True)
    assert "3 page(s), 0 rebuilt, 3 unchanged" in again.stdout, again.stdout
    own = [site / "site" / f for f in ("index.html", "data/trials.csv", "data/trials.parquet")]
    before = [f.stat().st_mtime_ns for f in own]
    toy = {s.key for s in specs}
    record = next(p for p in (site / "store" / "trials").glob("*/*.json") if p.stem not in toy)
    st = record.stat()
    os.utime(record, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    changed = run_cli("site", f"results_dir={site}", "runner.progress=false", env=env,
                      check=True)
    # the trial is on linreg_adult's page and on its ad-hoc page: both, not the arena's
    assert "3 page(s), 2 rebuilt, 1 unchanged" in changed.stdout, changed.stdout
    # the index and the data files: kept while no page changed, written again when one did
    assert [f.stat().st_mtime_ns for f in own] != before
    kept = [f.stat().st_mtime_ns for f in own]
    run_cli("site", f"results_dir={site}", "runner.progress=false", env=env, check=True)
    assert [f.stat().st_mtime_ns for f in own] == kept


def test_bad_input_is_one_line_before_any_work(site: Path) -> None:
    before = sorted(p.name for p in (site / "site").iterdir())
    out = run_cli("site", f"results_dir={site}", "experiment=linreg_adlt")
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "linreg_adlt" in out.stderr and "linreg_adult" in out.stderr
    assert sorted(p.name for p in (site / "site").iterdir()) == before


def test_arena_page_numbers_are_the_stored_trials(built) -> None:
    site, _, specs = built
    folder = site / "site" / ARENA_PAGE
    page = parse(folder / "index.html")
    boards = [t for t in page.tables if "board" in t["attrs"].get("class", "")]
    assert sorted(float(t["attrs"]["data-epsilon"]) for t in boards) == [0.3, 0.7]
    for table in boards:
        eps = float(table["attrs"]["data-epsilon"])
        col = next(j for j, h in enumerate(table["head"]) if h.startswith("mse"))
        for row in table["rows"]:
            method = row["attrs"]["data-method"]
            values = [mse(method, eps, s.trial) for s in specs
                      if s.method == method and s.epsilon == eps]
            got = float(row["cells"][col]["attrs"]["data-sort"])
            assert got == pytest.approx(float(np.mean(values)), rel=1e-12), (method, eps)
            se = float(np.std(values, ddof=1) / math.sqrt(len(values)))
            assert row["cells"][col]["text"] == f"{np.mean(values):.4g} ± {se:.2g}"
    ranked = {r["attrs"]["data-method"]: r["cells"][0]["text"] for r in boards[0]["rows"]}
    assert set(ranked) == set(LEVEL)
    assert ranked["adassp"].startswith("1") and ranked["ssp"] == "—"   # the bar is not ranked
    for name in ("pareto-adult.png", "pareto-adult.pdf", "mean_ranks.png", "board.json"):
        assert (folder / name).is_file(), name
    index = (site / "site" / "index.html").read_text()
    assert f'href="{ARENA_PAGE}/index.html"' in index
    assert "A toy arena: three regression methods on Adult." in index


# --- in a real browser (headless Chromium, scripts/browser/install.sh) --------------------------

CHROMEDRIVER = Path("/usr/bin/chromedriver")
#: where the screenshots go (the README's come from here): $DPBENCH_SCREENSHOTS, else tmp
SCREENSHOTS_ENV = "DPBENCH_SCREENSHOTS"


@pytest.fixture(scope="module")
def browser():
    """Debian's headless Chromium through its own WebDriver; fails (never skips) without
    them, as the SLURM tests do without their cluster."""
    chromium = shutil.which("chromium")
    if chromium is None or not CHROMEDRIVER.exists():
        pytest.fail("no headless Chromium: run `bash scripts/browser/install.sh` as root "
                    "(`make test` does)", pytrace=False)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--no-first-run", "--disable-extensions"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=opts)
    driver.set_window_size(1280, 1000)
    yield driver
    driver.quit()


def page_types(site: Path) -> dict[str, Path]:
    root = site / "site"
    return {"index": root / "index.html", "paper": root / "papers" / "ddssp.html",
            "experiment": root / PAGE / "index.html", "arena": root / ARENA_PAGE / "index.html"}


def load(driver, path: Path) -> list[dict]:
    """Open ``path``; the browser's console messages of that load."""
    driver.get_log("browser")                     # drop earlier pages' messages
    driver.get(path.as_uri())
    return driver.get_log("browser")


@pytest.mark.browser
def test_every_page_loads_clean_in_chromium(site: Path, browser, tmp_path: Path) -> None:
    shots = Path(os.environ.get(SCREENSHOTS_ENV) or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    types = {v: k for k, v in page_types(site).items()}
    for page in pages(site):
        messages = load(browser, page)
        errors = [m for m in messages if m["level"] == "SEVERE"]
        assert not errors, (page, errors)
        # wait (up to 10 s) for every image to finish loading or fail, so an image
        # still being decoded on a loaded machine is not counted as broken
        broken = browser.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "const imgs = Array.from(document.images);"
            "const settle = i => i.complete ? Promise.resolve() : new Promise(r => {"
            "  i.addEventListener('load', r); i.addEventListener('error', r); });"
            "const late = new Promise(r => setTimeout(r, 10000));"
            "Promise.race([Promise.all(imgs.map(settle)), late]).then(() => done("
            "  imgs.filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src)));")
        assert not broken, (page, broken)
        loaded = browser.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name)")
        assert all(u.startswith("file://") for u in loaded), (page, loaded)
        for href in browser.execute_script(
                "return Array.from(document.links).map(a => a.href)"):
            if href.startswith("file://"):
                assert Path(unquote(urlparse(href).path)).exists(), (page, href)
        if page in types:
            browser.save_screenshot(str(shots / f"site-{types[page]}.png"))
    assert {f"site-{t}.png" for t in page_types(site)} <= {p.name for p in shots.iterdir()}


def column(driver, table: str, index: int) -> list[float]:
    return driver.execute_script(
        f"return Array.from(document.querySelectorAll('{table} tbody tr')).map("
        f"r => parseFloat(r.cells[{index}].getAttribute('data-sort')))")


@pytest.mark.browser
def test_a_table_sorts_when_its_header_is_clicked(site: Path, browser) -> None:
    from selenium.webdriver.common.by import By

    load(browser, page_types(site)["experiment"])
    head = browser.find_elements(By.CSS_SELECTOR, "#cells-table thead th")
    mean = next(i for i, th in enumerate(head) if th.text.strip().startswith("mean"))
    before = column(browser, "#cells-table", mean)
    assert before != sorted(before), "the table must start out of mean order for the test"
    head[mean].click()
    up = column(browser, "#cells-table", mean)
    assert up == sorted(before) and head[mean].get_attribute("aria-sort") == "ascending"
    head[mean].click()
    assert column(browser, "#cells-table", mean) == sorted(before, reverse=True)
    # the filter box hides the rows without its text
    box = browser.find_element(
        By.XPATH, "//div[table[@id='cells-table']]/preceding-sibling::input[1]")
    box.send_keys("AdaSSP")
    shown = browser.execute_script(
        "return Array.from(document.querySelectorAll('#cells-table tbody tr'))"
        ".filter(r => !r.hidden).map(r => r.cells[1].textContent)")
    assert shown and all("AdaSSP" in s for s in shown), shown


@pytest.mark.browser
def test_pages_fit_a_phone_screen(site: Path, browser) -> None:
    browser.set_window_size(390, 844)
    pages = {**page_types(site),
             **{f"paper {p.stem}": p for p in sorted((site / "site" / "papers").glob("*.html"))}}
    try:
        for kind, page in pages.items():
            load(browser, page)
            wide = browser.execute_script(
                "return [document.documentElement.scrollWidth, window.innerWidth]")
            assert wide[0] <= wide[1] + 1, (kind, wide)   # wide tables scroll in their box
    finally:
        browser.set_window_size(1280, 1000)
