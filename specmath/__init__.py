"""specmath: the mathematics of speculative decoding, verified.

The numpy-only core behind the course *The Mathematics of Speculative Decoding*.
Conventions throughout: ``p`` is the **target** model's next-token distribution, ``q`` the
**draft**'s (Chen et al. 2023 swap the letters); ``α`` the acceptance probability; ``k``
the number of drafted tokens per iteration; ``c`` how many times faster the draft is than
the target (Leviathan et al.'s cost coefficient is 1/c). Distributions are numpy arrays
with the vocabulary on the last axis. The distribution functions (``acceptance_probability``,
``residual_distribution``, ``output_distribution``, ``tv_distance``, ``mix``, ...) and the
formulas in α, k, c broadcast over leading axes; the verification steps
(``speculative_step``, ``naive_step``) take one sequence's rows, shapes (k+1, V) and (k, V).
Probability rows may be float64, float32, float16 or bfloat16-valued, as engines produce
them; the sum tolerance scales with their precision (``_validate.sum_tolerance``).

Real language models live in :mod:`specmath.llm` (imports torch and transformers).
"""

from . import (
    adaptive,
    batching,
    costmodel,
    engines,
    markov_tokens,
    pitfalls,
    positional,
    serving,
    stats,
    temperature,
    toy,
    trees,
    tv,
)
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
from .block import (
    BLOCK_RULES,
    accepted_length_pmf,
    accepted_upper_bound,
    block_output_distribution,
    block_step,
    block_weights,
    broken_block_step,
    expected_accepted,
    sequence_distribution,
)
from .distributions import entropy, mix, softmax, top1_agreement, tv_distance
from .engines import (
    ENGINE_METRICS,
    best_residual_output,
    engine_metrics,
    greedy_draft_acceptance,
    greedy_draft_output_distribution,
    greedy_draft_step,
    lenient_acceptance,
    lenient_output_distribution,
    lenient_step,
    mean_tokens_from_metric,
    mismatched_output_distribution,
    repetition_penalty,
    top_k_filter,
    top_p_filter,
    two_token_joint,
    typical_acceptance,
    typical_output_distribution,
    typical_step,
    typical_threshold,
)
from .multidraft import (
    MULTIDRAFT_RULES,
    broken_multidraft_step,
    multidraft_acceptance,
    multidraft_ot_ceiling,
    multidraft_ot_ceiling_cut,
    multidraft_output_distribution,
    multidraft_step,
)
from .simulation import simulate_tokens_per_iteration
from .speedup import (
    acceptance_rate_from_alpha,
    alpha_from_acceptance_rate,
    alpha_from_mean_tokens,
    expected_tokens,
    leviathan_walltime_improvement,
    mean_tokens_from_alpha,
    operations_factor,
    optimal_k,
    optimal_k_continuous,
    speedup,
    speedup_with_verification_cost,
    tokens_per_iteration_pmf,
)
from .trees import (
    best_tree,
    broken_tree_step,
    rank_acceptance,
    tree_expected_accepted,
    tree_expected_accepted_exact,
    tree_step,
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
    "BLOCK_RULES",
    "block_step",
    "block_weights",
    "broken_block_step",
    "block_output_distribution",
    "sequence_distribution",
    "accepted_length_pmf",
    "expected_accepted",
    "accepted_upper_bound",
    "block",
    "expected_tokens",
    "tokens_per_iteration_pmf",
    "speedup",
    "speedup_with_verification_cost",
    "leviathan_walltime_improvement",
    "operations_factor",
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
    "adaptive",
    "batching",
    "serving",
    "trees",
    "MULTIDRAFT_RULES",
    "multidraft_step",
    "broken_multidraft_step",
    "multidraft_acceptance",
    "multidraft_output_distribution",
    "multidraft_ot_ceiling",
    "multidraft_ot_ceiling_cut",
    "rank_acceptance",
    "tree_expected_accepted",
    "tree_expected_accepted_exact",
    "best_tree",
    "tree_step",
    "broken_tree_step",
    "engines",
    "greedy_draft_step",
    "greedy_draft_acceptance",
    "greedy_draft_output_distribution",
    "mismatched_output_distribution",
    "two_token_joint",
    "top_k_filter",
    "top_p_filter",
    "repetition_penalty",
    "best_residual_output",
    "lenient_acceptance",
    "lenient_output_distribution",
    "lenient_step",
    "typical_threshold",
    "typical_acceptance",
    "typical_output_distribution",
    "typical_step",
    "ENGINE_METRICS",
    "engine_metrics",
    "mean_tokens_from_metric",
]
