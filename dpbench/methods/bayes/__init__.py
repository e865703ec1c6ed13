"""Noise-aware Bayesian GLMs from noisy PASS-GLM statistics (Kulkarni et al.)."""
