"""Private query release (Liu, Vietri & Wu, NeurIPS 2021, "Iterative methods for private
synthetic data"): the counting-query engine (``queries``) that its methods and the
``query_release`` task share, the App. B.1 adaptive-measurement privacy template
(``template``), the full-domain distribution and base of the histogram methods
(``histogram``), MWEM with and without past-query replay (``mwem``), PEP (``pep``) and
DualQuery (``dualquery``: multiplicative weights over the queries, MIP best responses)."""
