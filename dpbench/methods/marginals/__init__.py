"""Marginal-based mechanisms (AIM, MST) on private-pgm (mbi 2.x) and their workloads."""
