"""Curves of known answer, to calibrate the analysis: an exact profile, and a known profile
measured with correlated errors and delete-a-group replicates like the profiler's."""

from __future__ import annotations

import math

import numpy as np

from depstat.analysis.dependency import Curve
from depstat.estimate import estimators as est


def exact_curve(offsets: np.ndarray, mi: np.ndarray, name: str = "exact") -> Curve:
    """A Curve of a profile known exactly (a source's exact MI): no error and no replicates."""
    offsets, mi = np.asarray(offsets, float), np.asarray(mi, float)
    return Curve(name, offsets, mi, np.zeros_like(mi), mi > 0, np.zeros((mi.size, 0)), np.zeros(0))


def noisy_curve(
    offsets: np.ndarray, mi: np.ndarray, se: np.ndarray, name: str = "noisy", bytes_per_token: float | None = None,
    groups: int = 32, correlation: float = 0.8, seed: int = 0,
) -> Curve:
    """A Curve of a known profile ``mi`` measured with error ``se``: ``groups`` document groups
    whose Gaussian errors are correlated across neighbouring offsets, and their delete-a-group
    replicates."""
    offsets, mi = np.asarray(offsets, float), np.asarray(mi, float)
    rng = np.random.default_rng(seed)
    z = np.empty((groups, mi.size))
    z[:, 0] = rng.standard_normal(groups)
    for i in range(1, mi.size):
        z[:, i] = correlation * z[:, i - 1] + math.sqrt(1 - correlation**2) * rng.standard_normal(groups)
    per_group = mi + math.sqrt(groups) * np.asarray(se, float) * z
    point = per_group.mean(axis=0)
    reps = ((groups * point - per_group) / (groups - 1)).T  # offsets x groups
    jk_se = est.jackknife_se(est.Replicates(point, reps, np.ones_like(reps)))
    return Curve(name, offsets, point, jk_se, point > 2 * jk_se, reps.copy(), np.ones(groups), bytes_per_token)
