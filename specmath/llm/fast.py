"""The same loops on the accelerator: decisions on the device, one host sync per iteration.

Chapter 7's GPU section (``benchmarks/gpu_run.py``): static KV cache, CUDA graphs, torch.compile.
"""

from __future__ import annotations

import inspect
import time

import torch

from .kv import _device_of, _new_cache, _probs32, cached_forward
from .verify import _sample_rows, _uniforms, _verify_greedy

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

            def fwd(bufs=bufs):
                return cached_forward(self.model, self.cache, **bufs,
                                      logits_to_keep=n_logits)[0].logits
            fake = self.device.type != "cuda"  # CPU tests: same buffers, eager "replay"
            if fake:
                run = fwd
                fwd()
            else:
                side = torch.cuda.Stream(self.device)
                side.wait_stream(torch.cuda.current_stream(self.device))
                with torch.cuda.stream(side):
                    fwd()
                torch.cuda.current_stream(self.device).wait_stream(side)
            self._rewind(m)
            if not fake:
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    out = fwd()

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
        kw = {"logits_to_keep": n_logits}
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
        out, _ = cached_forward(self.model, self.cache, forward=fwd, input_ids=x, **kw)
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


def _cut_at_eos(ids: list[int], start: int, eos: set[int]) -> bool:
    """Cut ``ids`` after the first EOS token at or after ``start``; True if there was one."""
    cut = next((j for j, t in enumerate(ids[start:]) if t in eos), None) if eos else None
    if cut is None:
        return False
    del ids[start + cut + 1:]
    return True


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
            n, y = verify_fn(p, q, d, _uniforms(kk + 1, generator, dev, p.dtype))
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
        if _cut_at_eos(ids, L, eos):
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

