"""Per-position acceptance traces of the real pair, and greedy iterations along them (ch. 7).

``benchmarks/record_traces.py`` lets the target write texts (greedy and sampled at T = 1)
and scores them, teacher-forced, with both models; ``specmath/data/results/traces_cpu.json`` keeps,
at every generated position t, whether the two argmaxes agree and Σ min(p_t, q_t) at a few
temperatures (layout in the script's docstring). numpy only.

* :func:`load_traces` reads the file; :func:`select` filters its prompts.
* :func:`greedy_iterations` / :func:`tokens_per_iteration_greedy` replay greedy speculative
  decoding with draft length k along an agreement string: at temperature 0 the loop's
  output is the target's greedy text, so which drafts survive is fixed by the string — N
  per iteration is computed exactly, without running either model again.
* :func:`simulate_iterations` draws the same iterations when position t is accepted with
  its own probability α_t (independently): chapter 4's model with α varying along the text.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ._validate import as_count, as_existing_file, as_generator, as_int, as_probability
from .notebook import load_result, result_path

__all__ = ["load_traces", "traces_path", "select", "greedy_iterations",
           "tokens_per_iteration_greedy", "simulate_iterations", "greedy_run_cost"]

_REQUIRED = ("id", "task", "split", "text_temperature", "L", "agree", "alpha")


def traces_path(device: str = "cpu") -> Path:
    """Where the committed traces of a ``device`` ("cpu" or "gpu") recording live."""
    if device not in ("cpu", "gpu"):
        raise ValueError(f"device must be 'cpu' or 'gpu'; got {device!r}")
    return result_path(f"traces_{device}.json")


def load_traces(path=None, *, download: bool = True) -> dict:
    """The recorded traces: a dict with ``provenance``, ``temperatures`` and ``prompts``.

    Parameters
    ----------
    path : str or Path, optional
        A traces JSON file; default the recorded ``traces_cpu.json`` shipped with the
        package (:func:`specmath.notebook.load_result`; no network).
    download : bool
        Ignored, kept so that older notebooks and scripts still run: the recorded traces
        ship with the package and are never downloaded.
    """
    p = as_existing_file(path, "traces file")
    R = load_result("traces_cpu.json") if p is None else json.loads(p.read_text())
    if not isinstance(R, dict) or "prompts" not in R:
        raise ValueError("path must hold a traces file (a JSON object with a 'prompts' list)")
    for rec in R["prompts"]:
        missing = [f for f in _REQUIRED if f not in rec]
        if missing:
            raise ValueError(f"path holds a malformed traces file: prompt "
                             f"{rec.get('id', '?')!r} lacks {', '.join(missing)}")
    return R


def select(traces: dict, *, split: str | None = None, task: str | None = None,
           text_temperature: int | None = None) -> list[dict]:
    """The prompt records of ``traces`` matching every given filter (None = any)."""
    if not isinstance(traces, dict) or "prompts" not in traces:
        raise ValueError("traces must be the dict returned by load_traces")
    if split not in (None, "train", "test"):
        raise ValueError(f"split must be 'train', 'test' or None; got {split!r}")
    if text_temperature not in (None, 0, 1):
        raise ValueError(f"text_temperature must be 0, 1 or None; got {text_temperature!r}")
    return [r for r in traces["prompts"]
            if (split is None or r["split"] == split)
            and (task is None or r["task"] == task)
            and (text_temperature is None or r["text_temperature"] == text_temperature)]


def _agree_array(agree) -> np.ndarray:
    a = np.asarray(agree)
    if a.ndim != 1:
        raise ValueError(f"agree must be a 1-D sequence of 0/1 (one per text position); got "
                         f"shape {a.shape}")
    if a.size and not np.isin(a, (0, 1)).all():
        raise ValueError("agree must contain only 0 and 1 (or booleans)")
    return a.astype(bool)


def greedy_iterations(agree, k) -> tuple[np.ndarray, np.ndarray]:
    """Every step of greedy speculative decoding along an agreement string (ch. 7).

    ``agree[t]`` says whether the draft's argmax equals the target's at position t of the
    target's greedy text. An iteration starting at position s drafts
    kk = min(k, L − s − 1) tokens (never past the text's end, as
    :func:`specmath.llm.speculative_generate` does with ``max_new_tokens = L``); the drafts
    survive up to the first position with ``agree = 0``, where the target's token replaces
    the draft's; if all kk survive the target adds a bonus token. So N = (leading ones among
    agree[s : s+kk]) + 1 and the next iteration starts at s + N.

    Returns
    -------
    N, drafted : int arrays, one entry per step of the loop (N.sum() = L; the last steps
        may draft fewer than k tokens, and a step with ``drafted = 0`` is a plain target
        step). Cost of the run in target steps: Σ drafted/c + V(drafted).
    """
    a = _agree_array(agree)
    kk = as_int(k, "k", minimum=0)
    L = a.size
    # run[t] = number of consecutive ones starting at t (so leading ones of a[s:] in O(1))
    run = np.zeros(L + 1, dtype=np.int64)
    for t in range(L - 1, -1, -1):
        run[t] = run[t + 1] + 1 if a[t] else 0
    Ns, ds = [], []
    s = 0
    while s < L:
        d = min(kk, L - s - 1)
        n = min(int(run[s]), d) + 1
        Ns.append(n)
        ds.append(d)
        s += n
    return np.array(Ns, dtype=np.int64), np.array(ds, dtype=np.int64)


def tokens_per_iteration_greedy(agree, k) -> np.ndarray:
    """N of each iteration that drafted all k tokens, greedy decoding along ``agree``.

    The exact tokens per iteration of greedy speculative decoding with draft length ``k``
    (chapter 4's N, at most k + 1) on the text behind the agreement string; iterations cut
    short by the end of the text are left out, so the mean estimates E[N] at this k.
    ``k = 0`` gives one token per step. See :func:`greedy_iterations` for every step.
    """
    N, d = greedy_iterations(agree, k)
    return N[d == int(k)]


def simulate_iterations(alpha_list, k, rng) -> np.ndarray:
    """Draw N per full iteration when position t is accepted with probability α_t.

    Chapter 4's model with an acceptance rate that varies along the text: independent
    Bernoulli(α_t) acceptances, one per text position (each position is drafted at most
    once, so one draw per position is exact), replayed by :func:`greedy_iterations`.
    Returns the N of the iterations that drafted all ``k`` tokens, like
    :func:`tokens_per_iteration_greedy`.
    """
    a = as_probability(alpha_list, "alpha_list")
    if a.ndim != 1:
        raise ValueError(f"alpha_list must be 1-D (one α per text position); got shape "
                         f"{a.shape}")
    as_count(k, "k")
    rng = as_generator(rng)
    return tokens_per_iteration_greedy((rng.random(a.size) < a).astype(np.int8), k)


def greedy_run_cost(agree, k, t_target, t_draft, *, prefill_target: float | None = None,
                    prefill_draft: float | None = None,
                    t_draft2: float | None = None) -> float:
    """Predicted time of greedy speculative decoding along ``agree``, pass by pass (ch. 7).

    Adds up the forward passes :func:`specmath.llm.speculative_generate` makes: per
    iteration, ``drafted`` one-token draft passes and one target pass scoring
    ``drafted + 1`` tokens (``t_target[m − 1]`` is the time of a pass scoring m tokens).
    The first iteration's first draft pass and its target pass are the prompt prefills
    (``prefill_draft``, ``prefill_target``; the draft's only when k ≥ 1; None: priced as
    ordinary passes). After an iteration
    whose drafts were all accepted the draft has not yet seen its own last token, so its
    next pass scores two tokens (``t_draft2``; default ``t_draft``, i.e. free). ``k = 0``
    is plain decoding: the prefill, then L − 1 one-token target passes. In units of a
    one-token target pass (``t_target[0] = 1``, ``t_draft = 1/c``), without prefills and
    catch-ups this is Σᵢ drafted_i/c + V(drafted_i), the cost behind chapter 7's refined
    speedup (plain decoding: L).
    """
    N, d = greedy_iterations(agree, k)
    tt = np.asarray(t_target, dtype=float)
    if tt.ndim != 1 or tt.size < int(k) + 1 or not np.isfinite(tt).all() or (tt <= 0).any():
        raise ValueError(f"t_target must hold k + 1 = {int(k) + 1} positive times, one per "
                         f"pass size m = 1 … k + 1; got {t_target!r}")
    td = float(t_draft)
    if not np.isfinite(td) or td <= 0:
        raise ValueError(f"t_draft must be a positive time; got {t_draft!r}")
    td2 = td if t_draft2 is None else float(t_draft2)
    if not np.isfinite(td2) or td2 <= 0:
        raise ValueError(f"t_draft2 must be a positive time; got {t_draft2!r}")
    if N.size == 0:
        return 0.0
    cost = float((d * td).sum() + tt[d].sum())
    full = (N == d + 1) & (d > 0)
    # a catch-up pass happens in the next iteration when it drafts at least one token
    catchups = int((full[:-1] & (d[1:] > 0)).sum())
    cost += catchups * (td2 - td)
    if prefill_target is not None:
        cost += float(prefill_target) - tt[d[0]]
    if prefill_draft is not None and d[0] > 0:
        cost += float(prefill_draft) - td
    return cost
