"""Where a one-token pass spends its CPU time: one decoder layer, the head, the pass (ch. 7).

Usage (from the repository root)::

    .venv/bin/python benchmarks/layer_cost.py            # CPU, about 5 min on 2 busy cores
    .venv/bin/python benchmarks/layer_cost.py --quick    # smoke test
    .venv/bin/python benchmarks/layer_cost.py --summarize FILE   # redo the summary only

Writes ``specmath/data/results/layers_cpu.json`` (override with ``--out``). Chapter 7 finds
c (target pass ÷ draft pass, CPU time) below the ratio of the two models' weight counts,
so the draft reads its weights at fewer GB per CPU second; this script times the parts of
a one-token decode step of each model to see where:

* ``pass``: the whole cached one-token forward pass (as ``realmodel.py`` times it), after
  a prefix of ``--context`` tokens (the code prompt ``realmodel.py`` times its passes on);
* ``layer``: one decoder layer called alone, with the very inputs it received in such a
  pass (captured by a forward pre-hook: hidden state, rotary tables, mask, the KV cache of
  the prefix); the layer index rotates from block to block;
* ``linears``: the seven matrix products of one layer (q, k, v, o, gate, up, down) as bare
  module calls on random inputs of their shapes, another layer's index;
* ``head``: the final norm and the output matrix on the last hidden state;
* ``hooked_pass``: the whole pass again, with forward hooks reading the CPU clock where
  each layer and the head start and end (``in_pass_cpu_s``: the parts inside a pass).

Clock: process CPU time (``time.process_time``, one torch thread), wall clock beside it.
Each block times all ten (model, part) items once, in a fresh shuffled order, after an
untimed warm-up round: the two models are interleaved and every pair compared is taken
from one block. Every time is kept; the file also stores the bytes each part reads and a
``summary`` (medians, order-statistic intervals, GB per CPU second) derived from the times.

The models are the offline pair (``llm.OFFLINE_PAIR``): quantized GGUF files (Q4_K_M)
dequantized to float32 (``specmath.llm.models.offline_weights``), loaded untied. The
intervals' coverage is exact for independent blocks only: in ``layers_cpu.json`` the paired
ratios are close to that, the raw times drift with the machine's load (lag-1
autocorrelation up to about 0.38) and their intervals have lower coverage; and a session's
level does not carry to another session (chapter 7 compares two).
"""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

import numpy as np
import torch
from _common import PROMPTS, encode, parser, provenance, start, write_json, write_result

from specmath import llm, stats

PARTS = ("pass", "layer", "linears", "head", "hooked_pass")
NOTE = ("CPU, one torch thread, on a 2-core machine shared with other jobs; CPU time "
        "(process_time) counts the work, not the waiting; the two models and five parts "
        "are interleaved in a shuffled order in every block.")


def _nbytes(params) -> int:
    return int(sum(p.numel() * p.element_size() for p in params))


def _crop_layers(cache, n_keep: int) -> None:
    """Roll every layer of a cache back to ``n_keep`` tokens (a layer called alone grows
    only its own; ``crop`` with a negative count removes tokens on transformers 4.57–5.x)."""
    for lay in cache.layers:
        extra = lay.get_seq_length() - n_keep
        if extra > 0:
            lay.crop(-extra)


def _linears(module) -> list[torch.nn.Linear]:
    return [m for m in module.modules() if isinstance(m, torch.nn.Linear)]


