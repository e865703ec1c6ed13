"""The authors' MWEM, PEP, GEM, GEM-Pub or RAP (iterative-dp) at one cell: the peer side of
scripts/bench_peers_qr.py.

Runs in the benchmark's own virtual environment (``.bench-peers-qr-venv``: torch 2.13.0 on
the CPU, numpy 1.26, their rdt 0.4.0) and imports nothing from dpbench. It imports the
authors' modules from their checkout, unedited, and calls them the way their scripts'
``__main__`` blocks do (``randomKway`` with ``adult_seed`` 0 for the 90/10 split, their
``QueryManager``, delta = 1/N^2, their own eps-to-rho conversion per method), from a
scratch directory holding a link to the checkout's ``Datasets/`` (their code reads and
writes relative to the working directory, so nothing is written into the checkout).
Their scripts seed nothing; this one seeds numpy's global generator, torch and ``random``
with ``--seed``, and runs on one torch thread.

GEM-Pub (``--method gem_pub``, ADULT only) is their two steps: ``gem_nondp.py``'s
pre-training on the public rows (their ``adult_seed`` 0 split's 10%, the same workload),
run once into ``--pretrained DIR`` (seeded with ``--pretrain-seed``; its ``max_epochs``,
``early_stopping`` and ``patience`` are arguments of their ``GEM_nondp.fit``, given here
as ``--pretrain-epochs``, ``--pretrain-early-stop`` and ``--pretrain-patience``: their
script leaves them at 10,000, 500 and 100), then ``gem.py --dataset_pub adult``: GEM from
that ``best.pkl``'s generator and latents (``gem.fakez = gem_pub.fakez``), as GEM above.
``--pretrain-only`` stops after the pre-training; a later run reuses DIR (a file ``done``
says the pre-training finished; a fine-tuning refuses a DIR without it).

    python bench_peers_qr_authors.py CHECKOUT WORKDIR --method gem --dataset adult-small \
        --eps 1 --T 100

Prints one JSON line: set-up / fit / scoring seconds (wall and process CPU), rounds and
optimiser steps (MWEM: multiplicative updates, PEP: projection steps, GEM / RAP: Adam
steps, from their verbose lines), N, the number of queries, and the max / mean absolute
error of the output over the whole workload (their ``get_errors``).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import json
import os
import random
import re
import sys
import time
from types import SimpleNamespace


class Clock:
    """Wall and process-CPU seconds of named phases."""

    def __init__(self) -> None:
        self.out: dict[str, float] = {}

    @contextlib.contextmanager
    def phase(self, name: str):
        w, c = time.perf_counter(), time.process_time()
        yield
        self.out[f"{name}_s"] = time.perf_counter() - w
        self.out[f"{name}_cpu_s"] = time.process_time() - c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkout")
    ap.add_argument("workdir")
    ap.add_argument("--method", choices=["mwem", "pep", "gem", "gem_pub", "rap", "rap_softmax"],
                    required=True)
    ap.add_argument("--dataset", choices=["adult-small", "adult"], required=True)
    ap.add_argument("--eps", type=float, required=True)
    ap.add_argument("--T", type=int, required=True)
    ap.add_argument("--K", type=int, default=10, help="RAP: queries per round")
    ap.add_argument("--lr", type=float, default=1e-3, help="GEM / RAP: Adam's rate")
    ap.add_argument("--max-iters", type=int, default=100,
                    help="GEM / RAP: steps per round; PEP: projection cap T_max")
    ap.add_argument("--alpha", type=float, default=0.67, help="GEM")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pretrained", help="GEM-Pub: the pre-training's folder (made if new)")
    ap.add_argument("--pretrain-only", action="store_true", help="GEM-Pub: pre-train, stop")
    ap.add_argument("--pretrain-epochs", type=int, default=10_000, help="GEM-Pub")
    ap.add_argument("--pretrain-early-stop", type=int, default=500, help="GEM-Pub")
    ap.add_argument("--pretrain-patience", type=int, default=100, help="GEM-Pub")
    ap.add_argument("--pretrain-seed", type=int, default=0, help="GEM-Pub")
    args = ap.parse_args()
    if args.method == "gem_pub" and (args.dataset != "adult" or not args.pretrained):
        ap.error("--method gem_pub runs on --dataset adult with --pretrained DIR")

    os.makedirs(args.workdir, exist_ok=True)
    os.chdir(args.workdir)
    if not os.path.exists("Datasets"):
        os.symlink(os.path.join(args.checkout, "Datasets"), "Datasets")
    sys.path.insert(0, args.checkout)

    import numpy as np
    import torch

    torch.set_num_threads(1)
    random.seed(args.seed)
    np.random.seed(args.seed)  # noqa: NPY002  (their code draws from the global generator)
    torch.manual_seed(args.seed)

    clock = Clock()
    log = io.StringIO()
    with clock.phase("import"):
        import Util.util_general as util
        from Util.data_pub_sampling import get_filters, get_proj, randomKway
        from Util.qm import QueryManager
    with clock.phase("setup"), contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        name = args.dataset.removesuffix("-small")
        proj = get_proj(args.dataset)
        split = SimpleNamespace(dataset=name, adult_seed=0)
        private, _ = get_filters(split)
        # every 3-way marginal: 35 of 7 attributes, 286 of 13 (their scripts' --workload)
        data, workloads = randomKway(name, 286, 3, seed=0, proj=proj, filter=private,
                                     args=split)
        qm = QueryManager(data.domain, workloads)
        real = qm.get_answer(data, concat=False)
        n = data.df.shape[0]
        delta = 1.0 / n**2
    run = {"mwem": run_mwem, "pep": run_pep, "gem": run_gem, "gem_pub": run_gem_pub,
           "rap": run_rap,
           "rap_softmax": functools.partial(run_rap, softmax=True)}[args.method]
    with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        fake, work = run(args, clock, data, workloads, qm, real, delta)
    if fake is None:                                   # --pretrain-only
        print(json.dumps({**clock.out, **work, "n": n, "torch": torch.__version__}))
        return
    with clock.phase("score"):
        errors = util.get_errors(real, fake)
    print(json.dumps({**clock.out, **work, "n": n, "queries": int(qm.num_queries),
                      "max_error": float(errors["max"]), "mean_error": float(errors["mean"]),
                      "torch": torch.__version__, "numpy": np.__version__,
                      "torch_threads": torch.get_num_threads()}))


def _split(flat, real):
    """A flat answer vector cut into ``real``'s per-marginal pieces."""
    import numpy as np

    cuts = np.cumsum([len(r) for r in real])[:-1]
    return np.split(np.asarray(flat, dtype=float), cuts)


