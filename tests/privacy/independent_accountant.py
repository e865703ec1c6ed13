"""An accountant for the privacy audit that prices a trial from its noise draws alone.

It reads a :mod:`dpbench.privacy.draws` trace (only the :class:`~dpbench.privacy.draws.Draw`
records: distribution, scale, sensitivity, norm, count, sampling, rate) and shares no code
with dpbench's ledger or its conversions (``dpbench.privacy.accountant``,
``conversions``, ``gaussian``): every number here comes from mpmath closed forms,
dp-accounting (Google's PLD and RDP accountants) or prv-accountant (Gopi, Lee & Wutschitz
2021).

Per draw (``count`` identical releases each):

- ``gaussian`` (L2 sensitivity Delta, sd sigma): rho = count (Delta / sigma)^2 / 2 zCDP,
  mu = sqrt(count) Delta / sigma GDP;
- ``laplace`` / ``report_noisy_max`` (L1 sensitivity Delta, scale b): Delta / b-DP each
  (the noisy-max argmax is post-processing of the noisy score vector);
- ``exponential`` (parameter eps): eps-DP and eps-bounded-range, so eps^2 / 8 zCDP (Cesar &
  Rogers 2021); ``monotonic`` changes nothing (exp(eps q / Delta) on monotone scores is
  eps-BR too);
- ``pure``: scale-DP;
- ``subsampled_gaussian``: priced by dp-accounting (Poisson: add/remove RDP or PLD;
  without replacement: replace-one PLD, Zhu, Dong & Wang 2022's dominating pair
  q N(C, s^2) + (1 - q) N(0, s^2) vs q N(-C, s^2) + (1 - q) N(0, s^2) with C half the
  recorded replace-one sensitivity), never by a zCDP or GDP closed form.

A pure eps-DP draw enters zCDP as eps^2 / 2 (Bun & Steinke 2016, Prop. 1.4) and GDP as
mu = -2 Phi^{-1}(1 / (1 + e^eps)) (the GDP curve through the corner of eps-DP's trade-off
function, which it lies below). :func:`recompute` prices a trace in the trial ledger's
currency, so a valid claim is matched exactly: zCDP sums rho and converts once with the
CKS'20 bound (Canonne, Kamath & Steinke 2020) minimised over every real order in mpmath;
GDP composes mu and converts with the exact GDP trade-off (Dong, Roth & Su 2022, Cor. 2.13)
solved in mpmath; approx and pure ledgers compose epsilon and delta basically, the
Gaussian-type draws together by dp-accounting's PLD at the trial's delta.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import mpmath
from dp_accounting import dp_event
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.privacy_accountant import NeighboringRelation
from dp_accounting.rdp import rdp_privacy_accountant as rdp_lib
from prv_accountant import PRVAccountant
from prv_accountant.privacy_random_variables import (
    GaussianMechanism,
    PoissonSubsampledGaussianMechanism,
)

from dpbench.privacy.draws import Draw

#: working precision (decimal digits) of the mpmath closed forms
DIGITS = 50
#: PLD grid: the privacy-loss discretisation interval (pessimistic rounding: an upper bound)
PLD_INTERVAL = 1e-4
#: mechanisms that are pure epsilon-DP (priced by :func:`pure_epsilon`)
PURE_KINDS = ("laplace", "report_noisy_max", "exponential", "pure", "privtree")
#: a sampler's batch sizes are taken for Poisson(n, q) unless the dispersion statistic
#: sum (k - n q)^2 / (n q (1 - q)) lies in either chi^2(T) tail beyond this probability
SAMPLER_TAIL = 1e-6


class Unsupported(ValueError):
    """A draw this pricing cannot value (e.g. a subsampled Gaussian in zCDP)."""


# -- per draw -------------------------------------------------------------------------------

def gaussian_ratio(d: Draw) -> float:
    """Delta / sigma of one Gaussian release (inf for sigma = 0 with Delta > 0)."""
    if d.norm != "l2":
        raise Unsupported(f"{d.label}: a Gaussian needs an L2 sensitivity, got {d.norm}")
    if d.scale == 0:
        return 0.0 if d.sensitivity == 0 else math.inf
    return d.sensitivity / d.scale


def pure_epsilon(d: Draw) -> float:
    """epsilon of ONE of the ``count`` releases of a pure-DP draw."""
    if d.mechanism in ("laplace", "report_noisy_max"):
        if d.norm != "l1":
            raise Unsupported(f"{d.label}: Laplace noise needs an L1 sensitivity, got {d.norm}")
        if d.scale == 0:
            return 0.0 if d.sensitivity == 0 else math.inf
        return d.sensitivity / d.scale
    if d.mechanism in ("exponential", "pure"):
        return d.scale
    if d.mechanism == "privtree":
        return privtree_epsilon(d.scale, d.decay)
    raise Unsupported(f"{d.label}: {d.mechanism} is not pure DP")


def privtree_epsilon(scale: float, decay: float) -> float:
    """epsilon of PrivTree with Laplace scale lambda and per-level decay delta (Zhang, Xiao &
    Xie 2016, Thm. 3.3's geometric sum): (1 / lambda) (2 g - 1) / (g - 1), g = e^{delta /
    lambda}; at delta = lambda ln(fanout) this is their Corollary 1 (mpmath)."""
    if not (scale > 0 and decay > 0):
        raise Unsupported(f"PrivTree needs a Laplace scale and a decay > 0, got {scale}, "
                          f"{decay}")
    with mpmath.workdps(DIGITS):
        g = mpmath.exp(mpmath.mpf(decay) / scale)
        return float((2 * g - 1) / ((g - 1) * scale))


def jl_epsilon(d: Draw, delta: float) -> float:
    """epsilon at ``delta`` of a Gaussian projection R A' with sigma_min(A')^2 >= w^2 (the
    draw's ``scale``), rows of squared norm <= B^2 (``sensitivity``) and r = ``size`` rows:
    (4 B^2 / w^2) (sqrt(2 r ln(4 / delta)) + ln(4 / delta)) (Blocki et al. 2012, Thm. 3.1)."""
    if not (d.scale > 0 and d.size >= 1):
        raise Unsupported(f"{d.label}: a JL projection needs w^2 > 0 and r >= 1")
    with mpmath.workdps(DIGITS):
        ln = mpmath.log(4 / mpmath.mpf(delta))
        return float(4 * mpmath.mpf(d.sensitivity) / d.scale
                     * (mpmath.sqrt(2 * d.size * ln) + ln))


# -- sampled steps: priced from the rows the sampler drew ---------------------------------

def _poisson_like(sizes: Sequence[int], n: int, q: float) -> bool:
    """Whether batch sizes are plausibly Binomial(n, q): the dispersion statistic in neither
    chi^2(T) tail beyond :data:`SAMPLER_TAIL` (fixed sizes give 0: the lower tail)."""
    if q >= 1:
        return all(k == n for k in sizes)
    var = n * q * (1 - q)
    stat = math.fsum((k - n * q) ** 2 for k in sizes) / var
    t = len(sizes)
    lower = float(mpmath.gammainc(t / 2, 0, stat / 2, regularized=True))
    upper = float(mpmath.gammainc(t / 2, stat / 2, mpmath.inf, regularized=True))
    return min(lower, upper) > SAMPLER_TAIL


def fold_samples(trace: Sequence[Draw]) -> tuple[list[Draw], list[str]]:
    """The trace with each run of sampled steps (a ``sample`` draw and the ``on_batch``
    Gaussian after it) folded into one ``subsampled_gaussian`` draw per label, whose sampler
    is read from the rows drawn: Poisson if the sizes look Binomial(n, q) (add/remove, the
    Gaussian's sensitivity), else fixed-size batches of distinct rows, priced as sampling
    without replacement under replace-one (twice an add/remove sensitivity); rows drawn
    with repeats have no analysis. Returns (draws, problems)."""
    out: list[Draw] = []
    problems: list[str] = []
    runs: dict[tuple, list[Draw]] = {}
    i = 0
    while i < len(trace):
        d = trace[i]
        if d.mechanism != "sample":
            if d.on_batch:
                problems.append(f"draw {d.label!r} is noise on a batch no sampler drew")
            out.append(d)
            i += 1
            continue
        j = i + 1
        while j < len(trace) and trace[j].on_batch:
            j += 1
        noise = trace[i + 1:j]
        if len(noise) != 1:
            problems.append(f"sampled step {d.label!r} has {len(noise)} Gaussian draws on its "
                            "batch (one expected)")
        else:
            g = noise[0]
            key = (g.label, g.scale, g.sensitivity, g.relation, d.rate, d.population,
                   d.sampling)
            if key not in runs:
                runs[key] = []
                out.append(dataclasses.replace(g, mechanism="subsampled_gaussian",
                                               on_batch=False, value=None))
            runs[key].append(d)
        i = j
    folded = []
    for d in out:
        if d.mechanism != "subsampled_gaussian" or d.sampling is not None:
            folded.append(d)
            continue
        key = next(k for k in runs if k[0] == d.label and k[1] == d.scale)
        steps = runs[key]
        n, q, declared = steps[0].population, steps[0].rate, steps[0].sampling
        sizes = [s.size for s in steps]
        if not all(s.distinct for s in steps):
            problems.append(f"{d.label!r}: rows drawn with repeats (sampling with "
                            "replacement has no analysis here)")
            folded.append(dataclasses.replace(d, sampling="with", count=len(steps)))
            continue
        poisson = _poisson_like(sizes, n, q)
        if poisson:
            sampling, relation, sens = "poisson", "add_remove", d.sensitivity
        else:
            fixed = len(set(sizes)) == 1
            if not fixed:
                problems.append(f"{d.label!r}: batch sizes {min(sizes)}-{max(sizes)} are "
                                f"neither fixed nor Binomial({n}, {q:.4g})")
            sampling, relation = "without", "replace_one"
            sens = d.sensitivity * (2 if d.relation == "add_remove" else 1)
        if sampling != declared:
            problems.append(f"{d.label!r}: the sampler is declared {declared} but its "
                            f"{len(sizes)} batches look {sampling} (sizes {min(sizes)}-"
                            f"{max(sizes)}, n {n}, q {q:.4g}); priced as {sampling}")
        folded.append(dataclasses.replace(d, sampling=sampling, relation=relation,
                                          sensitivity=sens, rate=q, count=len(steps)))
    return folded, problems


def draw_rho(d: Draw) -> float:
    """zCDP of all ``count`` releases of a draw."""
    if d.mechanism == "gaussian":
        return d.count * gaussian_ratio(d) ** 2 / 2
    if d.mechanism == "exponential":
        return d.count * d.scale**2 / 8
    if d.mechanism in PURE_KINDS:
        return d.count * pure_epsilon(d) ** 2 / 2
    raise Unsupported(f"{d.label}: {d.mechanism} has no zCDP closed form here")


def pure_to_mu(epsilon: float) -> float:
    """GDP mu implied by epsilon-DP: -2 Phi^{-1}(1 / (1 + e^eps)) (mpmath)."""
    with mpmath.workdps(DIGITS):
        p = 1 / (1 + mpmath.exp(mpmath.mpf(epsilon)))
        return float(-2 * mpmath.sqrt(2) * mpmath.erfinv(2 * p - 1))


def draw_mu_squared(d: Draw) -> float:
    """mu^2 of all ``count`` releases of a draw (GDP composes mu^2 additively)."""
    if d.mechanism == "gaussian":
        return d.count * gaussian_ratio(d) ** 2
    if d.mechanism in PURE_KINDS:
        return d.count * pure_to_mu(pure_epsilon(d)) ** 2
    raise Unsupported(f"{d.label}: {d.mechanism} has no GDP closed form here")


# -- closed-form conversions (mpmath) -----------------------------------------------------

def _minimise(f: Callable[[mpmath.mpf], mpmath.mpf], lo: float, hi: float,
              steps: int = 400) -> mpmath.mpf:
    """min of a unimodal f on [lo, hi] by golden-section search (mpmath)."""
    g = (mpmath.sqrt(5) - 1) / 2
    a, b = mpmath.mpf(lo), mpmath.mpf(hi)
    c, e = b - g * (b - a), a + g * (b - a)
    fc, fe = f(c), f(e)
    for _ in range(steps):
        if fc < fe:
            b, e, fe = e, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, e, fe
            e = a + g * (b - a)
            fe = f(e)
    return min(fc, fe)


def cks_epsilon(rho: float, delta: float) -> float:
    """epsilon of rho-zCDP at delta (CKS'20 Prop. 12 / Cor. 13, optimised over real orders):
    inf_{a > 1} a rho + log(1 - 1/a) - (log delta + log a) / (a - 1)."""
    if rho == 0:
        return 0.0
    if math.isinf(rho):
        return math.inf
    with mpmath.workdps(DIGITS):
        r, ld = mpmath.mpf(rho), mpmath.log(mpmath.mpf(delta))

        def eps_at(log_am1: mpmath.mpf) -> mpmath.mpf:  # parametrised by log(a - 1)
            am1 = mpmath.exp(log_am1)
            a = am1 + 1
            return a * r + mpmath.log(am1 / a) - (ld + mpmath.log(a)) / am1

        return float(max(_minimise(eps_at, -20.0, 20.0), 0))


def gdp_delta(mu: float, epsilon: float) -> mpmath.mpf:
    """delta(eps) of mu-GDP: Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) (DRS'22)."""
    with mpmath.workdps(DIGITS):
        m, e = mpmath.mpf(mu), mpmath.mpf(epsilon)
        return mpmath.ncdf(-e / m + m / 2) - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2)


def gdp_epsilon(mu: float, delta: float) -> float:
    """Smallest epsilon with mu-GDP => (epsilon, delta)-DP (bisection on gdp_delta, which
    decreases in epsilon), rounded up."""
    if mu == 0:
        return 0.0
    if math.isinf(mu):
        return math.inf
    with mpmath.workdps(DIGITS):
        if gdp_delta(mu, 0.0) <= delta:
            return 0.0
        lo, hi = mpmath.mpf(0), mpmath.mpf(mu * mu / 2 + 10 * mu + 10)
        for _ in range(200):
            mid = (lo + hi) / 2
            if gdp_delta(mu, mid) > delta:
                lo = mid
            else:
                hi = mid
        return float(hi)


# -- library accountants ----------------------------------------------------------------

def _subsampled(d: Draw) -> tuple[float, float, NeighboringRelation]:
    """(sd / per-step sensitivity of the library's convention, q, relation) of a
    subsampled Gaussian draw."""
    if d.rate is None or not 0 < d.rate <= 1:
        raise Unsupported(f"{d.label}: subsampled_gaussian needs a rate in (0, 1]")
    if d.sampling == "poisson":
        if d.relation != "add_remove":
            raise Unsupported(f"{d.label}: Poisson sampling is priced under add/remove only")
        return d.scale / d.sensitivity, d.rate, NeighboringRelation.ADD_OR_REMOVE_ONE
    if d.sampling == "without":
        if d.relation != "replace_one":
            raise Unsupported(f"{d.label}: sampling without replacement is priced under "
                              "replace-one only")
        # A fixed-size batch that takes the changed row displaces another one: with every
        # other row's clipped gradient at -C e, D's row at +C e and D''s at -C e, D' always
        # gives N(-B C e) and D gives it shifted by 2C with probability q. So the pair
        # ((1 - q) N(0) + q N(2C), N(0)) is attained, and it dominates every replace-one
        # pair of this sampler (Zhu, Dong & Wang 2022): priced as the Poisson add/remove pair
        # at the recorded sensitivity 2C. (dp-accounting's REPLACE_ONE Poisson pair, the
        # symmetric +C / -C shift, is the Poisson sampler's and under-prices this one: 1.88
        # against 2.12 on the COMPAS check.)
        return d.scale / d.sensitivity, d.rate, NeighboringRelation.ADD_OR_REMOVE_ONE
    raise Unsupported(f"{d.label}: sampling={d.sampling!r} is not priced")


def pld_epsilon(trace: Sequence[Draw], delta: float) -> float:
    """epsilon at delta of the trace's Gaussian, Laplace and subsampled-Gaussian draws by
    dp-accounting's PLD (pessimistic rounding: an upper bound, the tightest here). Plain
    Gaussians are merged into one of the same Delta / sigma (exact)."""
    trace = fold_samples(trace)[0]
    plds: list[pld_lib.PrivacyLossDistribution] = []
    ratio_sq = 0.0
    for d in trace:
        if d.mechanism == "gaussian":
            ratio_sq += d.count * gaussian_ratio(d) ** 2
        elif d.mechanism in ("laplace", "report_noisy_max"):
            eps = pure_epsilon(d)
            if eps > 0:
                plds.append(pld_lib.from_laplace_mechanism(
                    1 / eps, value_discretization_interval=PLD_INTERVAL).self_compose(d.count))
        elif d.mechanism == "subsampled_gaussian":
            z, q, rel = _subsampled(d)
            one = pld_lib.from_gaussian_mechanism(
                z, sampling_prob=q, neighboring_relation=rel,
                value_discretization_interval=PLD_INTERVAL)
            plds.append(one.self_compose(d.count))
        else:
            raise Unsupported(f"{d.label}: {d.mechanism} has no PLD here")
    if math.isinf(ratio_sq):
        return math.inf
    if ratio_sq > 0:
        plds.append(pld_lib.from_gaussian_mechanism(
            1 / math.sqrt(ratio_sq), value_discretization_interval=PLD_INTERVAL))
    if not plds:
        return 0.0
    total = plds[0]
    for p in plds[1:]:
        total = total.compose(p)
    return max(float(total.get_epsilon_for_delta(delta)), 0.0)


def rdp_epsilon(trace: Sequence[Draw], delta: float) -> float:
    """epsilon at delta by dp-accounting's RDP accountant (its order grid and CKS-type
    conversion): Gaussian, Laplace, exponential (as eps^2/8-zCDP events), pure draws (as
    eps^2/2-zCDP) and subsampled Gaussians."""
    trace = fold_samples(trace)[0]
    samplers = {d.sampling for d in trace if d.mechanism == "subsampled_gaussian"}
    if len(samplers) > 1:
        raise Unsupported("a trace mixing Poisson and without-replacement sampling")
    acc = rdp_lib.RdpAccountant(
        neighboring_relation=NeighboringRelation.REPLACE_ONE if samplers == {"without"}
        else NeighboringRelation.ADD_OR_REMOVE_ONE)
    for d in trace:
        if d.mechanism == "gaussian":
            r = gaussian_ratio(d)
            event: dp_event.DpEvent = dp_event.NoOpDpEvent() if r == 0 \
                else dp_event.GaussianDpEvent(1 / r)
        elif d.mechanism in ("laplace", "report_noisy_max"):
            eps = pure_epsilon(d)
            event = dp_event.NoOpDpEvent() if eps == 0 else dp_event.LaplaceDpEvent(1 / eps)
        elif d.mechanism == "exponential":
            event = dp_event.ZCDpEvent(d.scale**2 / 8)
        elif d.mechanism in ("pure", "privtree"):
            event = dp_event.ZCDpEvent(pure_epsilon(d)**2 / 2)
        elif d.mechanism == "subsampled_gaussian":
            z, q, _ = _subsampled(d)
            gauss = dp_event.GaussianDpEvent(z)   # sd / (2 C) for fixed-size batches
            if d.sampling == "without":
                # Wang, Balle & Kasiviswanathan 2019's general bound for the base Gaussian's
                # replace-one RDP (shift 2C): sound, looser than the PLD price (4.70 vs 2.12
                # on the COMPAS check). q = sample_size / source_dataset_size; only q matters
                size = 10**9
                event = dp_event.SampledWithoutReplacementDpEvent(size, round(q * size), gauss)
            else:
                event = dp_event.PoissonSampledDpEvent(q, gauss)
        else:
            raise Unsupported(f"{d.label}: {d.mechanism} has no RDP here")
        acc.compose(event, d.count)
    return float(acc.get_epsilon(delta))


def prv_epsilon(trace: Sequence[Draw], delta: float, eps_error: float = 0.01
                ) -> tuple[float, float, float]:
    """(lower, estimate, upper) epsilon at delta by prv-accountant for a trace of Gaussian
    and Poisson-subsampled Gaussian draws (add/remove)."""
    trace = fold_samples(trace)[0]
    prvs, counts = [], []
    ratio_sq = math.fsum(d.count * gaussian_ratio(d) ** 2 for d in trace
                         if d.mechanism == "gaussian")
    if ratio_sq > 0:
        prvs.append(GaussianMechanism(1 / math.sqrt(ratio_sq)))
        counts.append(1)
    for d in trace:
        if d.mechanism == "subsampled_gaussian" and d.sampling == "poisson":
            z, q, _ = _subsampled(d)
            prvs.append(PoissonSubsampledGaussianMechanism(q, z))
            counts.append(d.count)
        elif d.mechanism != "gaussian":
            raise Unsupported(f"{d.label}: prv-accountant is used for Gaussians only here")
    acc = PRVAccountant(prvs, eps_error=eps_error, delta_error=delta * 1e-3,
                        max_self_compositions=counts)
    lo, est, hi = acc.compute_epsilon(delta, counts)
    return float(lo), float(est), float(hi)


# -- the audit's price of a trial ---------------------------------------------------------

def zcdp_rho(trace: Sequence[Draw]) -> float:
    return math.fsum(draw_rho(d) for d in trace)


def gdp_mu(trace: Sequence[Draw]) -> float:
    return math.sqrt(math.fsum(draw_mu_squared(d) for d in trace))


def approx_epsilon(trace: Sequence[Draw], delta: float) -> tuple[float, float]:
    """(epsilon, delta) by basic composition: pure draws add epsilon, ``approx_dp`` steps
    add their (epsilon, delta) as their theorem states; the Gaussian-type draws together are
    priced by PLD at the delta left (0 if there are none)."""
    separate = ("exponential", "pure", "privtree", "approx_dp", "jl_projection")
    pure = math.fsum(d.count * pure_epsilon(d) for d in trace
                     if d.mechanism in ("exponential", "pure", "privtree"))
    stated = [d for d in trace if d.mechanism == "approx_dp"]
    pure += math.fsum(d.count * d.scale for d in stated)
    used = math.fsum(d.count * d.delta for d in stated)
    for d in trace:   # Blocki et al.'s bound at delta / 2, and delta / 2 for the test
        if d.mechanism == "jl_projection":
            pure += d.count * jl_epsilon(d, delta / 2)
            used += d.count * delta
    noisy = [d for d in trace if d.mechanism not in separate]
    if not any(d.mechanism in ("gaussian", "subsampled_gaussian") for d in noisy):
        return pure + math.fsum(d.count * pure_epsilon(d) for d in noisy), used
    if used >= delta:
        return math.inf, used
    return pure + pld_epsilon(noisy, delta - used), delta


def recompute(trace: Sequence[Draw], currency: str, delta: float) -> float:
    """The trial's epsilon at ``delta`` from its draws, priced in the ledger's currency."""
    trace = fold_samples(trace)[0]
    if currency == "zcdp":
        return cks_epsilon(zcdp_rho(trace), delta)
    if currency == "gdp":
        return gdp_epsilon(gdp_mu(trace), delta)
    if currency in ("approx", "pure"):
        return approx_epsilon(trace, delta)[0]
    raise ValueError(f"unknown currency {currency!r}")


# -- the audit of one trial ---------------------------------------------------------------

#: the recomputed epsilon may exceed the target by this fraction: both sides are exact
#: conversions (the ledger's scipy root search rounds to the safe side; ours is mpmath)
TARGET_REL_TOL = 1e-6
#: |recomputed - ledger| / ledger allowed where both price the trace exactly the same way
#: (zCDP: sum of rho + CKS'20; GDP: composed mu + the exact GDP conversion; pure epsilon sums)
EXACT_REL_TOL = 1e-6
#: how far BELOW the ledger a recomputation may land where the ledger is a looser valid
#: bound than ours: an (eps, delta) ledger composes Gaussian noise by a theorem (RDP, basic
#: or advanced composition, a paper's formula that over-noises) that our PLD may beat by any
#: factor (DP-SGD on COMPAS: RDP 1.000 vs PLD 0.937; Alg. 6's paper formula 1 vs 0.6;
#: 108 tuning runs by advanced composition); paying more than the noise costs is safe, so
#: only a price above such a ledger is a fault (never more than EXACT_REL_TOL above it)
BOUND_REL_TOL = 1.0


def ledger_tolerance(currency: str, trace: Sequence[Draw]) -> float:
    """Relative tolerance below the ledger: exact where both price the trace identically,
    :data:`BOUND_REL_TOL` where an approx ledger priced Gaussian noise by its own bound."""
    gaussian = any(d.mechanism in ("gaussian", "subsampled_gaussian") for d in trace)
    return BOUND_REL_TOL if currency in ("approx", "pure") and gaussian else EXACT_REL_TOL


def audit(trace: Sequence[Draw], summary: dict, neighbours: str, charged: bool) -> list[str]:
    """Problems of one trial (empty if none): its draws priced by :func:`recompute` against
    the ledger's ``summary()`` (target and ``spent_epsilon``) and the method's declared
    ``neighbours``; ``charged``: whether the ledger holds any charge.

    Flags (a) a recomputed epsilon over the target, (b) one that differs from the ledger's
    spent epsilon beyond the tolerances above, (c) a ledger that charged with no draw
    recorded (or draws with no charge), a draw under another relation than ``neighbours``,
    or a draw this accountant cannot price.
    """
    if charged and not trace:
        return ["the ledger charged but no noise draw was recorded"]
    trace, problems = fold_samples(trace)
    if trace and not charged:
        return [f"{len(trace)} noise draws recorded but the ledger charged nothing"]
    problems += [f"draw {d.label!r} is under {d.relation}, the method declares {neighbours}"
                 for d in trace if d.relation != neighbours]
    currency, delta = str(summary["currency"]), float(summary["target_delta"])
    target, spent = float(summary["target_epsilon"]), float(summary["spent_epsilon"])
    try:
        eps = recompute(trace, currency, delta)
    except Unsupported as exc:
        return [*problems, f"cannot price the trace: {exc}"]
    if eps > target * (1 + TARGET_REL_TOL):
        problems.append(f"recomputed eps {eps:.6g} exceeds the target {target:.6g} "
                        f"(delta {delta:.3g})")
    below = ledger_tolerance(currency, trace)
    if eps > spent * (1 + EXACT_REL_TOL) or eps < spent * (1 - below):
        problems.append(f"recomputed eps {eps:.6g} differs from the ledger's {spent:.6g} "
                        f"(allowed: {EXACT_REL_TOL:g} above, {below:g} below)")
    return problems
