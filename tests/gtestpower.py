"""Test helper: the power of a G-test, so the statistical exactness tests of chapters 8–10
(``test_block``, ``test_multidraft``, ``test_trees``) can assert it before they rely on it."""

from __future__ import annotations

import numpy as np
from scipy import stats as sps


def power_of_gtest(p0: np.ndarray, p1: np.ndarray, n: int, level: float) -> float:
    """Power of the G-test of H0: p0 at ``level`` when the data follow p1 (non-central χ²
    approximation with the smaller of the noncentralities 2n·KL and n·χ²)."""
    m = p0 > 0
    kl = float(np.sum(np.where(m & (p1 > 0), p1 * np.log(np.where(m & (p1 > 0), p1, 1)
                                                          / np.where(m, p0, 1)), 0.0)))
    chi = float(np.sum(np.where(m, (p1 - p0) ** 2 / np.where(m, p0, 1), 0.0)))
    dof = int(m.sum()) - 1
    return float(sps.ncx2.sf(sps.chi2.isf(level, dof), dof, min(2 * n * kl, n * chi)))
