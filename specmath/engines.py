"""What engines actually verify: one-hot drafts, logits processors, lossy rules, metrics.

Chapter 8. Conventions as everywhere: ``p`` is the **target**, ``q`` the **draft**. The
distribution functions broadcast over leading axes (vocabulary last); the ``*_step``
functions take one sequence's rows, shapes (k+1, V) and (k, V), like
:func:`specmath.speculative_step`, and return the accepted prefix plus one token.
"""

from __future__ import annotations

import numpy as np

from . import pitfalls
from ._validate import (
    as_count,
    as_distribution,
    as_generator,
    as_int,
    as_probability,
    same_shape,
    scalar_or_array,
)
from .acceptance import RESIDUAL_MASS_EPS, _check_step_inputs, _sample

__all__ = [
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


def _pair(p, q, pname: str = "p", qname: str = "q"):
    p = as_distribution(p, pname)
    q = as_distribution(q, qname)
    same_shape(p, q, pname, qname)
    return p, q


def _onehot_argmax(q: np.ndarray) -> np.ndarray:
    out = np.zeros_like(q)
    np.put_along_axis(out, np.argmax(q, axis=-1)[..., None], 1.0, axis=-1)
    return out


# ---- greedy (one-hot) drafts ------------------------------------------------------------


def greedy_draft_acceptance(p, q):
    """α_greedy = p(argmax q): acceptance of a one-hot (greedy) draft (ch. 8, eq. alpha-greedy).

    Ties in q go to the lowest token index (``numpy.argmax``), as in greedy decoding.
    Broadcasts over leading axes.
    """
    p, q = _pair(p, q)
    return scalar_or_array((p * _onehot_argmax(q)).sum(axis=-1))


def _greedy_output(p: np.ndarray, onehot: np.ndarray) -> np.ndarray:
    a = (p * onehot).sum(axis=-1, keepdims=True)           # P(accept) = p(x*)
    rest = p * (1.0 - onehot)                               # p with x* removed
    mass = rest.sum(axis=-1, keepdims=True)                 # = 1 − p(x*)
    ok = mass > RESIDUAL_MASS_EPS
    resid = np.where(ok, rest / np.where(ok, mass, 1.0), p)
    return a * onehot + (1.0 - a) * resid


def greedy_draft_output_distribution(p, q) -> np.ndarray:
    """Exact law of the emitted token when the draft is its argmax, treated as one-hot (ch. 8,
    theorem greedy-exact): p(x*)·δ_{x*} + (1 − p(x*))·norm(p with x* removed), which is p.

    Computed analytically from the rule, not assumed. Broadcasts over leading axes.
    """
    p, q = _pair(p, q)
    return _greedy_output(p, _onehot_argmax(q))


def greedy_draft_step(p, q, draft_tokens, rng) -> np.ndarray:
    """One verification round with the draft treated as one-hot at each drafted token
    (ch. 8, algorithm greedy-draft; vLLM's ``draft_sample_method="greedy"``).

    Same signature and return value as :func:`specmath.speculative_step`. The drafted token
    x is accepted with probability p(x) (the ratio p(x)/1 of a point mass); on rejection the
    correction is drawn from p with x removed and renormalised; after k acceptances the
    bonus token is drawn from ``p[k]``. ``q`` is only validated: the rule never reads it,
    which is why it is exact whatever produced the drafts (ch. 8, theorem greedy-exact).
    """
    p, q, t, k = _check_step_inputs(p, q, draft_tokens)
    rng = as_generator(rng)
    out = []
    for i in range(k):
        x = t[i]
        if rng.random() < p[i, x]:
            out.append(int(x))
            continue
        rest = p[i].copy()
        rest[x] = 0.0
        out.append(_sample(rest / rest.sum(), rng))
        return np.asarray(out, dtype=np.int64)
    out.append(_sample(p[k], rng))
    return np.asarray(out, dtype=np.int64)


# ---- the draft in the ratio is not the one sampled from ---------------------------------


def mismatched_output_distribution(p, q_sampled, q_ratio) -> np.ndarray:
    """Exact output law when drafts are drawn from ``q_sampled`` but the acceptance ratio
    and the residual use ``q_ratio`` (ch. 8, eq. mismatch).

    P(x) = q_s(x)·min(1, p(x)/q_r(x)) + (1 − β)·norm(max(0, p − q_r))(x), β the total of the
    first term; min(1, p/q_r) is read as 1 where q_r(x) = 0 < p(x), like
    :func:`specmath.speculative_step`. Equals p when q_sampled = q_ratio.
    """
    p, qs = _pair(p, q_sampled, "p", "q_sampled")
    qr = as_distribution(q_ratio, "q_ratio")
    same_shape(p, qr, "p", "q_ratio")
    # chapter 2's law of the same mistake, its arguments in the order (p, q_used, q_sampled)
    return pitfalls.mismatched_output_distribution(p, qr, qs)


def two_token_joint(p1, q1, p2_verify, p2_next) -> np.ndarray:
    """Exact joint law (V, V) of the first two emitted tokens with one draft token (k = 1)
    (ch. 8, section sequence-dependent processors).

    ``p1``, ``q1``: (V,) target and draft at the first position. ``p2_verify[y]``: the
    distribution the verifier draws the bonus token from after accepting y (it must be the
    target *after* y, processor applied along the drafted prefix); ``p2_next[y]``: the
    target after y as the next iteration computes it. P(y, z) = min(p1, q1)(y)·p2_verify[y, z]
    + (1 − α)·r(y)·p2_next[y, z]; it equals p1(y)·p2_next[y, z] when p2_verify = p2_next.
    """
    p1, q1 = _pair(p1, q1, "p1", "q1")
    if p1.ndim != 1:
        raise ValueError(f"p1 must be one distribution of shape (V,); got shape {p1.shape}")
    V = p1.shape[0]
    pv = as_distribution(p2_verify, "p2_verify")
    pn = as_distribution(p2_next, "p2_next")
    for name, a in (("p2_verify", pv), ("p2_next", pn)):
        if a.shape != (V, V):
            raise ValueError(f"{name} must have shape (V, V) = ({V}, {V}): one row per first "
                             f"token; got {a.shape}")
    acc = np.minimum(p1, q1)
    rej = p1 - acc                       # (1 − α)·r(y) = max(0, p1 − q1)(y)
    return acc[:, None] * pv + rej[:, None] * pn


# ---- logits processors ------------------------------------------------------------------


def top_k_filter(dist, k: int) -> np.ndarray:
    """Keep the k most likely tokens and renormalise (ch. 8, processors). Ties at the k-th
    value go to the lowest token indices (a stable sort), so exactly k tokens survive."""
    d = as_distribution(dist, "dist")
    kk = as_int(k, "k", minimum=1)
    V = d.shape[-1]
    if kk >= V:
        return d.copy()
    order = np.argsort(-d, axis=-1, kind="stable")
    keep = np.zeros(d.shape, dtype=bool)
    np.put_along_axis(keep, order[..., :kk], True, axis=-1)
    out = np.where(keep, d, 0.0)
    return out / out.sum(axis=-1, keepdims=True)


def top_p_filter(dist, top_p: float) -> np.ndarray:
    """Nucleus filter: the smallest set of most likely tokens whose mass reaches ``top_p``,
    renormalised (ch. 8, processors). The most likely token always survives."""
    d = as_distribution(dist, "dist")
    tp = float(as_probability(top_p, "top_p"))
    if tp == 0.0:
        raise ValueError("top_p must be in (0, 1]; got 0")
    order = np.argsort(-d, axis=-1, kind="stable")
    sorted_d = np.take_along_axis(d, order, axis=-1)
    before = np.cumsum(sorted_d, axis=-1) - sorted_d       # mass strictly before each token
    keep_sorted = before < tp - 1e-12
    keep = np.zeros(d.shape, dtype=bool)
    np.put_along_axis(keep, order, keep_sorted, axis=-1)
    out = np.where(keep, d, 0.0)
    return out / out.sum(axis=-1, keepdims=True)


def repetition_penalty(logits, context, penalty: float) -> np.ndarray:
    """The CTRL / Hugging Face repetition penalty (ch. 8, processors): every token that
    occurs in ``context`` has its logit divided by ``penalty`` if positive, multiplied by it
    if negative. ``penalty`` ≥ 1 discourages repeats; 1 changes nothing. Returns logits."""
    z = np.array(logits, dtype=float)
    if z.ndim != 1 or z.shape[0] == 0 or not np.isfinite(z).all():
        raise ValueError(f"logits must be one finite vector of shape (V,); got {logits!r}")
    try:
        theta = float(penalty)
    except (TypeError, ValueError) as err:
        raise ValueError(f"penalty must be a number > 0; got {penalty!r}") from err
    if not np.isfinite(theta) or theta <= 0:
        raise ValueError(f"penalty must be a finite number > 0; got {penalty!r}")
    ctx = as_count(context, "context").reshape(-1)      # token ids: integers ≥ 0
    if (ctx >= z.shape[0]).any():
        raise ValueError(f"context tokens must be in [0, V) = [0, {z.shape[0]}); got {context!r}")
    u = np.unique(ctx)
    z[u] = np.where(z[u] > 0, z[u] / theta, z[u] * theta)
    return z


# ---- lossy acceptance -------------------------------------------------------------------


def best_residual_output(p, accepted) -> np.ndarray:
    """Output law of a rule whose accepted part is ``accepted`` (a(x) = q(x)·h(x)), with the
    residual that minimises the distance to p: a + (1 − Σa)·norm(max(0, p − a)) (ch. 8,
    theorem lossy-frontier). Its TV distance from p is Σ max(0, a − p).
    """
    p = as_distribution(p, "p")
    a = np.asarray(accepted, dtype=float)
    if a.shape != p.shape or not np.isfinite(a).all() or (a < 0).any():
        raise ValueError(f"accepted must be finite, ≥ 0 and shaped like p {p.shape}; got "
                         f"shape {a.shape}")
    beta = a.sum(axis=-1, keepdims=True)
    if (beta > 1 + 1e-9).any():
        raise ValueError("accepted must have total mass ≤ 1 (it is q·h with 0 ≤ h ≤ 1)")
    r = np.maximum(p - a, 0.0)
    mass = r.sum(axis=-1, keepdims=True)
    ok = mass > RESIDUAL_MASS_EPS
    resid = np.where(ok, r / np.where(ok, mass, 1.0), p)
    return a + np.maximum(1.0 - beta, 0.0) * resid


def _lenience(l) -> np.ndarray:
    lv = as_probability(l, "l")
    if (lv == 0).any():
        raise ValueError("l must be in (0, 1]; got 0 (l → 0 accepts every draft)")
    return lv


def _lenient_accepted(p: np.ndarray, q: np.ndarray, lv: np.ndarray) -> np.ndarray:
    return np.minimum(q, p / np.asarray(lv)[..., None])


def lenient_acceptance(p, q, l):
    """β(l) = Σ min(q, p/l): acceptance of the lenient rule min(1, p/(l·q)) (ch. 8,
    eq. lenient), l ∈ (0, 1]; l = 1 is exact speculative sampling. ``l`` broadcasts
    against the leading axes of p and q."""
    p, q = _pair(p, q)
    lv = _lenience(l)
    return scalar_or_array(_lenient_accepted(p, q, lv).sum(axis=-1))


def lenient_output_distribution(p, q, l) -> np.ndarray:
    """Exact output law of the lenient rule with the residual norm(max(0, p − q)) (ch. 8,
    eq. lenient-output): min(q, p/l) + (1 − β)·norm(max(0, p − q))."""
    p, q = _pair(p, q)
    lv = _lenience(l)
    a = _lenient_accepted(p, q, lv)
    p_b = np.broadcast_to(p, a.shape)
    return best_residual_output(p_b, a)


def lenient_step(p, q, draft_tokens, rng, l: float = 1.0) -> np.ndarray:
    """:func:`specmath.speculative_step` with lenience l ∈ (0, 1] (ch. 8): accept x when
    u·l·q(x) < p(x); on rejection resample from norm(max(0, p − q)). l = 1 is exact."""
    lv = float(_lenience(l))
    p, q, t, k = _check_step_inputs(p, q, draft_tokens)
    rng = as_generator(rng)
    out = []
    for i in range(k):
        x = t[i]
        if rng.random() * lv * q[i, x] < p[i, x]:
            out.append(int(x))
            continue
        r = np.maximum(p[i] - q[i], 0.0)
        out.append(_sample(r / r.sum() if r.sum() > RESIDUAL_MASS_EPS else p[i], rng))
        return np.asarray(out, dtype=np.int64)
    out.append(_sample(p[k], rng))
    return np.asarray(out, dtype=np.int64)


def _typical_params(eps, delta) -> tuple[float, float]:
    try:
        e, d = float(eps), float(delta)
    except (TypeError, ValueError) as err:
        raise ValueError(f"eps and delta must be numbers ≥ 0; got {eps!r}, {delta!r}") from err
    if not (np.isfinite(e) and e >= 0):
        raise ValueError(f"eps must be a finite number ≥ 0; got {eps!r}")
    if not (np.isfinite(d) and d >= 0):
        raise ValueError(f"delta must be a finite number ≥ 0; got {delta!r}")
    return e, d


def typical_threshold(p, eps: float, delta: float):
    """θ = min(ε, δ·e^{−H(p)}), H in nats: Medusa's typical-acceptance threshold (ch. 8,
    eq. typical). A draft x is accepted when p(x) > θ."""
    p = as_distribution(p, "p")
    e, d = _typical_params(eps, delta)
    with np.errstate(divide="ignore", invalid="ignore"):
        H = -np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0).sum(axis=-1)
    return scalar_or_array(np.minimum(e, d * np.exp(-H)))


