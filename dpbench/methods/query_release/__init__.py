"""Private query release (Liu, Vietri & Wu, NeurIPS 2021, "Iterative methods for private
synthetic data"): the counting-query engine (``queries``) that its methods and the
``query_release`` task share."""
