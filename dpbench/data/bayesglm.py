"""Data for the noise-aware Bayesian GLM paper (Kulkarni et al.): synthetic GLMs, Adult, Pima.

Every loader returns records inside the paper's public bounds, ||x||_2 <= R = 1
(and y <= R_y for Poisson), so the release never has to drop a record:

- synthetic: x ~ N(0, Sigma) with a fixed random non-identity Sigma (``cov_seed``),
  records outside the unit ball rejected (the paper filters ||x|| > R_x) until
  n remain; y from the GLM (logistic: -1/+1; Poisson: softplus mean, y <= y_max).
- real data: each feature mapped to [-1, 1] with public, data-independent
  ranges (binary features to -1/+1), then divided by sqrt(d).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from dpbench.data.base import Split, TabularData
from dpbench.data.files import check_fits_memory, read_csv

if TYPE_CHECKING:
    import pandas as pd


GLMS = ("logistic", "poisson")


def random_covariance(d: int, trace: float, seed: int) -> NDArray:
    """A fixed, random, well-conditioned, non-identity covariance with the given trace."""
    A = np.random.default_rng(seed).normal(size=(d, d))
    W = A @ A.T / d + 0.5 * np.eye(d)
    return trace * W / np.trace(W)


def synthetic_glm(*, rng: np.random.Generator, glm: str = "logistic", n: int = 1000,
                  theta: list[float] | tuple[float, ...] = (-0.9, -0.5, 0.3), n_test: int = 200,
                  R: float = 1.0, y_max: int = 5, cov_trace: float = 0.5,
                  cov_seed: int = 0) -> Split:
    """Logistic (Fig. 5: theta = [-0.9, -0.5, 0.3], n = 1000) or Poisson with softplus link
    (Fig. 6: theta = [0.3, -0.6, 0.8], n = 500); ``truth`` holds theta and Sigma."""
    if glm not in GLMS:
        raise ValueError(f"glm={glm!r} is invalid; valid: {', '.join(GLMS)}")
    if n < 1 or n_test < 1:
        raise ValueError(f"need n, n_test >= 1; got n={n}, n_test={n_test}")
    th = np.asarray(theta, dtype=float)
    if th.ndim != 1 or th.size < 1:
        raise ValueError(f"theta={theta!r} must be a non-empty list of numbers")
    check_fits_memory(2 * (n + n_test), th.size + 1, f"n={n:,}, n_test={n_test:,}")
    Sigma = random_covariance(th.size, cov_trace, cov_seed)
    L = np.linalg.cholesky(Sigma)

    def draw(m: int) -> TabularData:
        Xs, ys, have = [], [], 0
        while have < m:
            X = rng.normal(size=(2 * m, th.size)) @ L.T
            u = X @ th
            if glm == "logistic":
                y = np.where(rng.random(len(u)) < 1 / (1 + np.exp(-u)), 1.0, -1.0)
                keep = np.linalg.norm(X, axis=1) <= R
            else:
                y = rng.poisson(np.logaddexp(0.0, u)).astype(float)
                keep = (np.linalg.norm(X, axis=1) <= R) & (y <= y_max)
            Xs.append(X[keep])
            ys.append(y[keep])
            have += int(keep.sum())
        X, y = np.vstack(Xs)[:m], np.concatenate(ys)[:m]
        return TabularData(X=X, y=y, x_bound=float(R),
                           y_bound=1.0 if glm == "logistic" else float(y_max),
                           feature_names=tuple(f"x{j}" for j in range(th.size)), target="y",
                           truth={"theta": th, "Sigma": Sigma})

    return Split(train=draw(n), test=draw(n_test))


def _scaled(columns: list[NDArray]) -> NDArray:
    X = np.column_stack(columns)
    return X / math.sqrt(X.shape[1])


def _to_unit(v: NDArray, lo: float, hi: float) -> NDArray:
    return np.clip(2 * (np.asarray(v, dtype=float) - lo) / (hi - lo) - 1, -1.0, 1.0)


def _pm1(mask: NDArray) -> NDArray:
    return np.where(mask, 1.0, -1.0)


ADULT_COLUMNS = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
                 "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
                 "hours-per-week", "native-country", "income"]
ADULT_FEATURES = ("age", "married", "own_child", "male", "hours_per_week")


def adult_frame() -> pd.DataFrame:
    """adult.data + adult.test (48,842 rows), income labels without the trailing '.'."""
    import pandas as pd

    parts = []
    for name, skip in (("adult.data.gz", 0), ("adult.test.gz", 1)):
        parts.append(read_csv("uci_adult_raw", name, header=None, names=ADULT_COLUMNS,
                              skipinitialspace=True, skiprows=skip))
    df = pd.concat(parts, ignore_index=True).dropna(subset=["income"])
    df["income"] = df["income"].str.rstrip(".")
    return df


def _adult_xy(df: pd.DataFrame) -> tuple[NDArray, NDArray]:
    """The paper's five features (Sec. 4.2), binary ones as -1/+1 (our encoding choice)."""
    X = _scaled([
        _to_unit(df["age"], 17, 90),                       # UCI documented range
        _pm1(df["marital-status"].isin(["Married-civ-spouse", "Married-AF-spouse"])),
        _pm1(df["relationship"] == "Own-child"),
        _pm1(df["sex"] == "Male"),
        _to_unit(df["hours-per-week"], 1, 99),
    ])
    return X, _pm1(df["income"] == ">50K")


