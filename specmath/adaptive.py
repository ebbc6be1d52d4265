"""Adaptive draft length: the oracle bound, threshold rules, transformers' schedules (ch. 11).

Along a recorded greedy agreement string (chapter 7's traces: ``agree[t]`` says whether the
draft's and the target's argmax agree at position t of the target's greedy text, and
``q_top[t]`` is the draft's top probability there) every draft-length policy can be
replayed exactly: at temperature 0 the emitted text is the target's whatever the policy,
so only the iteration boundaries and the costs change. A policy decides, at the start of
an iteration at position s, how many tokens d to draft; the target accepts the leading
agreeing ones and adds its own token, so N = (leading ones of agree[s : s+d]) + 1.

Costs are in target steps: ``draft_passes / c + V(d)``, with ``V`` an array indexed by the
number of drafted tokens (V[0] = 1). numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._validate import as_count, as_generator, as_int, as_positive, as_probability
from .speedup import _expected_tokens

__all__ = [
    "HF_DEFAULTS",
    "oracle_speedup",
    "Replay",
    "replay_fixed",
    "replay_threshold",
    "replay_oracle",
    "replay_hf_heuristic",
    "replay_hf_confidence",
    "hf_roc_threshold",
    "aggregate_speedup",
    "bootstrap_ratio",
    "synthetic_traces",
    "threshold_decode_markov",
]


#: transformers' assisted-generation defaults as read in its source (``GenerationConfig``'s
#: defaults in ``generation/configuration_utils.py``); ``tests/test_serving.py`` compares
#: them with the installed transformers when it is present.
HF_DEFAULTS = {
    "transformers_version": "5.24.0",
    "num_assistant_tokens": 20,
    "num_assistant_tokens_schedule": "constant",
    "assistant_confidence_threshold": 0.4,
    "roc_cost_false_negative_weight": 3,
    "roc_min_samples": 5,
}


def oracle_speedup(alpha, c, k_max=None):
    """Speedup of the oracle that drafts exactly the tokens that will be accepted (ch. 11).

    Under chapter 4's i.i.d. model an iteration drafts A ∧ K tokens, A ~ Geometric
    (P(A = a) = α^a (1 − α)), all accepted, and the target adds one: tokens E[N](α, K),
    cost 1 + (E[N] − 1)/c (no draft is wasted). So S = E[N] / (1 + (E[N] − 1)/c), and with
    no cap (``k_max=None``) E[N] = 1/(1 − α): S = 1 / (1 − α + α/c) (eq. ch11-oracle).
    """
    a = as_probability(alpha, "alpha")
    cc = as_positive(c, "c")
    if k_max is None:
        with np.errstate(divide="ignore"):
            en = np.where(a < 1, 1.0 / np.where(a < 1, 1 - a, 1.0), np.inf)
        with np.errstate(invalid="ignore"):
            s = np.where(a < 1, 1.0 / (1.0 - a + a / cc), cc)
        return s if np.ndim(s) else float(s)
    kk = as_count(k_max, "k_max")
    en = _expected_tokens(a, kk)
    s = en / (1.0 + (en - 1.0) / cc)
    return s if np.ndim(s) else float(s)


@dataclass(frozen=True)
class Replay:
    """One replayed decode: per iteration N, drafted tokens d and draft passes."""

    N: np.ndarray
    drafted: np.ndarray
    passes: np.ndarray

    def cost(self, c, V) -> float:
        """Total time in target steps: Σ passes/c + V[d]."""
        cc = float(as_positive(c, "c"))
        Va = _V(V, int(self.drafted.max(initial=0)))
        return float(self.passes.sum() / cc + Va[self.drafted].sum())

    @property
    def tokens(self) -> int:
        return int(self.N.sum())


def _V(V, d_max: int) -> np.ndarray:
    Va = as_positive(V, "V", allow_inf=False)
    Va = np.atleast_1d(Va).astype(float)
    if Va.ndim != 1:
        raise ValueError("V must be a number or a 1-D array indexed by the number of drafts")
    if Va.size == 1:
        return np.full(d_max + 1, float(Va[0]))
    if Va.size <= d_max:
        raise ValueError(f"V must cover every drafted length: it has {Va.size} entries "
                         f"(d = 0 … {Va.size - 1}) but the replay drafted {d_max}")
    return Va


def _strings(agree, q_top=None):
    a = np.asarray(agree)
    if a.ndim != 1 or (a.size and not np.isin(a, (0, 1)).all()):
        raise ValueError("agree must be a 1-D sequence of 0/1 (one per text position)")
    a = a.astype(bool)
    if q_top is None:
        return a, None
    q = as_probability(q_top, "q_top")
    if q.shape != a.shape:
        raise ValueError(f"q_top must have one entry per position of agree ({a.size}); got "
                         f"shape {q.shape}")
    return a, q


def _runs(a: np.ndarray) -> np.ndarray:
    run = np.zeros(a.size + 1, dtype=np.int64)
    for t in range(a.size - 1, -1, -1):
        run[t] = run[t + 1] + 1 if a[t] else 0
    return run


def _replay(a: np.ndarray, choose) -> Replay:
    """Generic replay: ``choose(s, history) -> (d, passes)``."""
    run = _runs(a)
    L = a.size
    Ns, ds, ps = [], [], []
    s = 0
    while s < L:
        d_req, p_req = choose(s, Ns, ds)
        d = max(0, min(int(d_req), L - s - 1))
        p = int(p_req) if d == int(d_req) else d    # cut short by the end of the text
        n = min(int(run[s]), d) + 1
        Ns.append(n)
        ds.append(d)
        ps.append(max(p, d))
        s += n
    return Replay(np.array(Ns, dtype=np.int64), np.array(ds, dtype=np.int64),
                  np.array(ps, dtype=np.int64))


def replay_fixed(agree, k) -> Replay:
    """Greedy speculative decoding with a fixed draft length k (chapter 7's replay)."""
    a, _ = _strings(agree)
    kk = as_int(k, "k", minimum=0)
    return _replay(a, lambda s, N, d: (kk, kk))


def replay_threshold(agree, q_top, h, k_max) -> Replay:
    """The threshold rule: draft while the draft's top probability is ≥ h, at most k_max.

    At position t the draft's forward pass gives q_t; if max q_t < h the rule stops
    *before* drafting t (the target produces t) — that pass is charged. A stopping time
    of the draft's own information, so the output law is unchanged (ch. 11, theorem
    ch11-thm-stopping). Uses ``q_top`` along the target's text for every drafted position
    (exact up to the first rejection; after it only the number of wasted drafts depends on
    it).
    """
    a, q = _strings(agree, q_top)
    hh = float(as_probability(h, "h"))
    K = as_int(k_max, "k_max", minimum=0)
    ok = q >= hh
    run_ok = _runs(ok)

    def choose(s, N, d):
        dd = min(int(run_ok[s]), K)
        return dd, dd + (1 if dd < K else 0)
    return _replay(a, choose)


def replay_oracle(agree, k_max=None) -> Replay:
    """The oracle: drafts exactly the tokens the target will accept (no wasted draft)."""
    a, _ = _strings(agree)
    run = _runs(a)
    K = a.size if k_max is None else as_int(k_max, "k_max", minimum=0)
    return _replay(a, lambda s, N, d: (min(int(run[s]), K), min(int(run[s]), K)))


def replay_hf_heuristic(agree, k0: int = HF_DEFAULTS["num_assistant_tokens"]) -> Replay:
    """transformers' "heuristic" schedule: start at k0; +2 if every draft was accepted, else −1 (≥ 1).

    ``AssistedCandidateGenerator.update_candidate_strategy`` (transformers 5.24,
    ``generation/candidate_generator.py``).
    """
    a, _ = _strings(agree)
    k = [as_int(k0, "k0", minimum=1)]

    def choose(s, N, d):
        if N:
            if N[-1] == d[-1] + 1 and d[-1] > 0:
                k[0] += 2
            else:
                k[0] = max(1, k[0] - 1)
        return k[0], k[0]
    return _replay(a, choose)


def hf_roc_threshold(probs, matches) -> float:
    """transformers' adapted confidence threshold: argmin of FPR + 3 FNR over the ROC.

    ``probs``: the draft's probabilities of its drafted tokens; ``matches``: 1 if accepted,
    0 for the first rejected one. Thresholds are the distinct probabilities (a token is
    "positive" when its probability is ≥ the threshold) plus +inf, as in scikit-learn's
    ``roc_curve``; ties go to the largest threshold (its first minimum).
    """
    p = np.asarray(probs, dtype=float)
    y = np.asarray(matches, dtype=bool)
    if p.shape != y.shape or p.ndim != 1:
        raise ValueError("probs and matches must be 1-D of the same length")
    P, Nn = y.sum(), (~y).sum()
    if P == 0 or Nn == 0:
        raise ValueError("matches must contain both 0 and 1")
    th = np.concatenate([[np.inf], np.unique(p)[::-1]])
    pred = p[None, :] >= th[:, None]
    tpr = (pred & y).sum(1) / P
    fpr = (pred & ~y).sum(1) / Nn
    return float(th[np.argmin(fpr + 3 * (1 - tpr))])


def replay_hf_confidence(agree, q_top, k: int = HF_DEFAULTS["num_assistant_tokens"],
                         threshold: float = HF_DEFAULTS["assistant_confidence_threshold"],
                         adapt: bool = True) -> tuple[Replay, float]:
    """transformers' default: k = 20 constant, stop *after* a draft with probability < threshold.

    ``ConfidenceCriteria`` (``generation/stopping_criteria.py``) ends the draft's generate
    call once the last drafted token's probability is below the threshold (that token is
    kept). With ``adapt`` the threshold is re-fitted after every iteration by
    :func:`hf_roc_threshold` once more than 5 probabilities with both outcomes are stored
    (``update_candidate_strategy``). Greedy drafts: the token's probability is q_top.
    Returns the replay and the final threshold.
    """
    a, q = _strings(agree, q_top)
    K = as_int(k, "k", minimum=1)
    th = [float(as_probability(threshold, "threshold"))]
    probs: list[float] = []
    matches: list[int] = []
    start = [0]

    def choose(s, N, d):
        if N and adapt:
            s0, d0, n0 = start[0], d[-1], N[-1]
            probs.extend(q[s0:s0 + d0].tolist())
            matches.extend([1] * (n0 - 1))
            if len(probs) > len(matches):
                matches.append(0)
            del probs[len(matches):]
            if len(probs) > 5 and 0 in matches and 1 in matches:
                th[0] = hf_roc_threshold(probs, matches)
        start[0] = s
        dd = 0
        while dd < K:
            dd += 1
            if q[min(s + dd - 1, q.size - 1)] < th[0]:
                break
        return dd, dd
    return _replay(a, choose), th[0]


def aggregate_speedup(replays, c, V) -> float:
    """Ratio of means over prompts: Σ tokens (plain steps) ÷ Σ speculative time."""
    return float(sum(r.tokens for r in replays) / sum(r.cost(c, V) for r in replays))


def bootstrap_ratio(tokens, cost_a, cost_b, n_boot: int = 2000, level: float = 0.95,
                    rng=None) -> tuple[float, float, float]:
    """Speedup of policy a over policy b, Σ cost_b / Σ cost_a, with a bootstrap over prompts.

    Arrays have one entry per prompt (tokens are the same for both policies). Returns the
    point estimate and the percentile interval at ``level``.
    """
    cb = np.asarray(cost_b, float)
    ca = np.asarray(cost_a, float)
    if ca.shape != cb.shape or ca.ndim != 1 or ca.size < 2:
        raise ValueError("cost_a and cost_b must be 1-D arrays of the same length ≥ 2")
    rng = as_generator(np.random.default_rng(0) if rng is None else rng)
    idx = rng.integers(0, ca.size, (as_int(n_boot, "n_boot", minimum=1), ca.size))
    r = cb[idx].sum(1) / ca[idx].sum(1)
    lv = float(as_probability(level, "level"))
    lo, hi = np.quantile(r, [(1 - lv) / 2, (1 + lv) / 2])
    return float(cb.sum() / ca.sum()), float(lo), float(hi)


def ratio_and_prompt_range(cost_a, cost_b) -> tuple[float, float, float]:
    """Speedup of policy a over policy b, Σ cost_b / Σ cost_a, and its range over prompts.

    Chapter 11 (adaptive draft length). Arrays have one entry per prompt. Returns
    ``(Σ cost_b / Σ cost_a, min_i cost_b,i / cost_a,i, max_i cost_b,i / cost_a,i)``: the
    pooled ratio (a mediant, so it lies in the range) and the spread of the per-prompt
    ratios. No coverage level is attached: with a handful of prompts a percentile
    bootstrap covers well below its nominal level (Part II review, finding 4).
    """
    cb = np.asarray(cost_b, float)
    ca = np.asarray(cost_a, float)
    if ca.shape != cb.shape or ca.ndim != 1 or ca.size < 1:
        raise ValueError("cost_a and cost_b must be 1-D arrays of the same length ≥ 1")
    if np.any(ca <= 0) or np.any(cb <= 0):
        raise ValueError("cost_a and cost_b must be positive")
    r = cb / ca
    return float(cb.sum() / ca.sum()), float(r.min()), float(r.max())


def synthetic_traces(n_prompts: int = 12, L: int = 96, seed: int = 0) -> dict:
    """A synthetic traces dict of the same shape as chapter 7's (for tests and development).

    q_top follows a logistic AR(1) process per prompt; agreement is drawn with probability
    q_top^0.8, so confidence predicts acceptance as in real pairs. Half the prompts of each
    task are "train", half "test".
    """
    n = as_int(n_prompts, "n_prompts", minimum=2)
    LL = as_int(L, "L", minimum=2)
    rng = np.random.default_rng(seed)
    tasks = ("code", "chat", "story")
    prompts = []
    for i in range(n):
        task = tasks[i % len(tasks)]
        mean = {"code": 2.0, "chat": 0.8, "story": 0.3}[task]
        z = np.empty(LL)
        z[0] = mean
        for t in range(1, LL):
            z[t] = mean + 0.6 * (z[t - 1] - mean) + rng.normal(0, 1.3)
        q_top = 1 / (1 + np.exp(-z))
        agree = (rng.random(LL) < q_top**0.8).astype(int)
        prompts.append({"id": f"{task}-{i}", "task": task,
                        "split": "train" if (i // len(tasks)) % 2 == 0 else "test",
                        "text_temperature": 0, "L": LL, "agree": agree.tolist(),
                        "alpha": {"1.0": (q_top**0.8).tolist()}, "q_top": q_top.tolist()})
    return {"provenance": {"note": "synthetic (specmath.adaptive.synthetic_traces)",
                           "seed": seed}, "temperatures": [1.0], "prompts": prompts}


def threshold_decode_markov(target, draft, n_tokens: int, h: float, k_max: int, rng,
                            context_token: int = 0, peek: bool = False) -> np.ndarray:
    """Speculative decoding of Markov toy models with the threshold rule (ch. 11).

    Before drafting each position the draft's row q is computed; drafting stops when
    max q < h or after ``k_max`` drafts (a stopping time of the draft's information). The
    drafts are verified token by token (chapter 2's rule). ``peek=True`` is the naive
    "oracle" that stops as soon as a draft *would be* rejected and lets the target sample
    that position from p instead of the residual: it looks at the verdict, so it is not a
    stopping time of the draft's information, and its output law is wrong (a biased variant
    for the tests). Returns the first ``n_tokens`` emitted tokens.
    """
    from .toy import MarkovLM

    if not isinstance(target, MarkovLM) or not isinstance(draft, MarkovLM):
        raise ValueError("target and draft must be specmath.toy.MarkovLM models")
    P, Q = target.transition, draft.transition
    if P.shape != Q.shape:
        raise ValueError("target and draft must share a vocabulary")
    n = as_int(n_tokens, "n_tokens", minimum=1)
    hh = float(as_probability(h, "h"))
    K = as_int(k_max, "k_max", minimum=0)
    rng = as_generator(rng)
    V = P.shape[0]

    def draw(row):
        return min(int(np.searchsorted(np.cumsum(row), rng.random() * row.sum(),
                                       side="right")), V - 1)
    out: list[int] = []
    last = as_int(context_token, "context_token")
    while len(out) < n:
        drafts, cur = [], last
        while len(drafts) < K and Q[cur].max() >= hh:
            cur = draw(Q[cur])
            drafts.append(cur)
        prev = last
        for x in drafts:
            p, q = P[prev], Q[prev]
            if rng.random() < min(1.0, p[x] / q[x]):
                out.append(x)
                prev = x
                continue
            out.append(draw(p) if peek else draw(np.maximum(p - q, 0.0)))
            break
        else:
            out.append(draw(P[prev]))
        last = out[-1]
    return np.array(out[:n], dtype=np.int64)
