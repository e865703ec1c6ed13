"""The README is a front door and the docs hold the rest: every relative link and image in
README.md and docs/*.md points at a file of the repository, and the README stays short.

Links to web pages (``http(s):``, ``mailto:``) and to an anchor of the same page are not
checked; an anchor after a path (``page.md#section``) is stripped, only the file must exist.
Code (fenced blocks and inline spans) is not Markdown and is skipped.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
PAGES = [README, *sorted((REPO / "docs").glob("*.md"))]
README_MAX_LINES = 300
#: long table rows evade a line count: words too (the README of 2026-11-28 had 3,287 before
#: its reference material moved to docs/, and 2,381 after)
README_MAX_WORDS = 2500

#: ``[text](target)`` and ``![alt](target)``; the target may be ``<...>`` and carry a title
INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+[^)]*)?\)")
#: ``[label]: target`` reference definitions
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)", re.MULTILINE)
#: ``src="..."`` / ``href="..."`` of inline HTML
HTML = re.compile(r"""\b(?:src|href)\s*=\s*["']([^"']+)["']""")
FENCE = re.compile(r"^ {0,3}(```|~~~).*?^ {0,3}\1[^\n]*$", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|//|#)", re.IGNORECASE)


def prose(text: str) -> str:
    """``text`` without fenced code blocks and inline code spans."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def targets(page: Path) -> list[str]:
    """Every link and image target written in ``page``, in order."""
    text = prose(page.read_text(encoding="utf-8"))
    found = [m.group(1) for pattern in (INLINE, REFERENCE, HTML) for m in pattern.finditer(text)]
    return [t[1:-1] if t.startswith("<") and t.endswith(">") else t for t in found]


def local_path(target: str) -> str | None:
    """The repository path a target names (anchor and query dropped), or None for a link to
    the web, to an e-mail address or to an anchor of the same page."""
    if EXTERNAL.match(target):
        return None
    path = unquote(target.split("#", 1)[0].split("?", 1)[0])
    return path or None


def broken_links(page: Path) -> list[str]:
    """``target`` for each relative link or image of ``page`` whose file does not exist."""
    out = []
    for target in targets(page):
        path = local_path(target)
        if path is None:
            continue
        resolved = (page.parent / path).resolve()
        if not resolved.is_relative_to(REPO) or not resolved.exists():
            out.append(target)
    return out


def test_the_checker_reads_links_images_and_references(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "See [a](a.md#part), ![img](img/x.png \"title\"), [web](https://example.org),\n"
        "[mail](mailto:x@example.org), [here](#top) and [ref][r].\n\n"
        "[r]: <docs/b c.md>\n\n"
        "`[not](in-code.md)`\n\n```\n[not](in-fence.md)\n```\n", encoding="utf-8")
    assert targets(page) == ["a.md#part", "img/x.png", "https://example.org",
                             "mailto:x@example.org", "#top", "docs/b c.md"]
    assert [local_path(t) for t in targets(page)] == ["a.md", "img/x.png", None, None, None,
                                                      "docs/b c.md"]


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(REPO).as_posix() for p in PAGES])
def test_every_relative_link_resolves(page: Path) -> None:
    broken = broken_links(page)
    assert not broken, (f"{page.relative_to(REPO)} links to files that do not exist: "
                        + ", ".join(broken))


def test_the_readme_links_the_docs_and_the_site_screenshots() -> None:
    linked = {local_path(t) for t in targets(README)}
    for doc in ("docs/config.md", "docs/papers.md", "docs/arena.md", "docs/reliability.md",
                "docs/privacy.md", "docs/data.md", "docs/architecture.md", "docs/speed.md",
                "docs/img/site-index.png", "docs/img/site-experiment.png"):
        assert doc in linked, f"README.md does not link {doc}"


def test_the_readme_is_a_front_door() -> None:
    text = README.read_text(encoding="utf-8")
    n, words = len(text.splitlines()), len(text.split())
    assert n <= README_MAX_LINES, (f"README.md has {n} lines (at most {README_MAX_LINES}): "
                                   "move reference material to docs/")
    assert words <= README_MAX_WORDS, (f"README.md has {words} words (at most "
                                       f"{README_MAX_WORDS}): move reference material to docs/")


#: the developers' reading material, which users do not have: docs cite papers by section
PRIVATE_SOURCES = re.compile(r"(?:\.\./)?shared/(?:papers|datasets|DESIGN|ARENA)|NOTES\.md")


def test_no_page_cites_files_users_do_not_have() -> None:
    pages = [README, *sorted((REPO / "docs").rglob("*.md")),
             *sorted((REPO / "papers").rglob("*.md")), *sorted((REPO / "data").rglob("*.md"))]
    cited = [f"{p.relative_to(REPO)}: {m.group(0)}" for p in pages
             for m in PRIVATE_SOURCES.finditer(p.read_text(encoding="utf-8"))]
    assert not cited, "pages cite files users do not have: " + "; ".join(cited)
