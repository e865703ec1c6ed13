"""PATE (Papernot et al. 2016) as the excess-risk paper runs it (Zhou et al. 2024, App. D.2,
and the authors' ``PATE_learning.py``), for binary logistic regression.

1. ``student: private`` (default, the paper's choice): ``n_student`` (T_q = 100) rows of the
   training data, drawn at random, become the student's "public, unlabelled" rows: their
   features are NOT protected (the paper says so), only the remaining rows are. The
   authors' code draws them (and the teachers' rows) from the full table, test rows
   included; here both come from the trial's training split, as the paper's text says.
   For a row of the training split the guarantee is therefore only
   (eps, delta + T_q / n): it is published with probability T_q / n. The ledger declares
   it (``Accountant.declare_unprotected``), so every record carries ``unprotected_rows``
   and ``delta_any_row`` and every report says so in red.
   ``student: public`` (our correction, ``pate_public``): the student rows are the data's
   public rows (``TabularData.public``, e.g. ``n_public`` rows that the loader sets aside
   outside the protected training split); every training row teaches, none is released.
2. The other rows are shuffled and cut into ``n_teachers`` disjoint parts of
   floor(rows / n_teachers) rows (the code's ``partition_indice``; the < n_teachers rows
   left over are unused). Each teacher is scikit-learn's default logistic regression (L2,
   C = 1, intercept, lbfgs) with max_iter = 10000, as the code. A part holding one class
   only (sklearn refuses to fit it) gives a teacher that votes that class for every row: the
   limit of a logistic fit on such data.
3. Query i (one per student row) releases argmax_c (votes_c + Laplace(1/gamma)), with the
   vote counts of both classes (the code's ``np.bincount`` drops class 1 when no teacher
   votes it, so that noise could never pick it; here both classes always compete). One
   teacher changes with one training row (replace-one neighbours, as PATE's analysis), so
   the counts move by 2 in L1 and each query is 2 gamma-DP.
4. gamma is the positive root of 4 T_q gamma^2 + 2 gamma sqrt(2 T_q ln(1/delta)) = eps (the
   paper's moments-accountant bound) at the trial's (eps, delta); the code fixes
   delta = 1e-5, dpbench uses the trial's delta so that one ledger serves the trial.
5. The student, the same logistic regression, is fitted on the T_q noisily labelled rows
   and released. If every noisy label is one class, it predicts that class: coefficients 0
   and intercept +-log(T_q + 1) (the log-odds of Laplace's rule of succession).

Ledger (zCDP): every query is charged ``charge_pure(2 gamma)`` = rho 2 gamma^2, T_q of them
rho = 2 T_q gamma^2, whose Bun-Steinke epsilon 2 T_q gamma^2 + 2 gamma sqrt(2 T_q ln(1/delta))
is below the paper's bound (= eps): the spend always fits the trial's budget. Labels in
{0, 1} or {-1, +1} (the larger value is the positive class).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from numbers import Integral
from typing import Any, Self

import numpy as np
from numpy.typing import NDArray
from threadpoolctl import threadpool_limits

from dpbench.data.base import TabularData
from dpbench.estimators import logistic_coef
from dpbench.methods.base import LinearModel
from dpbench.methods.classification._labels import to_pm1
from dpbench.methods.marginals.noise import noise_is_off
from dpbench.privacy import noise
from dpbench.privacy.accountant import Accountant


def pate_gamma(epsilon: float, n_queries: int, delta: float) -> float:
    """Positive root gamma of 4 T gamma^2 + 2 gamma sqrt(2 T ln(1/delta)) = epsilon.

    Written as 2 eps / (b + sqrt(b^2 + 16 T eps)), b = 2 sqrt(2 T ln(1/delta)): the usual
    (-b + sqrt(b^2 + 16 T eps)) / (8 T) without its cancellation.
    """
    if not (epsilon > 0 and n_queries >= 1 and 0 < delta < 1):
        raise ValueError(f"need epsilon > 0, T >= 1, delta in (0, 1); got {epsilon}, "
                         f"{n_queries}, {delta}")
    b = 2 * math.sqrt(2 * n_queries * math.log(1 / delta))
    return 2 * epsilon / (b + math.sqrt(b * b + 16 * n_queries * epsilon))


def noisy_argmax(votes: NDArray, scale: float, rng: np.random.Generator, *,
                 relation: str = "replace_one") -> NDArray:
    """Per row of ``votes`` (queries x classes), argmax of the counts + Laplace(scale) noise.

    One teacher changes with a replaced row: one count -1, another +1 (L1 sensitivity 2).
    With noise disabled (tests only) it is the plain argmax: ties go to the first class.
    """
    votes = np.asarray(votes, dtype=float)
    if noise_is_off():
        return np.argmax(votes, axis=1)
    return noise.noisy_argmax(votes, scale, rng, sensitivity=2.0, relation=relation,
                              label="pate: query")


STUDENTS = ("private", "public")


class PATE(LinearModel):
    """PATE with logistic-regression teachers and student; see the module docstring."""

    accounting = "zcdp"
    neighbours = "replace_one"
    serves = frozenset({"classification"})

    def __init__(self, n_teachers: int = 100, n_student: int = 100,
                 student: str = "private") -> None:
        for name, v in (("n_teachers", n_teachers), ("n_student", n_student)):
            if not (isinstance(v, Integral) and v >= 1):
                raise ValueError(f"{name}={v!r} must be an integer >= 1")
        if student not in STUDENTS:
            raise ValueError(f"student={student!r} unknown; valid: {', '.join(STUDENTS)}")
        super().__init__(n_teachers=int(n_teachers), n_student=int(n_student), student=student)

    @classmethod
    def data_required(cls, params: Mapping[str, Any]) -> frozenset[str]:
        """Public rows for ``student: public``."""
        return frozenset({"public_rows"}) if params.get("student") == "public" \
            else cls.requires

    def check_data(self, data: TabularData) -> None:
        n_q = self.params["n_student"]
        if self.params["student"] == "public" and (data.public is None or len(data.public) < n_q):
            have = 0 if data.public is None else len(data.public)
            raise ValueError(f"student=public needs n_student={n_q} public rows, the data has "
                             f"{have}; valid: n_student <= {have} (or the loader's n_public)")

    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        n_t, n_q = self.params["n_teachers"], self.params["n_student"]
        X = np.asarray(data.X, dtype=float)
        y01 = (to_pm1(data.y) > 0).astype(int)
        public = self.params["student"] == "public"
        self.check_data(data)
        n_taught = data.n if public else data.n - n_q
        if n_taught < n_t:
            raise ValueError(f"{data.n} training rows leave {n_taught} for n_teachers={n_t} "
                             f"after the student rows; valid: n_teachers <= {max(n_taught, 0)}")
        perm = rng.permutation(data.n)  # not privacy noise: the teachers' partition
        if public:  # the first n_q public rows: no training row is released
            X_student = np.asarray(data.encoding.encode(data.public.iloc[:n_q])[0], dtype=float)
            student, private = None, perm
        else:
            student, private = perm[:n_q], perm[n_q:]
            X_student = X[student]
            accountant.declare_unprotected(n_q, data.n)
        size = len(private) // n_t
        votes = np.zeros((n_q, 2), dtype=int)
        with threadpool_limits(limits=1):  # many tiny fits: threads only add overhead
            for k in range(n_t):
                part = private[k * size:(k + 1) * size]
                coef, intercept = logistic_coef(X[part], y01[part])
                votes[np.arange(n_q), (X_student @ coef + intercept > 0).astype(int)] += 1

        gamma = pate_gamma(accountant.epsilon, n_q, accountant.delta)
        for i in range(n_q):
            accountant.charge_pure(2 * gamma, f"pate: query {i + 1}/{n_q}, Laplace(1/gamma)")
        labels = noisy_argmax(votes, 1 / gamma, rng, relation=self.neighbours)
        self.coef_, self.intercept_ = logistic_coef(X_student, labels)
        self.student_rows_, self.votes_, self.labels_ = student, votes, labels
        # only public facts and the noisy labels' summary: no statistic of the private rows
        # without noise (the vote counts, single-class teachers, the flips noise made)
        self.info_ = {"gamma": gamma, "laplace_scale": 1 / gamma, "n_teachers": n_t,
                      "n_student": n_q, "student": self.params["student"],
                      "teacher_rows": size, "unused_rows": len(private) - n_t * size,
                      "unprotected_rows": 0 if public else n_q,
                      "student_single_class": int(np.unique(labels).size == 1),
                      "noise_disabled": noise_is_off()}
        return self

    def info(self) -> dict[str, Any]:
        return dict(self.info_)
