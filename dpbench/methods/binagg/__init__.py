"""BinAgg (Lin, Slavkovic & Bhoomireddy): PrivTree bins, bias-corrected DP regression
with confidence intervals, and synthetic data with the same guarantee."""

from dpbench.methods.binagg.method import BinAgg, BinAggSynth, split_budget

__all__ = ["BinAgg", "BinAggSynth", "split_budget"]
