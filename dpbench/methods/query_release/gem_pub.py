"""GEM-Pub and GEM-Pub (reduced) (Liu, Vietri & Wu, NeurIPS 2021, Sec. 3 "public-data-assisted
setting", App. E, Fig. 2b): GEM started from a generator pre-trained without privacy on
public rows (the authors' ``gem_nondp.py``, then ``gem.py`` from its best state).

Pre-training reads only ``data.public`` (the dataset's public rows: ADULT's fixed 10%
split), never the private rows, and charges nothing: it is a function of public data and
public settings. It runs GEM's update without the mechanisms, epoch after epoch: the query
with the largest public error is added to the measured set (with its exact public answer),
then the same update as a GEM round (fresh Adam, cosine over at most ``max_iters`` steps, the
loss over the <= ``max_idxs`` largest measured errors above half the current largest
error), with a plateau schedule on the epoch's largest error over the whole workload (the
learning rate halves after ``pretrain_patience`` (100) epochs without improvement, down to
1e-6). It stops after ``pretrain_epochs`` (10,000) epochs, when that error is below 0.001,
or after ``pretrain_early_stop`` (500) epochs without improvement, and keeps the state with
the smallest error.

**Latents** (``latents``). The generator's answers are a function of its parameters *and*
of its B fixed latent vectors z, and pre-training fits the parameters to one draw of z.
``pretrained`` (default; the paper's method and the authors' ``gem.py``, which sets
``gem.fakez = gem_pub.fakez``): the private fine-tuning starts from the pre-trained
parameters on those same latents, so its first answers are the pre-trained generator's.
``fresh``: new latents drawn from the trial's generator (what dpbench did before; the
pre-trained parameters on other latents answer with a larger error: on ADULT after 100
epochs, max error 0.022 on its own latents, 0.062-0.069 on three fresh draws).

**GEM-Pub (reduced)** (``public_attributes``: the paper's 7: sex, race, relationship,
marital-status, occupation, education-num, age_10) pre-trains on the workload's marginals
that lie inside those attributes only (the authors zero the other columns of the public
rows; those never enter a query of that workload, so they are simply not read here).

The pre-trained state (the network's parameters and the latents z, under
:data:`~dpbench.methods.query_release.gem.LATENTS`) is an artifact
(``runner/artifacts.py``): keyed by the public rows' fingerprint, the domain, the workload,
the network and every pre-training setting and seed (``pretrain_seed``, not the trial's
generator: one pre-training serves every trial and eps, and both ``latents`` options), so a
grid pre-trains once. Without a runner (tests, direct use) it is computed in place.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from dpbench.artifacts import current_context
from dpbench.data.base import TabularData
from dpbench.data.queries import QuerySet, resolve_workload
from dpbench.methods.marginals.release import data_fingerprint
from dpbench.methods.query_release.gem import GEM, LATENTS, state_arrays
from dpbench.methods.query_release.relaxed import (
    answers,
    torch_session,
    whole,
)
from dpbench.privacy.accountant import Accountant

if TYPE_CHECKING:
    import pandas as pd

#: 2: the artifact holds the pre-training's latent vectors beside the weights (1: weights
#: only; such entries are not reused)
ARTIFACT_VERSION = 2
#: where the private fine-tuning's latent vectors come from (module docstring)
LATENT_CHOICES = ("pretrained", "fresh")
#: pre-training stops once the largest public error is below this (the authors' 0.001)
DONE_ERROR = 1e-3
MIN_LR = 1e-6


def public_queries(domain: Mapping[str, int], n_rows: int, params: Mapping[str, Any]
                   ) -> QuerySet:
    """The workload pre-training fits: the method's workload, restricted to the marginals
    inside ``public_attributes`` when given (GEM-Pub (reduced))."""
    cliques = resolve_workload(domain, n_rows, params["workload"], params["number"],
                               params["seed"], params["max_cells"])
    keep = params.get("public_attributes")
    if keep is not None:
        unknown = sorted(set(keep) - set(domain))
        if unknown:
            raise ValueError(f"public_attributes {unknown} are not in the data; valid: "
                             f"{', '.join(domain)}")
        cliques = [c for c in cliques if set(c) <= set(keep)]
        if not cliques:
            raise ValueError(f"no marginal of the workload lies inside public_attributes "
                             f"{list(keep)}")
    return QuerySet.build(domain, cliques)


def pretrain(public: pd.DataFrame, domain: Mapping[str, int], n_rows: int,
             params: Mapping[str, Any]) -> tuple[dict[str, NDArray], dict[str, Any]]:
    """(state, info): the generator pre-trained on the ``public`` rows (module docstring):
    its best parameters and, under ``LATENTS``, the latent vectors it was trained on.
    ``n_rows`` (the number of private rows, public under replace-one neighbours) only
    resolves a ``max_cells: n`` workload; ``params`` are GEM-Pub's."""
    import torch  # here, not with the module: planning commands import the class

    qs = public_queries(dict(domain), n_rows, params)
    true = qs.answers(public[list(qs.attributes)])
    p = params
    rng = np.random.default_rng(p["pretrain_seed"])
    with torch_session(rng, p["device"]) as (gen, dev):
        model = GEM(**{k: v for k, v in p.items() if k in GEM_KEYS})
        g, rows, index, all_answers, z = model.generator(qs, rng, gen, dev)  # whole domain
        latents = z.detach().cpu().numpy().copy()
        lr, best, best_state, since, epochs = p["lr"], np.inf, state_arrays(g), 0, 0
        sched_best, stale = np.inf, 0
        measured: list[int] = []
        t0 = time.process_time()
        fake = all_answers(rows()[:, :-1])
        while epochs < p["pretrain_epochs"]:
            epochs += 1
            gaps = np.abs(true - fake)
            q = int(np.argmax(gaps))
            if q not in measured:
                measured.append(q)
            past = index[measured]
            target = torch.tensor(true[measured], dtype=torch.float32, device=dev)
            with torch.no_grad():
                errors = (target - answers(rows(), past)).abs()
            model._update(g, rows, past, target, errors, 0.5 * float(gaps.max()), lr)
            fake = all_answers(rows()[:, :-1])
            error = float(np.max(np.abs(true - fake)))
            if error < best:
                best, best_state, since = error, state_arrays(g), 0
            else:
                since += 1
            # the plateau schedule (the code's ReduceLROnPlateau: factor 0.5, relative
            # threshold 1e-4, no cooldown)
            if error < sched_best * (1 - 1e-4):
                sched_best, stale = error, 0
            else:
                stale += 1
            if stale > p["pretrain_patience"]:
                lr, stale = max(lr * 0.5, MIN_LR), 0
            if error < DONE_ERROR or since > p["pretrain_early_stop"]:
                break
    info = {"pretrain_epochs_run": epochs, "pretrain_best_max_error": best,
            "pretrain_queries": qs.n_queries, "pretrain_marginals": qs.n_marginals,
            "pretrain_measured": len(measured), "pretrain_cpu_seconds": time.process_time() - t0}
    return {**best_state, LATENTS: latents}, info


