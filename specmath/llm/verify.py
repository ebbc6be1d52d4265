"""Verification rules in torch, one function each, registered in :data:`VERIFIERS`.

Chapter 7 (token-wise, ``specmath.acceptance``) and chapter 9 (block, ``specmath.block``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch

# A rule is ``rule(p, q, draft, u) -> (n_accepted, next_token)``:
#   p : (k+1, V) target probabilities after temperature (rows p_1 … p_{k+1});
#   q : (k, V) draft probabilities after temperature (rows q_1 … q_k);
#   draft : (k,) long, the drafted tokens x_1 … x_k (xᵢ drawn from qᵢ);
#   u : (k+1,) independent U[0, 1) draws in p's dtype, on p's device: the rule's only
#       source of randomness, so a rule is a pure function of its inputs.
# All on one device; float64 in the eager loop, float32 on the device path. ``k = 0`` is
# legal (q is (0, V), draft is (0,)): the rule then samples from p_1. It returns the number
# of accepted drafts n (0 ≤ n ≤ k) and the token appended after them (a correction when
# n < k, the bonus token from p_{k+1} when n = k), as 0-d long tensors on p's device, with
# no host synchronisation inside (no float(), int(), .item(), .tolist(), no data-dependent
# Python branches), so that an iteration of the device path synchronises once.
# ``register`` records with each rule how many of the u it reads, a prefix u[0 … m−1]
# given n: the eager loop takes only those from the generator, so that it draws exactly
# the random numbers the numpy rule of the same name draws (the tests compare the two
# draw for draw). Temperature 0 never reaches a rule: both loops decode greedily through
# :func:`_verify_greedy` (a draft token is kept iff it is the target's argmax), which is
# what every exact rule reduces to on one-hot distributions.

#: Verification rules by name, for ``speculative_generate(..., verify=name)``.
VERIFIERS: dict[str, Callable] = {}


def register(name: str, reads: Callable[[int, int], int]):
    """Decorator: put a rule into :data:`VERIFIERS` under ``name``; ``reads(n, k)`` is how
    many uniforms (a prefix of ``u``) it used when it accepted n of k drafts."""
    def deco(rule):
        rule.reads = reads
        VERIFIERS[name] = rule
        return rule
    return deco


def uniforms_read(rule, n: int, k: int) -> int:
    """How many of its k + 1 uniforms ``rule`` read (all of them if it does not say)."""
    base = rule.func if isinstance(rule, functools.partial) else rule
    reads = getattr(base, "reads", None)
    return k + 1 if reads is None else reads(n, k)


def _uniforms(n: int, generator, device, dtype) -> torch.Tensor:
    """n independent U[0, 1) draws from ``generator`` (or the global one), on ``device``."""
    if generator is None:
        return torch.rand(n, dtype=dtype, device=device)
    if generator.device != torch.device(device):  # e.g. a CPU generator, a CUDA model
        return torch.rand(n, dtype=dtype, device=generator.device,
                          generator=generator).to(device)
    return torch.rand(n, dtype=dtype, device=device, generator=generator)


def _peek_uniforms(n: int, generator, device):
    """n float64 uniforms the way the eager loop draws them: from a copy of the CPU
    generator (the global one if ``generator`` is None), plus ``take(m)``, which advances
    the real generator past the first m only. A CPU generator gives the same numbers
    drawn n at once or one by one, so the unread ones are drawn again later, as if never
    drawn (they are independent of everything the rule decided). Other generators: no
    copy, ``take`` does nothing."""
    if generator is not None and generator.device.type != "cpu":
        return _uniforms(n, generator, device, torch.float64), lambda m: None
    copy = torch.Generator()
    copy.set_state(torch.get_rng_state() if generator is None else generator.get_state())
    u = torch.rand(n, dtype=torch.float64, generator=copy).to(device)

    def take(m: int) -> None:
        if m:
            torch.rand(m, dtype=torch.float64, generator=generator)
    return u, take


def _sample_rows(probs: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Inverse-CDF draws, one per row of ``probs`` (unnormalised is fine), from uniforms
    ``u`` of shape probs.shape[:-1]; on the device, no synchronisation."""
    cdf = probs.cumsum(-1)
    x = (u * cdf[..., -1]).unsqueeze(-1).to(cdf.dtype)
    idx = torch.searchsorted(cdf, x, right=True).squeeze(-1)
    return idx.clamp_(max=probs.shape[-1] - 1)