def adult(*, rng: np.random.Generator, n_train: int = 5000, n_test: int = 1000) -> Split:
    """Adult, logistic regression of income>50K on age, marital status, relationship,
    sex and hours per week (Fig. 4: 5,000 random records)."""
    df = adult_frame()
    if n_train < 1 or n_test < 0 or n_train + n_test > len(df):
        raise ValueError(f"n_train={n_train}, n_test={n_test} must be >= 1 / >= 0 and fit in "
                         f"the {len(df)} Adult rows")
    perm = rng.permutation(len(df))
    X, y = _adult_xy(df.iloc[perm[:n_train + n_test]])
    return _split(X, y, n_train, ADULT_FEATURES, "income>50K")


PIMA_FEATURES = {"Age": (20, 90), "Glucose": (0, 200), "BMI": (15, 70), "Pregnancies": (0, 20),
                 "DiabetesPedigreeFunction": (0, 2.5)}


def pima_diabetes(*, rng: np.random.Generator, n_test: int = 0) -> Split:
    """Pima Indians Diabetes as the paper's ambiguous "diabetes" set (Fig. 3, N = 758):
    five features (age, glucose, BMI, pregnancies, pedigree function), rows with the
    missing-value code 0 in glucose or BMI dropped (752 rows); target Outcome as -1/+1.
    With ``n_test=0`` (default) the whole set is used for training and also returned as test.
    """
    df = read_csv("pima_diabetes", "pima-indians-diabetes.csv")
    df = df[(df["Glucose"] > 0) & (df["BMI"] > 0)].reset_index(drop=True)
    if not 0 <= n_test < len(df):
        raise ValueError(f"n_test={n_test} must lie in [0, {len(df) - 1}]")
    df = df.iloc[rng.permutation(len(df))]
    X = _scaled([_to_unit(df[c], lo, hi) for c, (lo, hi) in PIMA_FEATURES.items()])
    y = _pm1(df["Outcome"].to_numpy() == 1)
    if n_test == 0:
        data = _tab(X, y, tuple(PIMA_FEATURES), "diabetes")
        return Split(train=data, test=data)
    return _split(X, y, len(df) - n_test, tuple(PIMA_FEATURES), "diabetes")


def _tab(X: NDArray, y: NDArray, names: tuple[str, ...], target: str) -> TabularData:
    return TabularData(X=X, y=y, x_bound=1.0, y_bound=1.0, feature_names=names, target=target)


def _split(X: NDArray, y: NDArray, n_train: int, names: tuple[str, ...], target: str) -> Split:
    return Split(train=_tab(X[:n_train], y[:n_train], names, target),
                 test=_tab(X[n_train:], y[n_train:], names, target))