#: GEM's own constructor parameters (the rest are GEM-Pub's)
GEM_KEYS = ("T", "alpha", "embedding_dim", "hidden", "batch_size", "lr", "max_iters",
            "max_idxs", "threshold", "error_ema", "output_weights", "ema_beta", "selection",
            "device", "workload", "number", "seed", "max_cells")


class GEMPub(GEM):
    """GEM from a generator pre-trained on public rows (module docstring).
    ``pretrain_epochs`` (10,000), ``pretrain_early_stop`` (500), ``pretrain_patience``
    (100), ``pretrain_seed`` (0), ``public_attributes`` (None = every attribute: GEM-Pub;
    the paper's 7 = GEM-Pub (reduced)), ``latents`` (pretrained | fresh: the fine-tuning's
    latent vectors); everything else as :class:`GEM`."""

    requires = frozenset({"discrete", "public_rows"})

    def __init__(self, T: int, pretrain_epochs: int = 10_000, pretrain_early_stop: int = 500,
                 pretrain_patience: int = 100, pretrain_seed: int = 0,
                 public_attributes: Sequence[str] | None = None,
                 latents: str = "pretrained", **gem: Any) -> None:
        if public_attributes is not None and (isinstance(public_attributes, str | bytes)
                                              or not isinstance(public_attributes, Sequence)):
            raise ValueError(f"public_attributes={public_attributes!r} must be a list of "
                             "attribute names or null")
        if latents not in LATENT_CHOICES:
            raise ValueError(f"latents={latents!r} is unknown; valid: "
                             f"{', '.join(LATENT_CHOICES)}")
        super().__init__(
            T, pretrain_epochs=whole(pretrain_epochs, "pretrain_epochs", "epochs"),
            pretrain_early_stop=whole(pretrain_early_stop, "pretrain_early_stop",
                                      "epochs without improvement"),
            pretrain_patience=whole(pretrain_patience, "pretrain_patience",
                                    "epochs before the learning rate halves"),
            pretrain_seed=whole(pretrain_seed, "pretrain_seed", "seed", 0),
            public_attributes=None if public_attributes is None else list(public_attributes),
            latents=latents, **gem)

    def init_state(self, data: TabularData, accountant: Accountant
                   ) -> Mapping[str, NDArray] | None:
        """The pre-trained state, from the artifact cache when a runner provides one: the
        parameters, with the pre-training's latents unless ``latents: fresh`` (then GEM
        draws new ones). Reads ``data.public`` and the public row count ``data.n`` only;
        charges nothing."""
        del accountant
        public = data.public
        if public is None or len(public) == 0:
            raise ValueError("GEM-Pub needs public rows (a dataset that provides "
                             "`public_rows`, e.g. ADULT's 10% public split)")
        domain = dict(data.domain or {})
        n = data.n
        # the fine-tuning's settings stay out of the artifact's key: one pre-training
        # serves them all
        p = {k: v for k, v in self.params.items() if k not in ("T", "output_weights",
                                                                "ema_beta", "alpha",
                                                                "selection", "error_ema",
                                                                "latents")}
        ctx = current_context()
        if ctx is None or ctx.store is None:
            state, self.pretrain_info_ = pretrain(public, domain, n, self.params)
            self.pretrain_info_ = {**self.pretrain_info_, "pretrain_cached": False}
            return self._start(state)
        fields = {"artifact": "gem_pub_pretrain", "version": ARTIFACT_VERSION,
                  "public": data_fingerprint(public, tuple(domain), domain), "n": n,
                  "settings": p}
        arrays, meta, hit = ctx.store.get_or_create(
            fields, lambda: pretrain(public, domain, n, self.params))
        self.pretrain_info_ = {k: v for k, v in meta.items() if k.startswith("pretrain_")}
        self.pretrain_info_.update(pretrain_cached=hit, pretrain_artifact=meta["artifact_key"])
        return self._start(arrays)

    def _start(self, state: Mapping[str, NDArray]) -> dict[str, NDArray]:
        """The pre-trained ``state`` as GEM's start: without its latents when the option
        says ``fresh``."""
        if self.params["latents"] == "fresh":
            return {k: v for k, v in state.items() if k != LATENTS}
        return dict(state)

    def info(self) -> dict[str, Any]:
        return {**super().info(), **self.pretrain_info_}
