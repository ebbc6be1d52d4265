"""Answer checkers for the end-of-chapter exercises.

``check("ch4-2", answer)`` says whether an answer is right, and if not how far off it is,
without printing the answer. Answers are *computed* from specmath when checked (never
typed in), registered per chapter in ``specmath/exercises/chN.py``.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["check", "register", "exercise_keys", "Answer"]


@dataclass(frozen=True)
class Answer:
    compute: Callable[[], object]
    rtol: float = 1e-3
    atol: float = 0.0
    hint: str = ""


_REGISTRY: dict[str, Answer] = {}
_CHAPTERS = ("ch0", "ch1", "ch2", "ch3", "ch4", "ch5", "ch6", "ch7", "ch8", "ch9", "ch10", "ch11")


def register(key: str, compute: Callable[[], object], *, rtol: float = 1e-3, atol: float = 0.0,
             hint: str = "") -> None:
    """Register the answer of exercise ``key`` as a zero-argument function computing it."""
    _REGISTRY[key] = Answer(compute, rtol, atol, hint)


def _load_all() -> None:
    for ch in _CHAPTERS:
        try:
            importlib.import_module(f"specmath.exercises.{ch}")
        except ModuleNotFoundError as err:
            if err.name != f"specmath.exercises.{ch}":
                raise


def exercise_keys() -> list[str]:
    """Every registered exercise key."""
    _load_all()
    return sorted(_REGISTRY)


def _verdict(key: str, answer, quiet: bool) -> bool:
    _load_all()
    if key not in _REGISTRY:
        raise ValueError(f"key must name an exercise; {key!r} is unknown (known: "
                         f"{', '.join(sorted(_REGISTRY))})")
    spec = _REGISTRY[key]
    truth = np.asarray(spec.compute(), dtype=float)
    try:
        got = np.asarray(answer, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"answer must be a number (or array of numbers); got {answer!r}") from err
    if got.shape != truth.shape:
        msg = (f"❌ {key}: expected {truth.size} number(s) with shape {truth.shape}, got shape "
               f"{got.shape}.")
        ok = False
    elif not np.isfinite(got).all():
        msg, ok = f"❌ {key}: your answer contains NaN or inf.", False
    else:
        ok = bool(np.allclose(got, truth, rtol=spec.rtol, atol=spec.atol))
        if ok:
            msg = f"✅ {key}: correct."
        else:
            err = np.abs(got - truth)
            rel = err / np.maximum(np.abs(truth), 1e-300)
            worst = float(np.max(rel))
            direction = ""
            if got.size == 1:
                direction = " (too high)" if float(got) > float(truth) else " (too low)"
            pct = f"{100 * worst:.3g}%" if math.isfinite(worst) else "far"
            msg = f"❌ {key}: not quite — off by {pct} relative{direction}."
            if spec.hint:
                msg += f" Hint: {spec.hint}"
    if not quiet:
        print(msg)
    return ok


def check(key: str, answer, *, quiet: bool = False) -> bool:
    """Check an exercise answer; prints a verdict (never the answer) and returns True/False."""
    return _verdict(key, answer, quiet)
