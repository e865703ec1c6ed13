"""RAP, relaxed adaptive projection (Aydore et al., ICML 2021), and RAP-softmax, as the
query-release paper runs them (Liu, Vietri & Wu, NeurIPS 2021, Sec. 4, App. B.2, Table 3;
the authors' ``rap.py``, a PyTorch port of RAP).

The synthetic data are ``n_rows`` (n' = 1,000) relaxed rows over the d' one-hot columns,
initialised uniformly on [-1, 1]. A query's answer is the mean over the rows of the
product of its columns (:mod:`~dpbench.methods.query_release.relaxed`):

- **RAP** (``softmax: false``): the rows' raw values, clipped to [-1, 1] after every
  optimiser step (the code's weight clipper), so products and answers may be negative;
- **RAP-softmax** (``softmax: true``): a per-attribute softmax of the raw values, so each
  row is a product distribution and every answer lies in [0, 1].

T rounds; each round selects K queries one after the other by the exponential mechanism
on the round's stale errors |q(P) - q(D)| (picks of this and earlier rounds excluded) and
measures each with Gaussian noise (clipped to [0, 1]). Each of the 2 T K releases costs
rho / (2 T K), which is the App. B.1 template over T K rounds with alpha 0.5 (eps0 =
sqrt(4 rho / (T K)): the EM's parameter sqrt(8 rho / (2 T K)) and the noise sd
1 / (N sqrt(rho / (T K))) are the code's), so the same :class:`AdaptiveBudget` charges
them. Then Adam (``lr``; Table 3: 1e-3 RAP, 0.1 softmax) minimises the sum of squared
errors over every measurement so far, until that loss is below 1e-8, it has not improved
by a relative 1e-7 on its best for more than ``patience`` (5) consecutive steps (the
code's ReduceLROnPlateau counter), or ``max_iters`` (5,000) steps.

``step``: how each optimiser step answers the measured queries and gets the gradient:
``gather`` (the code's gather of their columns, ``prod`` and autograd), ``columns`` (the
rows transposed first, a row gather per factor: ``relaxed.column_answers``), ``closed``
(the loss's gradient in closed form, no autograd but the softmax's, on the columns the
measured queries read only, with torch's fused Adam: ``relaxed.squared_error_gradient``
and ``relaxed.ActiveColumns``; a column no measured query reads gets a zero gradient, so
Adam and the clip leave it as it is in the other steps too), ``compiled`` (the closed
step's arithmetic without in-place updates, fused by ``torch.compile`` into C++ loops:
``relaxed.compiled_gradient``; it needs a C++ compiler at run time, and without one the
closed step runs and the fit's info says so) or ``loop`` (the round's whole optimisation,
the closed step's gradient, the softmax's, Adam, the clip and the stopping rules, as one
loop compiled by Numba, no Python between the steps: :mod:`._rap_loop`). The default,
``auto``, runs ``loop``; where Numba does not import (the fit's info says so), ``closed``
until the run's steps have done ``COMPILE_AFTER_WORK`` (about a compile's worth of CPU),
then ``compiled``: a short run never builds it (a build costs ~2 CPU-s from Inductor's
on-disk cache, ~15 with an empty one), a long one (the paper's cap on ADULT) switches
after a round or two; the fit's info records which step each round ran. All give the same
loss and update summed in another order: answers within 1e-4 of the gather step's on the
tests' fixed seeds, not bit for bit, and the closed and compiled steps' within float32
rounding of the gather step's in float64, the loop step's within 1.5e-6
(tests/methods/test_qr_step_speed.py). On ADULT the steps are 3-7x (columns) and 6-15x
(closed) faster than the gather step, a long run 1.65x faster again compiled, and the loop
step 3.6-4.9x faster than the compiled one (docs/speed.md). The default is kept out of the
parameters, so trial keys are those of the gather step it replaced.

Output: every query's answer on the final rows, clipped to [0, 1] (as the code). Records
(``output(SyntheticTable)``): randomized rounding of the final rows (the rows RAP's answers
are computed on: raw values for RAP, the per-attribute softmax for RAP-softmax), n records
each from one row, every attribute drawn from the row's block clipped at 0 and normalised
(:mod:`~dpbench.methods.query_release.relaxed`). Aydore et al. propose randomized rounding
of the relaxed rows to obtain a discrete dataset; this per-block rule (negative entries of
RAP's raw rows count as 0) is the one implemented here. Post-processing: no budget.

rho (``rho_conversion``): ``cks`` (default), the ledger's exact CKS conversion, as every
other method here; ``bun_steinke`` reproduces the authors' rap.py, which converts with
Bun-Steinke's bound eps = rho + 2 sqrt(rho log(1/delta)) instead, i.e. rho = (sqrt(log(1/
delta) + eps) - sqrt(log(1/delta)))^2: 26-46% less rho than the other methods at the
paper's settings (a handicap; the ledger is charged what is spent, less than its total).
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any, Self

import numpy as np

from dpbench import lazy
from dpbench.data.base import TabularData
from dpbench.methods.query_release.relaxed import (
    ActiveColumns,
    AnswerPlan,
    RelaxedMethod,
    answers,
    block_softmax,
    column_answers,
    column_index,
    compiled_gradient,
    positive,
    squared_error_gradient,
    torch_session,
    whole,
    with_ones,
)
from dpbench.methods.query_release.template import (
    AdaptiveBudget,
    check_rounds,
    check_selection,
    plan,
)
from dpbench.privacy.accountant import Accountant

if TYPE_CHECKING:
    import torch

_rap_loop = lazy.module("dpbench.methods.query_release._rap_loop")  # Numba: the loop step

RHO_CONVERSIONS = ("cks", "bun_steinke")
#: how a step answers the measured queries and gets the gradient (module docstring):
#: ``gather`` (the authors' way), ``columns``, ``closed``, ``compiled`` or ``loop`` (faster;
#: answers within the tolerances tests/methods/test_qr_step_speed.py states, not bit for
#: bit), or ``auto`` (loop; without Numba closed, then compiled: below)
STEPS = ("auto", "gather", "columns", "closed", "compiled", "loop")
DEFAULT_STEP = "auto"
#: ``auto`` runs the closed step until the run's steps have done this much work (n' x
#: measured queries x steps, summed over the rounds; ~2-5 CPU-s of closed steps on ADULT,
#: about what building the compiled step costs from Inductor's on-disk cache), then the
#: compiled one: a run too short to repay the compile never builds it, and a long one pays
#: it once it has spent as much in steps (a count, not a clock: the same rounds switch on
#: every machine and run)
COMPILE_AFTER_WORK = 3e8


def step_summary(round_steps: list[str]) -> str:
    """The step each round ran, in a few words ("closed"; "closed in rounds 1-2, then
    compiled")."""
    if len(set(round_steps)) <= 1:
        return round_steps[0] if round_steps else ""
    runs: list[tuple[str, int, int]] = []
    for t, how in enumerate(round_steps, 1):
        if runs and runs[-1][0] == how:
            runs[-1] = (how, runs[-1][1], t)
        else:
            runs.append((how, t, t))
    return ", then ".join(f"{h} in round{'s' if a < b else ''} {a}{f'-{b}' if a < b else ''}"
                          for h, a, b in runs)


def bun_steinke_rho(epsilon: float, delta: float) -> float:
    """The rho with rho + 2 sqrt(rho log(1/delta)) = epsilon (the authors' rap.py get_rho)."""
    log = math.log(1 / delta)
    return (math.sqrt(log + epsilon) - math.sqrt(log)) ** 2


#: the loss below which a round's optimisation stops, and the relative improvement that
#: counts as one (the code's ReduceLROnPlateau threshold)
LOSS_TOL = 1e-8
IMPROVE_REL = 1e-7


class RAP(RelaxedMethod):
    """RAP / RAP-softmax (module docstring). ``T``: rounds; ``K``: queries per round;
    ``n_rows``: relaxed rows n'; ``softmax``; ``lr``, ``max_iters``, ``patience``: the
    optimisation; ``selection`` (b1 | alg3, the template's); ``rho_conversion`` (cks |
    bun_steinke, module docstring); ``step`` (auto | gather | columns | closed | compiled:
    ``STEPS``); ``device`` (cpu | auto); the workload ``workload`` / ``number`` / ``seed``
    / ``max_cells``."""

    def __init__(self, T: int, K: int, softmax: bool = True, n_rows: int = 1000,
                 lr: float = 0.1, max_iters: int = 5000, patience: int = 5,
                 selection: str = "b1", rho_conversion: str = "cks", step: str = DEFAULT_STEP,
                 device: str = "cpu", workload: str = "all_3way", number: int | None = None,
                 seed: int = 0, max_cells: int | str | None = None) -> None:
        if not isinstance(softmax, bool):
            raise ValueError(f"softmax={softmax!r} must be true or false")
        if rho_conversion not in RHO_CONVERSIONS:
            raise ValueError(f"rho_conversion={rho_conversion!r} is unknown; valid: "
                             f"{', '.join(RHO_CONVERSIONS)}")
        if step not in STEPS:
            raise ValueError(f"step={step!r} is unknown; valid: {', '.join(STEPS)}")
        extra = {} if step == DEFAULT_STEP else {"step": step}   # the default: the keys as before
        super().__init__(
            T=check_rounds(T), K=whole(K, "K", "queries per round"), softmax=softmax,
            n_rows=whole(n_rows, "n_rows", "relaxed rows"),
            lr=positive(lr, "lr", "Adam's learning rate"),
            max_iters=whole(max_iters, "max_iters", "steps per round"),
            patience=whole(patience, "patience", "non-improving steps allowed", 0),
            selection=check_selection(selection), rho_conversion=rho_conversion,
            device=device, workload=workload,
            number=number, seed=seed, max_cells=max_cells, **extra)

    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        import torch  # here, not with the module: planning commands import the class

        p = self.params
        qs = self.queries(data)
        true = qs.answers(data.discrete)
        budget = plan(accountant, data.n, p["T"] * p["K"], 0.5, p["selection"])
        if p["rho_conversion"] == "bun_steinke":
            rho = min(bun_steinke_rho(accountant.epsilon, accountant.delta), budget.rho)
            budget = AdaptiveBudget(rho, budget.rounds, 0.5, data.n, p["selection"])
        budget = self._begin(budget)
        self.stops_: list[str] = []
        with torch_session(rng, p["device"]) as (gen, dev):
            # not privacy noise: start rows
            W = torch.rand(p["n_rows"], int(sum(qs.sizes)), generator=gen, device=dev)
            W = (2 * W - 1).requires_grad_(True)
            cols = column_index(qs)
            index = torch.as_tensor(cols, device=dev)
            self.work_, self.step_note_, self.round_steps_ = 0, None, []
            all_answers = AnswerPlan(qs, cols, dev)

            def rows() -> torch.Tensor:
                return block_softmax(W, qs.sizes) if p["softmax"] else W

            fake = all_answers(rows())
            for t in range(p["T"]):
                t0 = time.process_time()
                for k in range(p["K"]):
                    self._measure_next(budget, true, fake, accountant, rng, f"{t + 1}.{k + 1}")
                target = torch.tensor(self.measured_, dtype=torch.float32, device=dev)
                self._project(W, rows, index[self.selected_], target, qs.sizes)
                fake = all_answers(rows())
                self.round_cpu_seconds_.append(time.process_time() - t0)
            self.rows_ = rows().detach().cpu().numpy()
        self.answers_ = np.clip(fake, 0.0, 1.0)
        self.n_queries_ = qs.n_queries
        self._keep_for_records(qs, data, rng)
        return self

    def _round_step(self, k: int, loop_ok: bool = False) -> str:
        """The step of the next round on queries of ``k`` factors (``auto``: the module
        docstring; ``loop_ok``: the rows are float32 on the CPU, as the loop needs). The
        compiled step is built the first time it is chosen; if it cannot
        be, the closed step runs and ``step_note_`` says why."""
        import torch

        how = self.params.get("step", DEFAULT_STEP)
        if how in ("auto", "loop"):
            if loop_ok and self._loop_available():
                return "loop"
            how = "closed" if how == "loop" else how
        if how == "auto":
            how = "compiled" if self.work_ >= COMPILE_AFTER_WORK else "closed"
        if how != "compiled":
            return how
        if self.step_note_:                   # it could not be built: the closed step
            return "closed"
        # compile on sizes that are all >= 2 and differ from each other and from k, so the
        # program is general in each (torch.compile specialises sizes 0 and 1 and ties
        # equal sizes together); a second call finds it built
        gen = torch.Generator().manual_seed(0)
        rows, cols, queries = (k + 9, k + 13, k + 5)
        try:
            compiled_gradient()(torch.rand(cols, rows, generator=gen),  # not privacy noise: warm-up
                                torch.randint(0, cols, (queries, k), generator=gen),
                                torch.rand(queries, generator=gen))
        except Exception as exc:    # torch.compile's errors have no common base class
            self.step_note_ = (f"torch.compile could not build the compiled step here "
                               f"({type(exc).__name__}); the closed step ran")
            return "closed"
        return how

    def _project(self, W: torch.Tensor, rows: Any, past: torch.Tensor,
                 target: torch.Tensor, sizes: tuple[int, ...]) -> None:
        """One round's relaxed projection onto the measurements (module docstring)."""
        import torch

        if not hasattr(self, "work_"):         # a round run outside fit (benches, tests)
            self.work_, self.step_note_, self.round_steps_ = 0, None, []
        how = self._round_step(past.shape[1], W.device.type == "cpu"
                               and W.dtype == torch.float32)
        self.round_steps_.append(how)
        if how == "loop":
            self._loop(W, past, target, sizes)
            self.work_ += W.shape[0] * past.shape[0] * self.steps_[-1]
            return
        if how in ("closed", "compiled"):
            sub = ActiveColumns(W, past, sizes, self.params["softmax"],
                                compiled_gradient() if how == "compiled"
                                else squared_error_gradient)
            self._descend(sub.param, lambda: sub.loss_and_grad(target), fused=True)
            sub.write_back(W)
            self.work_ += W.shape[0] * past.shape[0] * self.steps_[-1]
            return
        answer = column_answers if how == "columns" else answers

        def loss_and_grad() -> float:
            loss = ((target - answer(with_ones(rows()), past)) ** 2).sum()
            loss.backward()
            return float(loss.detach())

        self._descend(W, loss_and_grad)

    def _loop(self, W: torch.Tensor, past: torch.Tensor, target: torch.Tensor,
              sizes: tuple[int, ...]) -> None:
        """One round of :meth:`_descend`'s optimisation as one compiled loop
        (:mod:`~dpbench.methods.query_release._rap_loop`) on the columns the measured
        queries read (``ActiveColumns``; the ones row frozen), written back into W."""
        p = self.params
        softmax = p["softmax"]
        sub = ActiveColumns(W, past, sizes, softmax)
        P = sub.param.detach().numpy()               # shares sub.param's memory
        starts = np.concatenate([[0], np.cumsum(sub.sizes)]) if softmax else []
        steps, code = _rap_loop.descend(P, sub.index.cpu().numpy().astype(np.int64),
                              target.detach().cpu().numpy().astype(np.float32),
                              0 if softmax else 1, float(p["lr"]), p["max_iters"],
                              p["patience"], not softmax, LOSS_TOL, IMPROVE_REL,
                              np.asarray(starts, dtype=np.int64))
        sub.write_back(W)
        self.steps_.append(int(steps))
        self.stops_.append(self._stop_texts()[_rap_loop.STOP_REASONS[code]])

    def _loop_available(self) -> bool:
        """Whether the loop step can run here (Numba imports); if not, ``loop_note_`` says
        why and ``auto``'s torch steps run."""
        if not hasattr(self, "loop_note_"):
            self.loop_note_ = None
            try:
                import numba  # noqa: F401
            except ImportError as exc:
                self.loop_note_ = (f"Numba is not importable here ({exc}): the torch steps "
                                   "ran")
        return self.loop_note_ is None

    def _stop_texts(self) -> dict[str, str]:
        """Why a round stopped (the cap, the loss below LOSS_TOL, the plateau rule), as
        ``step_stops`` says it."""
        p = self.params
        return {"cap": f"max_iters={p['max_iters']}", "tol": f"loss < {LOSS_TOL:g}",
                "plateau": f"no improvement for {p['patience'] + 1} steps"}

    def _descend(self, param: torch.Tensor, loss_and_grad: Any, fused: bool = False
                 ) -> None:
        """Adam on ``param`` (a fresh optimiser each round, as the code; ``fused``: torch's
        one-kernel Adam, the same update rounded otherwise) until a stopping rule of the
        module docstring holds; ``loss_and_grad()`` returns the loss at ``param`` and
        leaves its gradient in ``param.grad``. Clipped to [-1, 1] after each step unless
        ``softmax``."""
        import torch

        p = self.params
        opt = torch.optim.Adam([param], lr=p["lr"], fused=fused or None)
        best, bad = float("inf"), 0
        texts = self._stop_texts()
        stop = texts["cap"]
        step = 0
        while step < p["max_iters"]:
            step += 1
            opt.zero_grad()
            value = loss_and_grad()
            if value < LOSS_TOL:
                stop = texts["tol"]
                break
            if value < best * (1 - IMPROVE_REL):
                best, bad = value, 0
            else:
                bad += 1
            if bad > p["patience"]:
                stop = texts["plateau"]
                break
            opt.step()
            if not p["softmax"]:
                with torch.no_grad():
                    param.clamp_(-1.0, 1.0)
        self.steps_.append(step)
        self.stops_.append(stop)

    def info(self) -> dict[str, Any]:
        return {**super().info(), "rounds_run": len(self.steps_),
                "stop_reason": "completed T rounds of K queries: the budget is split over "
                               "exactly 2 T K releases, so it is spent",
                "steps": self.steps_, "step_stops": self.stops_,
                "step": step_summary(self.round_steps_),
                **({"step_note": notes} if (notes := "; ".join(
                    n for n in (getattr(self, "loop_note_", None), self.step_note_) if n))
                   else {}),
                "softmax": self.params["softmax"]}
