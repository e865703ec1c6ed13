"""L2 sensitivity of the joint degree-2 release (Kulkarni et al., Lemmas 3.4.1 and 3.4.2).

Neighbouring datasets differ in one record (replacement; N is public).
Scaling block k by sigma_1/sigma_k turns the block-diagonal Gaussian into one
isotropic Gaussian with sd sigma_1 on ``F(x) = [t1, sqrt(c2) t2, ...]``; with
``t = <x, x'>``:

- logistic:  ||F(x)-F(x')||^2 <= 2R^2 - 2t + c (2R^4 - 2t^2)
- Poisson:   ||F(x)-F(x')||^2 <= (1+c3)(2R^2 - 2t) + (c2+c4)(2R^4 - 2t^2),
  with c3, c4 already multiplied by R_y^2 as in the lemma.

Both are concave quadratics in t; the paper maximises at the vertex
(t = -1/(2c), resp. -(1+c3)/(2(c2+c4))), which gives its closed forms. The
vertex is a feasible inner product only when it lies in [-R^2, R^2]; outside
that range we evaluate at the nearest end (the closed form would still be a
valid but loose bound). For R = 1 and equal noise both coincide with the
paper: sqrt(4.5) (Cor. 3.1.1) and sqrt(4.5 (1 + R_y^2)) (Cor. 3.1.2).
"""

from __future__ import annotations

import math


def _concave_max(a: float, b: float, R: float) -> float:
    """max over t in [-R^2, R^2] of a (2R^2 - 2t) + b (2R^4 - 2t^2), a, b > 0."""
    t = min(max(-a / (2 * b), -(R**2)), R**2)
    return a * (2 * R**2 - 2 * t) + b * (2 * R**4 - 2 * t**2)


def logistic_sensitivity(R: float = 1.0, c: float = 1.0) -> float:
    """Lemma 3.4.1; ``c = sigma_1^2 / sigma_2^2`` (1 = one joint Gaussian)."""
    _positive(R=R, c=c)
    return math.sqrt(_concave_max(1.0, c, R))


def poisson_sensitivity(R_x: float = 1.0, R_y: float = 5.0, s2: float = 1.0, s3: float = 1.0,
                        s4: float = 1.0) -> float:
    """Lemma 3.4.2; ``s_k = sigma_1^2 / sigma_k^2`` (all 1 = one joint Gaussian).

    In the lemma's notation c2 = s2, c3 = s3 R_y^2, c4 = s4 R_y^2.
    """
    _positive(R_x=R_x, R_y=R_y, s2=s2, s3=s3, s4=s4)
    c2, c3, c4 = s2, s3 * R_y**2, s4 * R_y**2
    return math.sqrt(_concave_max(1.0 + c3, c2 + c4, R_x))


def paper_closed_form(glm: str, R: float = 1.0, R_y: float = 5.0) -> float:
    """The lemmas' closed forms for equal noise, exactly as printed (vertex always used)."""
    if glm == "logistic":
        return math.sqrt(1 / 2 + 2 * R**2 + 2 * R**4)
    c2, c3, c4 = 1.0, R_y**2, R_y**2
    return (2 * (c2 + c4) * R**2 + c3 + 1) / math.sqrt(2 * (c2 + c4))


def sensitivity(glm: str, R: float = 1.0, R_y: float = 5.0) -> float:
    """Sensitivity of the one-Gaussian release used by the method."""
    if glm == "logistic":
        return logistic_sensitivity(R)
    if glm == "poisson":
        return poisson_sensitivity(R, R_y)
    raise ValueError(f"glm={glm!r} is invalid; valid: logistic, poisson")


def _positive(**values: float) -> None:
    for name, v in values.items():
        if not (math.isfinite(v) and v > 0):
            raise ValueError(f"{name}={v!r} is invalid: it must be a finite number > 0")
