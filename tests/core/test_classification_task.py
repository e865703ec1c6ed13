"""AUC / accuracy metrics against hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbench.tasks.classification import accuracy, auc


def test_auc_hand_computed():
    # positives score 0.35 and 0.8, negatives 0.1 and 0.4: of the 4 (pos, neg) pairs,
    # 3 are ordered correctly (0.35 > 0.1, 0.8 > 0.1, 0.8 > 0.4) -> AUC = 3/4
    scores = np.array([0.1, 0.4, 0.35, 0.8])
    assert auc(np.array([0, 0, 1, 1]), scores) == pytest.approx(0.75)
    assert auc(np.array([-1, -1, 1, 1]), scores) == pytest.approx(0.75)
    # a tie between a positive and a negative counts 1/2: pairs (0.5 vs 0.5) and (0.9 > 0.5)
    assert auc(np.array([0, 1, 1]), np.array([0.5, 0.5, 0.9])) == pytest.approx(0.75)
    assert math.isnan(auc(np.array([1, 1]), np.array([0.2, 0.3])))


def test_accuracy_uses_sign_of_score():
    y = np.array([-1, -1, 1, 1])
    assert accuracy(y, np.array([-2.0, 0.5, 0.1, -0.3])) == pytest.approx(0.5)
    assert accuracy(np.array([0, 0, 1, 1]), np.array([-2.0, -0.5, 0.1, 0.3])) == 1.0


def test_more_than_two_labels_rejected():
    with pytest.raises(ValueError, match="binary"):
        auc(np.array([0, 1, 2]), np.array([0.1, 0.2, 0.3]))
