"""Every privacy noise draw in ``dpbench/methods`` goes through a recording primitive.

The privacy audit prices what :mod:`dpbench.privacy.noise` recorded while drawing, so a draw
made anywhere else would escape it. This test reads every module of ``dpbench/methods`` and
fails on (a) a call of a random-draw function or method (numpy ``Generator`` /
``RandomState``, torch, JAX, scipy's ``rvs``; numpyro's ``sample`` declares a model's
variable and is not a draw) whose statement's lines (or a comment line right above it) do not carry
the marker ``# not privacy noise`` (a seed, a synthetic row sampled from a released model, an MCMC
proposal, a latent draw of a generator network), (b) a trace record written by a method
(``draws.record``) and (c) an import of the unrecorded mechanisms of
``dpbench.privacy.mechanisms`` or of ``dpbench.privacy.draws`` itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import dpbench

METHODS = Path(dpbench.__file__).parent / "methods"
MARKER = "# not privacy noise"
#: names of calls that draw random numbers (numpy Generator / RandomState, torch, JAX)
DRAWS = frozenset({
    "normal", "standard_normal", "laplace", "gumbel", "exponential", "standard_exponential",
    "choice", "permutation", "permuted", "shuffle", "integers", "random", "random_sample",
    "uniform", "binomial", "poisson", "geometric", "beta", "gamma", "multinomial",
    "multivariate_normal", "dirichlet", "logistic", "randn", "rand", "randint", "randperm",
    "normal_", "uniform_", "bernoulli", "categorical", "rvs", "sample", "standard_t",
    "truncated_normal", "exponential_", "geometric_", "random_", "cauchy_"})
#: unrecorded draws a method must not import
RAW_MECHANISMS = frozenset({"gaussian_mechanism", "laplace_mechanism",
                            "symmetric_gaussian_matrix", "exponential_mechanism"})


def _name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def violations(source: str, where: str) -> list[str]:
    """Lines of ``source`` that draw, record or import outside the primitives."""
    lines = source.splitlines()
    tree = ast.parse(source)
    statement = {}                 # each call -> the innermost statement holding it
    for stmt in ast.walk(tree):
        if isinstance(stmt, ast.stmt):
            for child in ast.walk(stmt):
                if isinstance(child, ast.Call):
                    statement[child] = stmt     # inner statements are walked later
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = _name(node.func)
            # the statement's lines, and a comment line right above it
            stmt = statement.get(node, node)
            above = lines[stmt.lineno - 2] if stmt.lineno > 1 else ""
            span = "\n".join([above if above.strip().startswith("#") else "",
                              *lines[stmt.lineno - 1:stmt.end_lineno]])
            if name == "record" and isinstance(node.func, ast.Attribute) and \
                    _name(node.func.value) == "draws":
                found.append(f"{where}:{node.lineno}: a method writes a trace record")
            elif name in DRAWS and isinstance(node.func, ast.Attribute) and \
                    _name(node.func.value) not in ("noise", "numpyro") and MARKER not in span:
                found.append(f"{where}:{node.lineno}: raw random draw `{name}` without "
                             f"'{MARKER}'")
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = {a.name for a in node.names}
            if node.module == "dpbench.privacy.mechanisms" and names & RAW_MECHANISMS:
                found.append(f"{where}:{node.lineno}: imports an unrecorded mechanism "
                             f"{sorted(names & RAW_MECHANISMS)}")
            if (node.module == "dpbench.privacy" and "draws" in names) or \
                    node.module == "dpbench.privacy.draws":
                found.append(f"{where}:{node.lineno}: imports the trace writer")
    return found


def test_no_raw_privacy_noise_in_methods() -> None:
    found = []
    for path in sorted(METHODS.rglob("*.py")):
        found += violations(path.read_text(), str(path.relative_to(METHODS.parent)))
    assert not found, "\n".join(found)


@pytest.mark.parametrize("line, caught", [
    ("x = v + rng.normal(0.0, s, size=3)", True),
    ("x = v + rng.normal(0.0, s, size=3)  # not privacy noise: a row sampler", False),
    ("# not privacy noise: a seed\nk = int(rng.integers(2**31))", False),
    ("# a seed\nk = int(rng.integers(2**31))", True),
    ("z = torch.randn(4, 2, generator=g)", True),
    ("k = jax.random.normal(key, (3,))", True),
    ("rows = np.random.default_rng(1).choice(5, 2)", True),
    ("draws.record('gaussian', 'x', scale=1.0, sensitivity=1.0, relation='add_remove')",
     True),
    ("from dpbench.privacy.mechanisms import gaussian_mechanism", True),
    ("from dpbench.privacy import draws", True),
    ("from dpbench.privacy.mechanisms import exponential_mechanism_rho", False),
    ("y = noise.gaussian(v, s, rng, sensitivity=1.0, relation='add_remove', label='x')",
     False),
])
def test_the_scan_catches_what_it_should(line: str, caught: bool) -> None:
    """The scan on planted lines: raw draws of numpy, torch and JAX, a record, the raw
    mechanisms; not a marked line, a pricing function or a primitive."""
    assert bool(violations(line + "\n", "planted")) == caught
