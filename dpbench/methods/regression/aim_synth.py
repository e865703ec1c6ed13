"""AIM-Synth / MST-Synth (the DD-SSP paper, Sec. 3.6): fit on synthetic rows from the release.

The same private marginal release as DD-SSP (one fit per trial cell through
the artifact cache) is sampled with Private-PGM's randomised-rounding sampler
(free post-processing, drawn from this method's generator), the synthetic
records are encoded like the real ones, and an ordinary non-private model is
fitted: OLS without intercept (linear) or unpenalised logistic regression
without intercept (scikit-learn L-BFGS, labels as given by the encoding), or
``default_logistic``: scikit-learn's default logistic regression with an intercept
(``dpbench/estimators.py``; the excess-risk paper's model, App. D.2).
``synth_rows`` is the number of rows (None: the release's noisy record count).
``model: none`` fits nothing: the method is then scored only through its synthetic records
(``Method.tasks_scored``: every task that scores records, which get every attribute's codes).
"""

from __future__ import annotations

from typing import Self

import numpy as np

from dpbench.data.base import TabularData
from dpbench.estimators import logistic_coef
from dpbench.methods.outputs import LinearFit, SyntheticTable
from dpbench.methods.regression._marginal import MODELS, MarginalMethod
from dpbench.privacy.accountant import Accountant


class AIMSynth(MarginalMethod):
    """Synthetic-data regression from an AIM (or MST) release; see the module docstring."""

    produces = (LinearFit, SyntheticTable)   # so it serves every task that scores records
    models = (*MODELS, "none", "default_logistic")

    def __init__(self, model: str = "linear", mechanism: str = "aim",
                 workload: str = "all_pairs", synth_rows: int | None = None,
                 **mechanism_params: object) -> None:
        super().__init__(model=model, mechanism=mechanism, workload=workload,
                         **mechanism_params)
        if synth_rows is not None and int(synth_rows) < 1:
            raise ValueError(f"synth_rows={synth_rows} must be >= 1 or None")
        self.params["synth_rows"] = synth_rows

    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        released = self._release(data, accountant, rng)
        rows = self.params["synth_rows"] or max(1, int(round(released.total)))
        synth = released.sample(rows, rng)  # not privacy noise: rows from the model
        X, y = data.encoding.encode(synth)
        self.synthetic_ = (X, y)    # the synthetic records (BinAgg Table 3 scores them)
        self.synthetic_records_ = synth
        if self.params["model"] == "none":
            self.coef_ = np.zeros(X.shape[1])
        elif self.params["model"] == "linear":
            self.coef_ = np.linalg.lstsq(X, y, rcond=None)[0]
        elif self.params["model"] == "default_logistic":
            top = np.max(np.asarray(data.encoding.target_values, dtype=float))
            self.coef_, self.intercept_ = logistic_coef(X, (np.asarray(y) == top).astype(int))
        elif np.unique(y).size < 2:
            self.coef_ = np.zeros(X.shape[1])       # one class only: no direction to learn
        else:
            # C=inf: no penalty (the authors' penalty=None, deprecated in scikit-learn 1.8;
            # the same fit, bit for bit); scikit-learn imported here: the class is also
            # imported by commands that only plan
            from sklearn.linear_model import LogisticRegression

            clf = LogisticRegression(C=np.inf, fit_intercept=False, max_iter=1000)
            self.coef_ = clf.fit(X, y).coef_.ravel()
        self._info["synth_rows"] = int(rows)
        return self
