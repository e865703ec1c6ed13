"""GEM's generator network, CTGAN's (gem.py's module docstring), in torch.

Apart from gem.py so that importing the GEM class needs no torch: a torch ``nn.Module``
subclass can only be defined once torch is imported, and commands that only plan import
the method classes to read their declarations. gem.py imports this module when it builds
a network.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn


class Residual(nn.Module):
    """CTGAN's residual block: ReLU(BN(W x + b)) concatenated with x."""

    def __init__(self, i: int, o: int) -> None:
        super().__init__()
        self.fc = nn.Linear(i, o)
        self.bn = nn.BatchNorm1d(o)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([torch.relu(self.bn(self.fc(x))), x], dim=1)


class Generator(nn.Module):
    """CTGAN's generator (gem.py's module docstring), d' logits per latent vector."""

    def __init__(self, embedding_dim: int, hidden: Sequence[int], out: int) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        dim = embedding_dim
        for h in hidden:
            layers.append(Residual(dim, h))
            dim += h
        layers.append(nn.Linear(dim, out))
        self.seq = nn.Sequential(*layers)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.seq(z)