def run_mwem(args, clock, data, workloads, qm, real, delta):
    """MWEM with past queries over the full domain, as mwem.py's __main__; last iterate."""
    import numpy as np
    from mwem import generate
    from Util.cdp2adp import cdp_rho
    from Util.data_pub_sampling import get_support

    with clock.phase("method_setup"):
        support, start = get_support(data)
        qm.setup_query_attr()
        qm.setup_xy(support)
        rho = cdp_rho(args.eps, delta)
        eps0 = (2 * rho) ** 0.5 / (2 * args.T) ** 0.5
    with clock.phase("fit"):
        _, last, _ = generate(support, np.concatenate(real), start, qm, data.df.shape[0],
                              args.T, eps0)
    return qm.get_answer_weights(last, concat=False), {"rounds": args.T}


def run_pep(args, clock, data, workloads, qm, real, delta):
    """PEP over the full domain, as pep.py's run_parallel; its last distribution."""
    from pep import PEP, MyMarginals

    with clock.phase("method_setup"):
        marginals = MyMarginals(data.domain, workloads)
        model = PEP(data_domain=data.domain, my_marginals=marginals, max_iters=args.max_iters)
    with clock.phase("fit"):
        weights = model.generate(data, args.T, args.eps)
    steps = sum(min(args.max_iters, 2 * (t + 1)) for t in range(args.T))
    return marginals.get_answers_weights(weights, concat=False), {"rounds": args.T,
                                                                  "steps": steps}


def run_gem(args, clock, data, workloads, qm, real, delta, start=None):
    """GEM as gem.py's __main__ (network 512 / (1024, 1024), B = 1,000, its pickles of the
    last T/2 rounds in the scratch directory); output: the expected answers of the EMA
    (0.9) of those rounds' generators, as their ``distr`` errors. ``start``: a pickled
    pre-training whose generator and latents GEM starts from (their ``--dataset_pub``)."""
    import copy

    import numpy as np
    import torch
    from gem import GEM
    from Util import util_general as util
    from Util.util_gem import get_ema_weights

    save = os.path.abspath("gem_save")
    os.makedirs(save, exist_ok=True)
    with clock.phase("method_setup"):
        gem = GEM(embedding_dim=512, gen_dim=[1024, 1024], batch_size=1000, save_dir=save)
        if start is not None:                          # gem.py's __main__, verbatim steps
            gem_pub = copy.deepcopy(gem)
            gem_pub.load(start)
            gem.generator = gem_pub.generator
            gem.fakez = gem_pub.fakez
            del gem_pub
        gem.setup_data(data.df, tuple(data.domain.attrs), data.domain,
                       overrides=["transformer"])
        eps0, _ = util.get_eps0_zCDP(args.eps, delta, args.T, alpha=args.alpha)
        keep = max(1, int(np.round(args.T * 0.5)))
    verbose = io.StringIO()
    with clock.phase("fit"), contextlib.redirect_stdout(verbose):
        gem.fit(T=args.T, eps0=eps0, sensitivity=1 / data.df.shape[0], lr=args.lr,
                eta_min=None, qm=qm, real_answers=np.concatenate(real),
                max_iters=args.max_iters, alpha=args.alpha, save_num=keep, verbose=True)
    with clock.phase("output"), torch.no_grad():
        gem.generator.load_state_dict(get_ema_weights(gem, args.T, keep, 0.9, save))
        fake = gem._get_fake_answers(gem.generate_fake_data(gem.mean, gem.std), qm)
    steps = [int(s) for s in re.findall(r"Iters: (\d+)", verbose.getvalue())]
    return _split(fake.cpu().numpy(), real), {"rounds": args.T, "steps": sum(steps),
                                              "rounds_with_steps": len(steps)}


