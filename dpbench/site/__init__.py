"""``dpbench site``: one static folder of HTML pages over everything stored.

``results/site/index.html`` lists the papers (``papers/<paper>/README.md`` gives each its
title), their experiments with the profiles run, claim verdict counts and completeness, and
the arena boards; one page per (experiment, profile) run holds its figures, tables, claims,
per-cell numbers, settings and privacy notes; one page per paper renders its README; one
page per arena board renders ``board.json``. Every page states its provenance, and
``data/trials.{csv,parquet}`` holds every page's trials with ``experiment`` and ``profile``
columns.

The folder needs no network to view (no CDN, font or stylesheet: the CSS and the small
sorting / filtering script are inline) and reads without JavaScript. A page is rebuilt only
when its fingerprint (code commit, composed config, the stat of each of its trial records,
the paper and figure yamls) changes; the index and the data files are always rewritten.

Modules: :mod:`.model` (what a page states, as data, and its fingerprint), :mod:`.html`
(Markdown and templates to HTML), :mod:`.build` (pages, index and data files on disk).
"""
