"""Function approximation by polynomials (non-private references, e.g. a loss's polynomial
surrogate): Bernstein, iterated Bernstein, minimax."""
