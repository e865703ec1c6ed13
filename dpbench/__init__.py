"""dpbench: reproduce DP papers on equal terms."""
