"""The generation loops: speculative decoding (Leviathan et al.'s Algorithm 1) and plain decoding.

Chapter 7 runs them on the real pair; the eager loop is the reference, ``fast`` the device paths.
"""

from __future__ import annotations

import functools
import time

import torch

from .fast import PATHS, _autoregressive_on_device, _cut_at_eos, _speculative_on_device
from .kv import _device_of, _new_cache, _probs, _sync, _truncate, cached_forward
from .result import GenerationResult
from .verify import (
    VERIFIERS,
    _peek_uniforms,
    _verify_greedy,
    _verify_tokenwise,
    uniforms_read,
)


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
        for _ in range(kk):
            seq = ids + drafts
            logits = dft(seq[dft.n_cached:], 1)[-1]
            if greedy:
                x = int(torch.argmax(logits))
            else:
                q = _probs(logits, temperature)
                x = _sample(q, generator)
                qs.append(q)
            drafts.append(x)
        # 2. the target scores the pending tokens and all drafts in one pass
        seq = ids + drafts
        t_logits = tgt(seq[tgt.n_cached:], kk + 1)  # rows: p_1 … p_kk, p_{kk+1}
        # 3. the rule decides how many drafts to keep and the token after them
        d = torch.tensor(drafts, dtype=torch.long, device=t_logits.device)
        if greedy:
            p_top = torch.argmax(t_logits, dim=-1)
            alphas = (d == p_top[:kk]).double().tolist()
            n, y = _verify_greedy(p_top, d)
        else:  # float64 probabilities; the generator advances past the uniforms read only
            ps = _probs(t_logits, temperature)
            q_mat = torch.stack(qs) if kk else ps.new_zeros((0, ps.shape[-1]))
            alphas = torch.minimum(ps[:kk], q_mat).sum(-1).tolist()
            u, take = _peek_uniforms(kk + 1, generator, ps.device)
            n, y = verify_fn(ps, q_mat, d, u)
            take(uniforms_read(verify_fn, int(n), kk))
        n_acc = int(n)
        new = drafts[:n_acc] + [int(y)]
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
        if _cut_at_eos(ids, L, eos):
            break
    del ids[L0 + max_new_tokens:]
    res.tokens = ids[L0:]
    res.time_s = time.perf_counter() - t_start
    res.target_calls, res.draft_calls = tgt.calls, dft.calls
    res.target_time_s, res.draft_time_s = tgt.seconds, dft.seconds
    res.target_log, res.draft_log = tgt.log, dft.log
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

