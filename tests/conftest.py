"""Shared pytest configuration for the specmath test suite.

Hypothesis runs derandomized (a fixed example stream, so CI is reproducible) with no
deadline (the 2-core CI machine is shared); set ``HYPOTHESIS_PROFILE=explore`` to search
with fresh random examples and more of them.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", deadline=None, derandomize=True, max_examples=60,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("explore", deadline=None, max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def rng() -> np.random.Generator:
    """A fixed-seed generator: every statistical test in the suite is reproducible."""
    return np.random.default_rng(20261129)


@pytest.fixture(scope="module")
def tiny_pair():
    """(target, draft): two tiny random Qwen2 models (``tests/tinymodels.py``), one thread."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from tinymodels import tiny_qwen, torch_threads

    with torch_threads(1):
        yield tiny_qwen(0), tiny_qwen(1)