class Parts:
    """The timed parts of one model's one-token decode step after a fixed prefix."""

    def __init__(self, model, prefix: torch.Tensor, seed: int):
        self.model = model
        body = model.get_decoder() if hasattr(model, "get_decoder") else model.model
        self.layers, self.norm = list(body.layers), body.norm
        self.head = model.get_output_embeddings()
        self.L = len(self.layers)
        self.cache = llm._new_cache(model)
        with torch.inference_mode():
            llm.cached_forward(model, self.cache, input_ids=prefix, logits_to_keep=1)
        self.n0 = self.cache.get_seq_length()
        self.token = prefix[:, -1:]
        # the inputs every layer and the final norm receive in one real pass
        self.inputs: dict = {}
        hooks = [mod.register_forward_pre_hook(self._grab(key), with_kwargs=True)
                 for key, mod in [*enumerate(self.layers), ("norm", self.norm)]]
        try:
            self.time_pass()
        finally:
            for h in hooks:
                h.remove()
        self.replay_error = self._replay_error()
        g = torch.Generator().manual_seed(seed)
        dt_ = next(model.parameters()).dtype
        self.lin_x = [torch.randn(1, 1, m.in_features, generator=g, dtype=dt_)
                      for m in _linears(self.layers[0])]
        cfg = model.config
        head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        el = next(model.parameters()).element_size()
        kv = 2 * (self.n0 + 1) * cfg.num_key_value_heads * head_dim * el
        emb = model.get_input_embeddings().weight
        self.head_dim = head_dim
        self.tied = self.head.weight.data_ptr() == emb.data_ptr()
        self.bytes = {
            "layer": _nbytes(self.layers[0].parameters()) + kv,
            "layer_weights": _nbytes(self.layers[0].parameters()),
            "layer_kv_cache": kv,
            "linears": _nbytes(p for m in _linears(self.layers[0]) for p in m.parameters()),
            "head": _nbytes(self.norm.parameters()) + _nbytes(self.head.parameters()),
            "embedding_row": emb.shape[1] * emb.element_size()}
        self.bytes["pass"] = (self.L * self.bytes["layer"] + self.bytes["head"]
                              + self.bytes["embedding_row"])

    def _grab(self, key):
        def hook(_mod, args, kwargs):
            self.inputs[key] = (tuple(a.clone() if torch.is_tensor(a) else a
                                      for a in args), dict(kwargs))
        return hook

    @torch.inference_mode()
    def _replay_error(self) -> float:
        """Largest relative difference between a layer called alone on its captured inputs
        and what the next part received in the real pass (every layer checked once): the
        timed calls do the pass's work."""
        err = 0.0
        for j in range(self.L):
            args, kwargs = self.inputs[j]
            out = self.layers[j](*args, **kwargs)
            out = out[0] if isinstance(out, tuple) else out
            _crop_layers(self.cache, self.n0)
            nxt = self.inputs[j + 1 if j + 1 < self.L else "norm"][0][0]
            err = max(err, float((out - nxt).abs().max() / nxt.abs().max()))
        return err

    def _clock(self, fn) -> tuple[float, float]:
        w0, c0 = time.perf_counter(), time.process_time()
        with torch.inference_mode():
            fn()
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        _crop_layers(self.cache, self.n0)
        return cpu, wall

    def time_pass(self):
        return self._clock(lambda: llm.cached_forward(self.model, self.cache,
                                                      input_ids=self.token,
                                                      logits_to_keep=1))

    def time_layer(self, j: int):
        args, kwargs = self.inputs[j]
        return self._clock(lambda: self.layers[j](*args, **kwargs))

    def time_linears(self, j: int):
        mods = _linears(self.layers[j])

        def run():
            for m, x in zip(mods, self.lin_x, strict=True):
                m(x)
        return self._clock(run)

    def time_head(self):
        (h, *_), _kw = self.inputs["norm"]
        return self._clock(lambda: self.head(self.norm(h[:, -1:])))

    def time_hooked_pass(self):
        """The whole pass again, with hooks reading the CPU clock as each layer and the
        head (final norm to output matrix) start and end: ``self.split`` gets the L
        in-pass layer times and the head's."""
        marks: list[float] = []

        def pre(*_):
            marks.append(time.process_time())

        def post(*_):
            marks.append(time.process_time())
        hooks = [h for layer in self.layers for h in (layer.register_forward_pre_hook(pre),
                                                      layer.register_forward_hook(post))]
        hooks += [self.norm.register_forward_pre_hook(pre),
                  self.head.register_forward_hook(post)]
        try:
            out = self.time_pass()
        finally:
            for h in hooks:
                h.remove()
        d = np.diff(marks)[::2]
        self.split = ([float(x) for x in d[:self.L]], float(d[self.L]))
        return out

    def time(self, part: str, j: int):
        if part == "hooked_pass":
            return self.time_hooked_pass()
        if part == "pass":
            return self.time_pass()
        if part == "head":
            return self.time_head()
        if part == "layer":
            return self.time_layer(j % self.L)
        return self.time_linears((j + self.L // 2) % self.L)


def summarize(R: dict) -> dict:
    """Per model and part: the median CPU time over the blocks, its order-statistic
    interval (``specmath.stats.median_ci``, with its coverage for independent blocks; raw
    times that drift with the load are not independent, see the module docstring), the
    bytes the part
    reads and GB per CPU second (the interval carried through, as bytes ÷ time is
    monotone). ``in_pass_layer`` and ``in_pass_head`` are the mean layer and the head
    timed inside the hooked pass. Derived from the stored times only."""
    out = {"note": "derived by summarize() from cpu_s and in_pass_cpu_s; interval: "
                   "order statistics of the per-block values, coverage as stated"}
    for role, parts in R["cpu_s"].items():
        ip = R["in_pass_cpu_s"][role]
        series = dict(parts)
        series["in_pass_layer"] = np.mean(ip["layers_s"], axis=1).tolist()
        series["in_pass_head"] = ip["head_s"]
        b = R["models"][role]["bytes"]
        nbytes = {"pass": b["pass"], "hooked_pass": b["pass"], "layer": b["layer"],
                  "linears": b["linears"], "head": b["head"],
                  "in_pass_layer": b["layer"], "in_pass_head": b["head"]}
        out[role] = {}
        for part, x in series.items():
            lo, hi, cov = stats.median_ci(x, 0.95)
            m = float(np.median(x))
            out[role][part] = {"median_s": m, "interval_s": [lo, hi], "coverage": cov,
                               "bytes": nbytes[part], "gb_per_cpu_s": nbytes[part] / m / 1e9,
                               "gb_per_cpu_s_interval": [nbytes[part] / hi / 1e9,
                                                         nbytes[part] / lo / 1e9]}
    return out


def main(argv=None, models=None) -> dict:
    ap = parser(__doc__)
    ap.add_argument("--blocks", type=int, default=100, help="interleaved blocks")
    args = ap.parse_args(argv)
    if args.quick:
        args.blocks = 3
    log = start(args)
    t0 = log.t0
    if models is None:
        target, draft, tok = llm.load_pair(llm.OFFLINE_PAIR, "cpu", None)
        ids = torch.tensor([encode(tok, PROMPTS["code"][0])])
    else:  # tests: tiny in-process models and a prompt as token ids
        target, draft, ids = models
    load_s = time.perf_counter() - t0
    dtype = next(target.parameters()).dtype
    R = {"provenance": provenance(args, dtype=dtype, note=NOTE, clock=(
        "process CPU time (time.process_time), one torch thread; wall clock beside it")),
         "load_s": load_s, "quick": bool(args.quick)}
    P = {"target": Parts(target, ids, args.seed), "draft": Parts(draft, ids, args.seed + 1)}
    R["context_tokens"] = P["target"].n0
    R["models"] = {role: {"layers": p.L, "hidden": p.model.config.hidden_size,
                          "intermediate": p.model.config.intermediate_size,
                          "kv_heads": p.model.config.num_key_value_heads,
                          "head_dim": p.head_dim, "vocab": p.model.config.vocab_size,
                          "tied_embeddings": p.tied,
                          "bytes": p.bytes, "bytes_per_weight": next(
                              p.model.parameters()).element_size(),
                          "layer_replay_max_rel_error": p.replay_error}
                   for role, p in P.items()}
    items = [(role, part) for role in P for part in PARTS]
    rng = random.Random(args.seed)
    cpu = {role: {part: [] for part in PARTS} for role in P}
    wall = {role: {part: [] for part in PARTS} for role in P}
    layer_index = {role: [] for role in P}
    in_pass = {role: {"layers_s": [], "head_s": []} for role in P}
    for b in range(-1, args.blocks):     # block -1: untimed warm-up
        order = items[:]
        rng.shuffle(order)
        for role, part in order:
            c, w = P[role].time(part, b + 1)
            if b >= 0:
                cpu[role][part].append(c)
                wall[role][part].append(w)
                if part == "hooked_pass":
                    in_pass[role]["layers_s"].append(P[role].split[0])
                    in_pass[role]["head_s"].append(P[role].split[1])
        if b >= 0:
            for role in P:
                layer_index[role].append((b + 1) % P[role].L)
        if b >= 0 and (b % 10 == 9 or b == args.blocks - 1):
            log(f"block {b + 1}/{args.blocks}: c = "
                f"{cpu['target']['pass'][-1] / cpu['draft']['pass'][-1]:.2f}")
    R["blocks"] = args.blocks
    R["cpu_s"], R["wall_s"], R["layer_index"] = cpu, wall, layer_index
    R["in_pass_cpu_s"] = in_pass
    R["medians_s"] = {role: {part: float(np.median(v)) for part, v in d.items()}
                      for role, d in cpu.items()}
    R["summary"] = summarize(R)
    R["provenance"]["loadavg_end"] = list(os.getloadavg())
    R["provenance"]["elapsed_s"] = time.perf_counter() - t0
    write_result(R, args.out, "layers_cpu.json")
    return R


if __name__ == "__main__":
    import sys

    if len(sys.argv) == 3 and sys.argv[1] == "--summarize":
        # add (or refresh) the derived summary of a recorded file, times untouched
        path = Path(sys.argv[2])
        rec = json.loads(path.read_text())
        rec["summary"] = summarize(rec)
        write_json(path, rec)
        sys.exit(0)
    main()
