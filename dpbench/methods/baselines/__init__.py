"""Baselines every arena board shows beside the papers' methods: records drawn uniformly over
the domain (``uniform``), from private independent 1-way marginals (``independent``), the
private majority class (``majority``) and the private mean of the label (``mean``)."""
