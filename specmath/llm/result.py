"""The result of one generation and its statistics (tokens, acceptances, Σ min(p, q), times).

Chapter 7 reads it; every loop of :mod:`specmath.llm` returns one.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class GenerationResult:
    """What one generation did.

    Attributes
    ----------
    tokens : list of int
        The new token ids (prompt excluded), at most ``max_new_tokens``.
    accepted : list of int
        Accepted draft tokens in each iteration (empty for the autoregressive baseline).
    drafted : list of int
        Draft tokens proposed in each iteration (``k`` except near ``max_new_tokens``).
    alpha_by_position : list of list of float
        For each iteration, Σₓ min(p, q) at each drafted position, from the logits the loop
        computed anyway (at temperature 0: 1 if the two argmaxes agree, else 0). Positions
        after the first rejection are included; their contexts hold rejected draft tokens,
        not the output text. Position i was *reached* (its draft was actually checked) iff
        i ≤ accepted of that iteration: see :attr:`alpha_reached`.
    target_calls, draft_calls : int
        Forward passes of each model (the prompt prefill included).
    time_s, target_time_s, draft_time_s : float
        Wall-clock seconds for the whole call, and inside each model's forward passes.
    target_log, draft_log : list of (int, float)
        For every forward pass: tokens fed and seconds (the first one is the prompt
        prefill). The cost of a pass scoring m tokens, measured inside real runs.
    k, temperature : the settings used.
    path : the loop that ran ("eager", "device", "static", "static+compile"; see
        :data:`PATHS`). On the device paths the per-pass times and logs stay empty (timing
        each pass would need a synchronisation).
    """

    tokens: list[int] = field(default_factory=list)
    accepted: list[int] = field(default_factory=list)
    drafted: list[int] = field(default_factory=list)
    alpha_by_position: list[list[float]] = field(default_factory=list)
    target_calls: int = 0
    draft_calls: int = 0
    time_s: float = 0.0
    target_time_s: float = 0.0
    draft_time_s: float = 0.0
    target_log: list[tuple[int, float]] = field(default_factory=list, repr=False)
    draft_log: list[tuple[int, float]] = field(default_factory=list, repr=False)
    k: int = 0
    temperature: float = 0.0
    path: str = "eager"

    @property
    def tokens_per_iteration(self) -> list[int]:
        """N for each iteration: accepted draft tokens plus the one the target adds."""
        return [a + 1 for a in self.accepted]

    @property
    def tokens_per_second(self) -> float:
        return len(self.tokens) / self.time_s if self.time_s > 0 else float("nan")

    @property
    def acceptance_rate(self) -> float:
        """Accepted ÷ drafted tokens (what vLLM calls the draft acceptance rate)."""
        d = sum(self.drafted)
        return sum(self.accepted) / d if d else float("nan")

    @property
    def alpha_sum_min(self) -> float:
        """Mean of Σ min(p, q) over every drafted position, reached or not (ch. 7).

        Includes positions after an iteration's first rejection, whose contexts contain
        rejected draft tokens; :attr:`alpha_reached` averages only the checked ones.
        """
        vals = [a for row in self.alpha_by_position for a in row]
        return sum(vals) / len(vals) if vals else float("nan")

    @property
    def alpha_reached(self) -> float:
        """Mean of Σ min(p, q) over the *reached* drafted positions only (ch. 7): in each
        iteration the first ``accepted + 1`` positions (all, if every draft was accepted),
        whose contexts are prefixes of the output text."""
        vals = [a for acc, row in zip(self.accepted, self.alpha_by_position, strict=True)
                for a in row[:acc + 1]]
        return sum(vals) / len(vals) if vals else float("nan")
