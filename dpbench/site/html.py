"""Markdown and templates to HTML: the one place the site's markup is made.

Markdown (the report's tables, the papers' READMEs) goes through markdown-it-py (CommonMark
with tables, raw HTML off); a link that would not resolve inside the site (a path of the
repository) keeps its text only, and an image the Markdown references is copied beside the
page. Pages come from the Jinja2 templates in ``templates/`` (autoescaped), which inline the
stylesheet and the sorting / filtering script so a page needs no other file but its images.
"""

from __future__ import annotations

import functools
import math
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jinja2
from markdown_it import MarkdownIt
from markdown_it.token import Token

TEMPLATES = Path(__file__).with_name("templates")
HEADING = re.compile(r"^(#{1,6})\s+(.*)$")


@functools.lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False}).enable("table")


def internal(href: str) -> bool:
    """Does ``href`` resolve without the repository: a web address or an anchor?"""
    return href.startswith(("http://", "https://", "#", "mailto:"))


def _fix_inline(children: list[Token], source: Path | None, out: Path | None,
                prefix: str) -> list[Token]:
    """Drop the anchors of links into the repository (their text stays); copy each image
    that exists beside ``source`` into ``out``, linked as ``prefix`` + its name (else keep
    its alt text only)."""
    kept: list[Token] = []
    dropping = 0
    for tok in children:
        if tok.type == "link_open" and (dropping or not internal(str(tok.attrGet("href")))):
            dropping += 1
            continue
        if tok.type == "link_close" and dropping:
            dropping -= 1
            continue
        if tok.type == "image":
            src = str(tok.attrGet("src") or "")
            path = (source / src) if source and not internal(src) else None
            if path is not None and out is not None and path.is_file():
                target = out / path.name
                out.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
                tok.attrSet("src", prefix + path.name)
            elif not src.startswith(("http://", "https://")):
                kept.append(Token("text", "", 0, content=tok.content))
                continue
        kept.append(tok)
    return kept


def markdown(text: str, source: Path | None = None, out: Path | None = None,
             prefix: str = "") -> str:
    """``text`` as HTML; tables sortable and scrollable on a narrow screen; images that
    ``text`` references relative to folder ``source`` copied into folder ``out``, which is
    ``prefix`` from the page."""
    md = _markdown()
    tokens = md.parse(text)
    for tok in tokens:
        if tok.type == "inline" and tok.children:
            tok.children = _fix_inline(tok.children, source, out, prefix)
    html = md.renderer.render(tokens, md.options, {})
    return (html.replace("<table>", '<div class="scroll"><table class="sortable">')
            .replace("</table>", "</table></div>"))


def sections(text: str, keep: Callable[[str], bool]) -> str:
    """The Markdown sections of ``text`` (a heading and everything under it up to the next
    heading of its level or above) whose heading text ``keep`` accepts."""
    lines = text.splitlines()
    out: list[str] = []
    level = 0                            # > 0 while inside a kept section of that level
    for line in lines:
        m = HEADING.match(line)
        if m:
            depth = len(m.group(1))
            if level and depth <= level:
                level = 0
            if not level and keep(m.group(2)):
                level = depth
        if level:
            out.append(line)
    return "\n".join(out)


#: an internal tracker reference in a heading, e.g. `` (issue 6)``
ISSUE = re.compile(r"\s*\(issue \d+\)", re.IGNORECASE)


def title_of(readme: Path) -> str:
    """The first heading of a Markdown file (its name without one)."""
    try:
        for line in readme.read_text().splitlines():
            m = HEADING.match(line)
            if m:   # a project's internal issue number is not part of a paper's title
                return ISSUE.sub("", m.group(2)).strip()
    except OSError:
        pass
    return readme.parent.name


def number(x: Any, digits: int = 4) -> str:
    """A table cell for a number: ``digits`` significant digits, ``—`` for none."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return "—" if x is None else str(x)
    return f"{v:.{digits}g}" if math.isfinite(v) else "—"


def sort_value(x: Any) -> str:
    """The exact value a sortable cell sorts by (``repr`` of a float; empty for none)."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return ""
    return repr(v) if math.isfinite(v) else ""


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES),
                             autoescape=jinja2.select_autoescape(["html"]),
                             undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True)
    env.filters.update(number=number, sort_value=sort_value)
    return env


def render(template: str, target: Path, **context: Any) -> Path:
    """Write ``target`` from ``templates/<template>`` with ``context``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(environment().get_template(template).render(**context))
    return target
