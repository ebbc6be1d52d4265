"""specmath: the mathematics of speculative decoding, verified.

The numpy-only core behind the course *The Mathematics of Speculative Decoding*.
Conventions throughout: ``p`` is the **target** model's next-token distribution, ``q`` the
**draft**'s (Chen et al. 2023 swap the letters); ``α`` the acceptance probability; ``k``
the number of drafted tokens per iteration; ``c`` how many times faster the draft is than
the target (Leviathan et al.'s cost coefficient is 1/c). Distributions are numpy arrays
with the vocabulary on the last axis; functions broadcast over leading axes.

Real language models live in :mod:`specmath.llm` (imports torch and transformers).
"""

from . import costmodel, markov_tokens, pitfalls, positional, stats, temperature, toy, tv
from ._validate import SUM_TOL
from .acceptance import (
    NAIVE_RULES,
    acceptance_probability,
    naive_output_distribution,
    naive_step,
    output_distribution,
    residual_distribution,
    speculative_step,
)
from .distributions import entropy, mix, softmax, top1_agreement, tv_distance
from .simulation import simulate_tokens_per_iteration
from .speedup import (
    acceptance_rate_from_alpha,
    alpha_from_acceptance_rate,
    alpha_from_mean_tokens,
    expected_tokens,
    leviathan_walltime_improvement,
    mean_tokens_from_alpha,
    optimal_k,
    optimal_k_continuous,
    speedup,
    speedup_with_verification_cost,
    tokens_per_iteration_pmf,
)

__version__ = "0.1.0"

__all__ = [
    "SUM_TOL",
    "NAIVE_RULES",
    "softmax",
    "tv_distance",
    "mix",
    "entropy",
    "top1_agreement",
    "acceptance_probability",
    "residual_distribution",
    "output_distribution",
    "speculative_step",
    "naive_step",
    "naive_output_distribution",
    "expected_tokens",
    "tokens_per_iteration_pmf",
    "speedup",
    "speedup_with_verification_cost",
    "leviathan_walltime_improvement",
    "optimal_k",
    "optimal_k_continuous",
    "acceptance_rate_from_alpha",
    "alpha_from_acceptance_rate",
    "mean_tokens_from_alpha",
    "alpha_from_mean_tokens",
    "simulate_tokens_per_iteration",
    "costmodel",
    "markov_tokens",
    "pitfalls",
    "positional",
    "stats",
    "temperature",
    "toy",
    "tv",
]
