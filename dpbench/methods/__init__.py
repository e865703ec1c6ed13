"""Methods: one module per method, one small common interface (``base.Method``)."""
