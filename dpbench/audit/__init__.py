"""Empirical privacy audits: a mechanism run many times on a worst-case pair of neighbouring
datasets, and a lower bound on its epsilon from a scalar of its public output
(``dpbench audit``; the statistics in :mod:`dpbench.privacy.lower_bound`, the per-mechanism
settings as data in ``conf/audit/``)."""