def _typical_accepted(p: np.ndarray, q: np.ndarray, e: float, d: float) -> np.ndarray:
    theta = np.asarray(typical_threshold(p, e, d))
    return q * (p > theta[..., None])


def typical_acceptance(p, q, eps: float, delta: float):
    """β = Σ q(x)·1[p(x) > θ]: acceptance of typical acceptance for a draft x ~ q (ch. 8)."""
    p, q = _pair(p, q)
    e, d = _typical_params(eps, delta)
    return scalar_or_array(_typical_accepted(p, q, e, d).sum(axis=-1))


def typical_output_distribution(p, q, eps: float, delta: float) -> np.ndarray:
    """Exact output law of typical acceptance with the best residual norm(max(0, p − a))
    (ch. 8): the smallest distance from p that any replacement rule can reach with this
    acceptance test (theorem lossy-frontier)."""
    p, q = _pair(p, q)
    e, d = _typical_params(eps, delta)
    return best_residual_output(p, _typical_accepted(p, q, e, d))


def typical_step(p, q, draft_tokens, rng, eps: float = 0.09, delta: float = 0.3) -> np.ndarray:
    """Typical acceptance as a verification round (ch. 8): accept x when p(x) > θ; the
    first failure is replaced by a draw from norm(max(0, p − q·1[p > θ]))."""
    e, d = _typical_params(eps, delta)
    p, q, t, k = _check_step_inputs(p, q, draft_tokens)
    rng = as_generator(rng)
    out = []
    for i in range(k):
        x = t[i]
        theta = float(typical_threshold(p[i], e, d))
        if p[i, x] > theta:
            out.append(int(x))
            continue
        a = q[i] * (p[i] > theta)
        r = np.maximum(p[i] - a, 0.0)
        out.append(_sample(r / r.sum() if r.sum() > RESIDUAL_MASS_EPS else p[i], rng))
        return np.asarray(out, dtype=np.int64)
    out.append(_sample(p[k], rng))
    return np.asarray(out, dtype=np.int64)


