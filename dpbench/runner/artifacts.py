"""The artifact cache moved to :mod:`dpbench.artifacts`, a layer below the methods (issue 59:
the methods reach it without importing the runner); this name stays for the imports not
moved yet."""

from dpbench.artifacts import (  # noqa: F401
    ArtifactBusy,
    ArtifactContext,
    ArtifactStore,
    artifact_context,
    atomic_write_bytes,
    current_context,
    default_root,
)
