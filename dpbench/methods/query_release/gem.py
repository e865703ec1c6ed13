"""GEM, generative networks with the exponential mechanism (Liu, Vietri & Wu, NeurIPS 2021,
Sec. 3, Alg. 3, App. B.1; Table 2), as the authors' ``gem.py`` runs it.

The synthetic data are the output distribution of a generator network G_theta: B fixed
latent vectors z ~ N(0, I) (``batch_size`` = 1,000, drawn once, the code's
``resample = False``) are mapped to B relaxed rows, one probability vector per attribute
block (a per-attribute softmax), and a query's answer is the mean over the B rows of the
product of its columns (the expected answer of the mixture of product distributions;
:mod:`~dpbench.methods.query_release.relaxed`). The network is CTGAN's generator: a linear
layer for each ``hidden`` width followed by batch norm and ReLU, its output concatenated
with its input (residual), then a linear layer to d' logits; the paper's sizes are the
defaults, ``embedding_dim`` 512 and ``hidden`` (1024, 1024) (the authors' ``--dim 512``:
hidden = 2 x dim). Batch norm uses the batch statistics of the B rows in every call (the
network stays in training mode, as in the code), so the answers are a deterministic
function of theta and z.

T rounds of the App. B.1 template with ``alpha`` = 0.67 (Table 2): select a query by the
exponential mechanism on |q(P) - q(G)| (queries measured before are excluded, as in the
code) and measure it with Gaussian noise, clipped to [0, 1]. Then update theta, as the
code does, with a fresh Adam at ``lr`` (1e-4) and a cosine schedule down to 1e-8 over at
most ``max_iters`` (T_max = 100) steps. Each step's loss is the mean of |a~_i - q_i(G)|
over the measured queries whose current error is at least ``threshold`` (0.5) times an
exponential moving average (factor ``error_ema`` 0.5, updated once per round) of the
largest measured error at the start of each round, keeping the ``max_idxs`` (100) largest;
the update stops early when no error is above that threshold. This is how the code merges
Alg. 3's "errors at least half of the largest" with the paper's EMA of sampled errors.

Output (``output_weights``): ``ema`` (default): the answers of the generator whose
parameters are the exponential moving average (factor ``ema_beta`` 0.9) of theta over the
last ceil(T/2) rounds, starting from the first of them (the code's ``get_ema_weights``;
the paper gives no factor, the code scores 0.5, 0.9, 0.99 and the last iterate post hoc:
0.9 is the dp-query-release default); ``last``: the last iterate.

Records (``output(SyntheticTable)``): draws from the output distribution the answers
describe (Sec. 3: GEM's synthetic data is the generator's output distribution, a product
distribution per latent vector): the B relaxed rows of the output weights on the fixed
latent vectors, one categorical draw per attribute from a row's softmax block; n records
(the private row count, public under replace-one), each row giving floor or ceil of n / B
of them (the relaxed module's docstring). No fresh latent vectors are drawn: batch norm
uses the batch's statistics, so other latents would define another distribution than the
one answered. Post-processing: no budget.

``init_state`` (GEM-Pub) starts from given parameters (a pre-trained generator) instead of
the default initialisation, and from given latent vectors (under the key :data:`LATENTS`)
instead of a fresh draw; :mod:`~dpbench.methods.query_release.gem_pub` provides them. GEM's
own start (None) draws both, as before.

When the workload leaves attributes unread (the arenas' 64 marginals of <= n cells), the
fit computes only the read attributes' logits (:func:`_live_rows`): the same answers and
gradients up to float rounding, the unread blocks' weights as initialised either way.

torch is imported by the methods that compute and the network lives in _gem_network.py,
so that importing the class (as commands that only plan do) needs no torch.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Self

import numpy as np
from numpy.typing import NDArray

from dpbench import lazy
from dpbench.data.base import TabularData
from dpbench.data.queries import QuerySet
from dpbench.methods.query_release.relaxed import (
    AnswerPlan,
    RelaxedMethod,
    answers,
    block_softmax,
    column_index,
    positive,
    torch_session,
    whole,
    with_ones,
)
from dpbench.methods.query_release.template import (
    check_alpha,
    check_rounds,
    check_selection,
    plan,
)
from dpbench.privacy.accountant import Accountant

if TYPE_CHECKING:
    import torch
    from torch import nn

    from dpbench.methods.query_release._gem_network import Generator

_gem_network = lazy.module("dpbench.methods.query_release._gem_network")  # torch: when fitted

OUTPUT_WEIGHTS = ("ema", "last")
#: the key of a start state's latent vectors (B x embedding_dim), beside the network's
#: parameters (no parameter or buffer of the network has this name)
LATENTS = "latents"


def state_arrays(g: nn.Module) -> dict[str, NDArray]:
    """The generator's parameters and buffers as numpy arrays (an artifact's payload)."""
    return {k: v.detach().cpu().numpy().copy() for k, v in g.state_dict().items()}


class GEM(RelaxedMethod):
    """GEM (module docstring). ``T``: rounds; ``alpha``: the selection's share (0.67);
    ``embedding_dim``, ``hidden``: the network; ``batch_size``: B latent vectors = rows;
    ``lr``, ``max_iters``, ``max_idxs``, ``threshold``, ``error_ema``: the update;
    ``output_weights`` (ema | last), ``ema_beta``: the output; ``selection`` (b1 | alg3,
    the template's); ``device`` (cpu | auto: a GPU when present); the workload
    ``workload`` / ``number`` / ``seed`` / ``max_cells``."""

    def __init__(self, T: int, alpha: float = 0.67, embedding_dim: int = 512,
                 hidden: Sequence[int] = (1024, 1024), batch_size: int = 1000,
                 lr: float = 1e-4, max_iters: int = 100, max_idxs: int = 100,
                 threshold: float = 0.5, error_ema: float = 0.5,
                 output_weights: str = "ema", ema_beta: float = 0.9,
                 selection: str = "b1", device: str = "cpu",
                 workload: str = "all_3way", number: int | None = None, seed: int = 0,
                 max_cells: int | str | None = None, **own: Any) -> None:
        if output_weights not in OUTPUT_WEIGHTS:
            raise ValueError(f"output_weights={output_weights!r} is unknown; valid: "
                             f"{', '.join(OUTPUT_WEIGHTS)}")
        for name, v in (("ema_beta", ema_beta), ("error_ema", error_ema)):
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v < 1:
                raise ValueError(f"{name}={v!r} must lie in [0, 1)")
        if isinstance(hidden, str | bytes) or not isinstance(hidden, Sequence):
            raise ValueError(f"hidden={hidden!r} must be a list of layer widths")
        super().__init__(
            T=check_rounds(T), alpha=check_alpha(alpha),
            embedding_dim=whole(embedding_dim, "embedding_dim", "latent size"),
            hidden=[whole(h, "hidden", "layer width") for h in hidden],
            batch_size=whole(batch_size, "batch_size", "latent vectors = rows", 2),
            lr=positive(lr, "lr", "Adam's learning rate"),
            max_iters=whole(max_iters, "max_iters", "steps per round (T_max)"),
            max_idxs=whole(max_idxs, "max_idxs", "measured queries per loss"),
            threshold=positive(threshold, "threshold", "share of the EMA max error"),
            error_ema=float(error_ema), output_weights=output_weights,
            ema_beta=float(ema_beta), selection=check_selection(selection), device=device,
            workload=workload, number=number, seed=seed, max_cells=max_cells, **own)

    def network(self, out: int, rng: np.random.Generator) -> Generator:
        """A freshly initialised generator with ``out`` outputs, its initialisation drawn
        from a torch seed taken from ``rng`` (torch's global generator is left as it was)."""
        import torch

        p = self.params
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(rng.integers(2**62)))  # not privacy noise: a seed
            return _gem_network.Generator(p["embedding_dim"], p["hidden"], out)

    def generator(self, qs: QuerySet, rng: np.random.Generator, gen: torch.Generator,
                  dev: torch.device, start: Mapping[str, NDArray] | None = None
                  ) -> tuple[Generator, Callable[[], torch.Tensor], torch.Tensor, AnswerPlan,
                             torch.Tensor]:
        """(G, rows, index, answer plan, z) over ``qs``'s domain: G initialised from ``rng``
        (or loaded from ``start``'s parameters), ``rows()`` its relaxed rows (with the
        column of ones) on the B latent vectors z (``start[LATENTS]`` when given, so a
        pre-trained generator keeps the latents it was trained on; else drawn once from
        ``gen``), the queries' column index and the all-query answer plan."""
        import torch

        p = self.params
        g = self.network(int(sum(qs.sizes)), rng).to(dev)
        start = {} if start is None else dict(start)
        given = start.pop(LATENTS, None)
        if start:
            g.load_state_dict({k: torch.as_tensor(v) for k, v in start.items()})
        if given is not None:
            shape = (p["batch_size"], p["embedding_dim"])
            if tuple(given.shape) != shape:
                raise ValueError(f"start latents have shape {tuple(given.shape)}; the "
                                 f"network wants {shape} (batch_size, embedding_dim)")
            z = torch.as_tensor(given, dtype=torch.float32, device=dev)
        else:
            # not privacy noise: latents
            z = torch.randn(p["batch_size"], p["embedding_dim"], generator=gen, device=dev)
        cols = column_index(qs)
        used = read_attributes(qs)
        if len(used) == len(qs.sizes):
            def rows(full: bool = False) -> torch.Tensor:
                del full
                return with_ones(block_softmax(g(z), qs.sizes))
        else:       # some attribute no query reads: its logits are never computed (below)
            rows = _live_rows(g, z, qs.sizes, used, dev)
        return g, rows, torch.as_tensor(cols, device=dev), AnswerPlan(qs, cols, dev), z

    def init_state(self, data: TabularData, accountant: Accountant
                   ) -> Mapping[str, NDArray] | None:
        """Parameters (and optionally :data:`LATENTS`) to start from (None: the default
        initialisation and fresh latents). GEM-Pub overrides."""
        del data, accountant
        return None

    def fit(self, data: TabularData, accountant: Accountant, rng: np.random.Generator) -> Self:
        import torch

        p = self.params
        qs = self.queries(data)
        start = self.init_state(data, accountant)
        true = qs.answers(data.discrete)
        budget = self._begin(plan(accountant, data.n, p["T"], p["alpha"], p["selection"]))
        with torch_session(rng, p["device"]) as (gen, dev):
            g, rows, index, all_answers, _ = self.generator(qs, rng, gen, dev, start)
            fake = all_answers(rows()[:, :-1])
            self.initial_answers_ = fake      # before any private step (GEM-Pub's test)
            window = math.ceil(p["T"] / 2)
            ema: dict[str, torch.Tensor] | None = None
            err_ema: float | None = None
            for t in range(p["T"]):
                t0 = time.process_time()
                self._measure_next(budget, true, fake, accountant, rng, str(t + 1))
                past = index[self.selected_]
                target = torch.tensor(self.measured_, dtype=torch.float32, device=dev)
                with torch.no_grad():
                    errors = (target - answers(rows(), past)).abs()
                current = float(errors.max())
                err_ema = current if err_ema is None else \
                    p["error_ema"] * err_ema + (1 - p["error_ema"]) * current
                self.steps_.append(self._update(g, rows, past, target, errors,
                                                p["threshold"] * err_ema))
                relaxed = rows()[:, :-1]
                fake = all_answers(relaxed)
                if t >= p["T"] - window:
                    ema = _ema(ema, g, p["ema_beta"])
                self.round_cpu_seconds_.append(time.process_time() - t0)
            self.last_answers_ = fake
            if p["output_weights"] == "ema" and ema is not None:
                with torch.no_grad():
                    for name, prm in g.named_parameters():
                        prm.copy_(ema[name])
                relaxed = rows()[:, :-1]
                fake = all_answers(relaxed)
            self.state_ = state_arrays(g)
            with torch.no_grad():   # every attribute's block: the records draw each one
                self.rows_ = rows(full=True)[:, :-1].detach().cpu().numpy()
        self.answers_ = np.clip(fake, 0.0, 1.0)
        self.n_queries_ = qs.n_queries
        self._keep_for_records(qs, data, rng)
        return self

    def _update(self, g: nn.Module, rows: Any, past: torch.Tensor, target: torch.Tensor,
                errors: torch.Tensor, threshold: float, lr: float | None = None) -> int:
        """One round's optimisation (module docstring) at ``lr`` (None: the method's);
        returns the steps taken. One forward pass per step: the rows after a step give
        both the errors of every measured query (which choose the next loss's queries) and
        the next loss, as the authors' code computes them in two passes (the same values:
        the same parameters and kernels; only batch norm's running statistics, which no
        output reads, see fewer passes)."""
        import torch

        p = self.params
        opt = torch.optim.Adam(g.parameters(), lr=p["lr"] if lr is None else lr)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, p["max_iters"], eta_min=1e-8)
        out = None
        for step in range(p["max_iters"]):
            if out is not None:
                with torch.no_grad():
                    errors = (target - answers(out.detach(), past)).abs()
            keep = torch.nonzero(errors >= threshold).flatten()
            if keep.numel() == 0:
                return step
            keep = keep[errors[keep].argsort()[-p["max_idxs"]:]]
            out = rows() if out is None else out
            opt.zero_grad()
            loss = (target[keep] - answers(out, past[keep])).abs().mean()
            loss.backward()
            opt.step()
            sched.step()
            out = rows() if step + 1 < p["max_iters"] else None
        return p["max_iters"]

    def info(self) -> dict[str, Any]:
        last_gap = float(np.max(np.abs(self.last_answers_ - self.answers_)))
        return {**super().info(), "rounds_run": len(self.steps_),
                "stop_reason": "completed T rounds: the template splits the budget over "
                               "exactly T, so it is spent",
                "steps": self.steps_, "output_weights": self.params["output_weights"],
                "max_gap_ema_vs_last": last_gap}