# ---- what systems report ----------------------------------------------------------------

#: Names of the acceptance metrics systems print, with their definition in terms of the
#: per-iteration counts: n iterations (drafts), A accepted draft tokens in all, k drafted
#: per iteration. Sources: ``specmath/data/published/engines_metrics.json``.
ENGINE_METRICS = {
    "mean_acceptance_length": "1 + A/n (bonus token counted): vLLM 'Mean acceptance "
                              "length', SGLang 'accept len', Spec-Bench '#Mean accepted "
                              "tokens', EAGLE's τ",
    "mean_accepted_drafts": "A/n (bonus token not counted)",
    "vllm_draft_acceptance_rate": "A/(n·k): vLLM 'Avg Draft acceptance rate'",
    "sglang_accept_rate": "(A + n)/(n·(k+1)): SGLang 'accept rate' with "
                          "speculative_num_draft_tokens = k + 1",
}


def engine_metrics(accepted, k: int) -> dict[str, float]:
    """Every metric of :data:`ENGINE_METRICS` from per-iteration accepted-draft counts
    (ch. 8, table metrics). ``accepted``: integers in [0, k], one per iteration."""
    a = as_count(accepted, "accepted")
    kk = as_int(k, "k", minimum=1)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"accepted must be a non-empty 1-d array of counts; got shape {a.shape}")
    if (a > kk).any():
        raise ValueError(f"accepted counts must be ≤ k = {kk}; got {int(a.max())}")
    n, A = a.size, float(a.sum())
    return {
        "mean_acceptance_length": 1.0 + A / n,
        "mean_accepted_drafts": A / n,
        "vllm_draft_acceptance_rate": A / (n * kk),
        "sglang_accept_rate": (A + n) / (n * (kk + 1)),
    }


def mean_tokens_from_metric(value, metric: str, k: int):
    """Convert a reported metric back to E[N], tokens per iteration (ch. 8, table metrics)."""
    if metric not in ENGINE_METRICS:
        raise ValueError(f"metric must be one of {sorted(ENGINE_METRICS)}; got {metric!r}")
    kk = as_int(k, "k", minimum=1)
    try:
        v = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"value must be a number; got {value!r}") from err
    if not np.isfinite(v).all() or (v < 0).any():
        raise ValueError(f"value must be a finite number ≥ 0; got {value!r}")
    conv = {
        "mean_acceptance_length": v,
        "mean_accepted_drafts": v + 1.0,
        "vllm_draft_acceptance_rate": 1.0 + kk * v,
        "sglang_accept_rate": (kk + 1) * v,
    }[metric]
    if ((conv < 1 - 1e-12) | (conv > kk + 1 + 1e-12)).any():
        raise ValueError(f"value {value!r} of {metric} gives E[N] outside [1, k+1] = "
                         f"[1, {kk + 1}]")
    return scalar_or_array(conv)
