"""AIM synthetic data as a synthetic-data method (BinAgg paper, Table 3 "AIM" column).

No second AIM and no second fit: this is the marginals slice's AIM-Synth (same release,
zCDP accounting, artifact cache, OLS on the sampled rows), whose ``synthetic_`` holds the
sampled records decoded by the dataset's encoding (for the UCI loaders: bin midpoints /
original levels, ``dpbench.data.uci.discretize``). The name stays so that
``conf/method/aim_tabular.yaml``'s target, and hence its stored trial keys, are unchanged.
"""

from __future__ import annotations

from dpbench.methods.regression.aim_synth import AIMSynth

AIMSyntheticData = AIMSynth