def run_gem_pub(args, clock, data, workloads, qm, real, delta):
    """GEM-Pub: gem_nondp.py's pre-training into ``--pretrained`` unless done there, then
    :func:`run_gem` from its ``best.pkl`` (None as the answers with ``--pretrain-only``)."""
    import numpy as np
    import torch
    from gem_nondp import GEM_nondp
    from Util.data_pub_sampling import get_filters, get_proj, randomKway
    from Util.qm import QueryManager

    folder = os.path.abspath(args.pretrained)
    done = os.path.join(folder, "done")
    work: dict = {}
    if not os.path.exists(done):
        if os.path.exists(os.path.join(folder, "best.pkl")):
            sys.exit(f"{folder} holds an unfinished pre-training (no 'done'): remove it")
        os.makedirs(folder, exist_ok=True)
        random.seed(args.pretrain_seed)
        np.random.seed(args.pretrain_seed)  # noqa: NPY002
        torch.manual_seed(args.pretrain_seed)
        with clock.phase("pretrain_setup"):            # gem_nondp.py's __main__ for adult
            split = SimpleNamespace(dataset="adult", adult_seed=0)
            _, public_filter = get_filters(split)
            public, pub_workloads = randomKway("adult", 286, 3, seed=0, proj=get_proj("adult"),
                                               filter=public_filter, args=split)
            pub_qm = QueryManager(public.domain, pub_workloads)
            pub_real = pub_qm.get_answer(public, concat=False)
            pre = GEM_nondp(embedding_dim=512, gen_dim=[1024, 1024], batch_size=1000,
                            save_dir=folder)
            pre.setup_data(public.df, tuple(public.domain.attrs), public.domain)
        with clock.phase("pretrain"):
            pre.fit(lr=args.lr, eta_min=None, qm=pub_qm,
                    real_answers=np.concatenate(pub_real), resample=False, max_idxs=100,
                    max_iters=args.max_iters, max_epochs=args.pretrain_epochs,
                    early_stopping=args.pretrain_early_stop,
                    patience=args.pretrain_patience, verbose=True)
        with open(os.path.join(folder, "log.csv")) as f:   # epoch, max_error, ...
            errors = [float(line.split(",")[1]) for line in f.readlines()[1:]]
        work.update(pretrain_epochs_run=len(errors), pretrain_best_max_error=min(errors),
                    pretrain_public_rows=int(public.df.shape[0]))
        with open(done, "w") as f:
            f.write(json.dumps(work))
        random.seed(args.seed)                         # the fine-tuning's own seed again
        np.random.seed(args.seed)  # noqa: NPY002
        torch.manual_seed(args.seed)
    if args.pretrain_only:
        return None, work
    fake, fit = run_gem(args, clock, data, workloads, qm, real, delta,
                        start=os.path.join(folder, "best.pkl"))
    return fake, {**work, **fit}


def run_rap(args, clock, data, workloads, qm, real, delta, softmax=False):
    """RAP (n' = 1,000; ``softmax``: RAP-softmax), as rap.py's __main__ (its Bun-Steinke
    rho)."""
    import numpy as np
    from rap import RAP, get_rho

    with clock.phase("method_setup"):
        model = RAP(d=qm.dim, n=1000, softmax=softmax)
        model.setup_domain(data.domain)
        rho = get_rho(args.eps, delta)
    verbose = io.StringIO()
    with clock.phase("fit"), contextlib.redirect_stdout(verbose):
        model.fit(T=args.T, K=args.K, rho=rho, qm=qm, real_answers=np.concatenate(real),
                  sensitivity=1 / data.df.shape[0], lr=args.lr, max_iters=args.max_iters,
                  verbose=True)
    fake = np.clip(model.get_answers_all().cpu().numpy().astype(float), 0, 1)
    steps = [int(s) for s in re.findall(r"Steps: (\d+)", verbose.getvalue())]
    return _split(fake, real), {"rounds": args.T, "steps": sum(steps), "rho": float(rho)}


if __name__ == "__main__":
    main()