def _first_rejection(ok: torch.Tensor) -> torch.Tensor:
    """Number of leading True entries of a (k,) bool tensor, as a 0-d long tensor."""
    return torch.cumprod(ok.long(), 0).sum()


def _pick(u: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
    """u[i] for a 0-d index tensor, without reading it on the host."""
    return u.index_select(0, i.view(1))[0]


@register("tokenwise", reads=lambda n, k: min(n + 2, k + 1))
def _verify_tokenwise(p: torch.Tensor, q: torch.Tensor, draft: torch.Tensor,
                      u: torch.Tensor, *, broken_correction: bool = False):
    """Leviathan et al.'s token-by-token rule (chapter 2, eq. (ch2-accept)), vectorised;
    mirrors :func:`specmath.acceptance.speculative_step` draw for draw.

    All k acceptance tests at once: xᵢ is kept iff uᵢ·qᵢ(xᵢ) < pᵢ(xᵢ), i.e. with probability
    min(1, pᵢ(xᵢ)/qᵢ(xᵢ)) (no division, so qᵢ(xᵢ) = 0 is harmless); n is the number of
    leading acceptances (the first rejection ends the iteration; the later tests are
    unused). The next token is drawn with the next uniform, u_{n+1} (u_k when n = k),
    from norm(max(0, p_{n+1} − q_{n+1})) when n < k and from p_{k+1} when n = k. If the
    residual vanishes (p_{n+1} = q_{n+1}, where a rejection has probability 0) p_{n+1} is
    used. ``broken_correction`` (tests only) draws the correction from p instead: the
    classic bug the sampling tests must catch.
    """
    k = draft.shape[0]
    if k == 0:
        return torch.zeros((), dtype=torch.long, device=p.device), _sample_rows(p[0], u[0])
    idx = draft.view(k, 1)
    ok = u[:k] * q.gather(1, idx)[:, 0] < p[:k].gather(1, idx)[:, 0]
    n = _first_rejection(ok)
    u_next = _pick(u, torch.clamp(n + 1, max=k))
    p_n = p.index_select(0, n.view(1))[0]
    if broken_correction:
        return n, _sample_rows(p_n, u_next)
    q_n = torch.cat([q, torch.zeros_like(p[:1])]).index_select(0, n.view(1))[0]
    resid = torch.clamp(p_n - q_n, min=0.0)  # at n = k: q row is 0, so resid = p_{k+1}
    row = torch.where(resid.sum() > 0, resid, p_n)
    return n, _sample_rows(row, u_next)


def _verify_greedy(p_top: torch.Tensor, draft: torch.Tensor):
    """Temperature 0: keep xᵢ iff it is the target's argmax; the next token is the target's
    argmax after the kept ones. ``p_top`` is (k+1,), the argmax of each target row."""
    k = draft.shape[0]
    if k == 0:
        return torch.zeros((), dtype=torch.long, device=p_top.device), p_top[0]
    n = _first_rejection(draft == p_top[:k])
    return n, p_top.index_select(0, n.view(1))[0]


_BIG_LOG = 1.0e4  # |log(p/q)| cap: exp(−1e4) is 0 in float32 and float64


@register("block", reads=lambda n, k: min(k - n + 2, k + 1))
def _verify_block(p: torch.Tensor, q: torch.Tensor, draft: torch.Tensor, u: torch.Tensor,
                  *, broken_correction: bool = False):
    """Block verification (chapter 9; Sun et al. 2024), vectorised and sync-free; mirrors
    :func:`specmath.block.block_step` draw for draw.

    aᵢ = min(1, aᵢ₋₁ pᵢ(xᵢ)/qᵢ(xᵢ)) in closed form, aᵢ = exp(sᵢ − max_{j≤i} sⱼ) with
    sᵢ = Σ_{l≤i} log(p_l(x_l)/q_l(x_l)) and s₀ = 0 (q = 0 counts as ratio +∞ when p > 0,
    capped at 1e4 in the log; p = 0 makes this and every later aⱼ zero, as the product
    form does); Rᵢ₊₁ = Σ max(0, aᵢ pᵢ₊₁ − qᵢ₊₁);
    hᵢ = Rᵢ₊₁/(Rᵢ₊₁ + 1 − aᵢ) (1 where the denominator is 0), h_k = a_k. The test of hᵢ
    uses u_{k−i} (the numpy rule tests i = k, k − 1, … in that order); n = τ is the largest
    i whose test passes (0 if none). The next token, drawn with the uniform after the last
    test read (u_{k−τ+1}, or u_k when τ = 0), comes from norm(max(0, a_τ p_{τ+1} − q_{τ+1}))
    when τ < k (p_{τ+1} if that is empty) and from p_{k+1} when τ = k.
    ``broken_correction`` (tests only) draws the correction from p_{τ+1} itself: the bug
    the sampling tests must catch.
    """
    k = draft.shape[0]
    if k == 0:
        return torch.zeros((), dtype=torch.long, device=p.device), _sample_rows(p[0], u[0])
    idx = draft.view(k, 1)
    # the k log-ratios in float64 (cheap): after a capped +1e4 jump, float32 would keep
    # only about three significant digits of the later aᵢ
    px = p[:k].gather(1, idx)[:, 0].double()
    qx = q.gather(1, idx)[:, 0].double()
    big = torch.full_like(px, _BIG_LOG)
    lr = torch.where(px > 0, torch.where(qx > 0, torch.log(px) - torch.log(qx), big), -big)
    s = torch.cat([torch.zeros_like(px[:1]), lr.clamp(-_BIG_LOG, _BIG_LOG).cumsum(0)])
    a = torch.exp(s - torch.cummax(s, 0).values).to(p.dtype)  # (k+1,): a₀ = 1, …, a_k
    # a forbidden draft token (p = 0) makes aᵢ = 0 and every later aⱼ = 0 (0·∞ is 0 here)
    dead = torch.cat([torch.zeros_like(px[:1], dtype=torch.bool), (px <= 0).cumsum(0) > 0])
    a = torch.where(dead, torch.zeros_like(a), a)
    R = torch.clamp(a[:k, None] * p[:k] - q, min=0.0).sum(-1)  # R₁ … R_k
    den = R + 1.0 - a[:k]
    ok = den > 0
    h_mid = torch.where(ok, R / torch.where(ok, den, torch.ones_like(den)),
                        torch.ones_like(den))
    h = torch.cat([h_mid[1:], a[k:]])  # h₁ … h_k
    passed = u[:k].flip(0) < h  # hᵢ is tested with u_{k−i}
    steps = torch.arange(1, k + 1, device=p.device)
    n = (passed.long() * steps).max()
    u_next = _pick(u, torch.clamp(k - n + 1, max=k))
    p_n = p.index_select(0, n.view(1))[0]
    if broken_correction:
        return n, _sample_rows(p_n, u_next)
    q_n = torch.cat([q, torch.zeros_like(p[:1])]).index_select(0, n.view(1))[0]
    a_n = a.index_select(0, n.view(1))[0]
    resid = torch.clamp(a_n * p_n - q_n, min=0.0)
    row = torch.where((n < k) & (resid.sum() > 0), resid, p_n)
    return n, _sample_rows(row, u_next)
