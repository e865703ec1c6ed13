"""The marginal-based method yamls: valid under every profile, and consumers of one release
agree on its settings (otherwise DD-SSP and AIM-Synth would not share the cached fit)."""

from __future__ import annotations

import pytest

from dpbench.runner.execute import import_object
from dpbench.runner.grid import load_entry
from dpbench.runner.schema import choices

PROFILES = ("paper", "default", "smoke")
# release consumers that must share one cached fit: (DD-SSP yaml, others of the same release)
SHARED = {
    "ddssp": ["ddssp_logistic", "aim_synth", "aim_synth_logistic"],
    "ddssp_mst": ["ddssp_mst_logistic", "mst_synth", "mst_synth_logistic"],
    "ddssp_mixture": ["ddssp_mixture_logistic", "aim_mixture_synth",
                      "aim_mixture_synth_logistic"],
}
RELEASE_KEYS = ("model", "synth_rows", "chebyshev_radius")   # consumer-only parameters


def _params(name: str, profile: str) -> dict:
    entry = load_entry("method", name)
    return {**entry.get("params", {}), **(entry.get("profiles", {}).get(profile) or {})}


def test_every_listed_yaml_exists():
    names = set(choices("method"))
    for root, others in SHARED.items():
        assert {root, *others} <= names


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("name", [n for k, v in SHARED.items() for n in (k, *v)])
def test_yaml_builds_under_profile(name, profile):
    entry = load_entry("method", name)
    cls = import_object(entry["_target_"])
    model = cls(**_params(name, profile))
    assert cls.accounting == "zcdp"
    assert model.params["model"] == ("logistic" if name.endswith("logistic") else "linear")


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("root", list(SHARED))
def test_consumers_of_one_release_share_its_settings(root, profile):
    def release(name):
        return {k: v for k, v in _params(name, profile).items() if k not in RELEASE_KEYS}

    for other in SHARED[root]:
        assert release(other) == release(root), other