def read_attributes(qs: QuerySet) -> list[int]:
    """The domain positions of the attributes some query of ``qs`` reads, in order."""
    return sorted({a for axes in qs.axes for a in axes})


def _live_rows(g: Generator, z: torch.Tensor, sizes: Sequence[int], used: Sequence[int],
               dev: torch.device) -> Callable[..., torch.Tensor]:
    """``rows()`` for a workload that leaves attributes unread: the output layer's logits
    of the read attributes' blocks only, in their columns of the full layout (the unread
    blocks zero). A query's answer reads only its attributes' blocks and each block has
    its own softmax, so the answers, the loss and every gradient are those of the whole
    layer's (up to float rounding: a narrower product), while an unread block's weights,
    whose gradient is exactly zero, stay as initialised either way. It can be most of the
    work: a 4,627-level attribute of Churn that no marginal of <= n cells holds was 98% of
    the output layer. ``rows(full=True)``: every block, through the whole layer (the
    records, after the fit)."""
    import torch

    off = np.concatenate([[0], np.cumsum(sizes)])
    cols = torch.as_tensor(np.concatenate([np.arange(off[a], off[a + 1]) for a in used]),
                           device=dev)
    live = tuple(int(sizes[a]) for a in used)
    trunk, last = g.seq[:-1], g.seq[-1]

    def rows(full: bool = False) -> torch.Tensor:
        if full:
            return with_ones(block_softmax(g(z), tuple(sizes)))
        logits = torch.nn.functional.linear(trunk(z), last.weight.index_select(0, cols),
                                            last.bias.index_select(0, cols))
        out = logits.new_zeros(logits.shape[0], int(off[-1]))
        return with_ones(out.index_copy(1, cols, block_softmax(logits, live)))

    return rows


def _ema(ema: dict[str, torch.Tensor] | None, g: nn.Module,
         beta: float) -> dict[str, torch.Tensor]:
    """EMA of g's parameters (the first call starts it at g's)."""
    now = {k: v.detach().clone() for k, v in g.named_parameters()}
    if ema is None:
        return now
    return {k: beta * ema[k] + (1 - beta) * now[k] for k in now}
