"""Answer checkers for the end-of-chapter exercises.

``check("ch4-ex2", value)`` says whether an answer is right; if not, it reports only a
coarse band (close, far, wrong sign, wrong shape) and, for a list answer, which entries
are wrong, never the answer, the signed error or the solution's formula. A hint, a nudge
rather than the method, comes only on request: ``check("ch4-ex2", value, hint=True)``.
Answers are *computed* from specmath when checked (never typed in), registered per chapter
in ``specmath/exercises/chN.py``.
"""

from __future__ import annotations

import importlib
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


#: Relative distance from the answer below which a wrong answer is "close" (else "far").
CLOSE = 0.1


def _band(got: float, truth: float, spec: Answer) -> str:
    """The coarse band of one wrong number: never its signed or relative error."""
    if got * truth < 0:
        return "has the wrong sign"
    scale = max(abs(truth), spec.atol, 1e-12)
    if abs(got - truth) <= CLOSE * scale:
        return "is close but not within the tolerance (a rounding or a small term?)"
    return "is far off"


def _entry(index: tuple[int, ...], shape: tuple[int, ...]) -> str:
    if len(shape) == 1:
        return f"entry {index[0] + 1} of {shape[0]}"
    return "entry [" + ", ".join(str(i) for i in index) + "]"


def _verdict(key: str, answer, quiet: bool, hint: bool) -> bool:
    _load_all()
    if key not in _REGISTRY:
        raise ValueError(f"key must name an exercise; {key!r} is unknown (known: "
                         f"{', '.join(sorted(_REGISTRY))})")
    spec = _REGISTRY[key]
    truth = np.asarray(spec.compute(), dtype=float)
    try:
        got = np.asarray(answer, dtype=float)
    except (TypeError, ValueError):
        got = None
    if got is None:
        kind = "a number" if truth.ndim == 0 else f"a list of {truth.size} numbers"
        msg = (f"❌ {key}: the answer must be {kind}; got {type(answer).__name__} "
               f"{answer!r:.60}.")
        ok = False
    elif got.shape != truth.shape:
        want = ("one number" if truth.ndim == 0 else
                f"a list of {truth.size} numbers" if truth.ndim == 1 else
                f"an array of shape {truth.shape}")
        have = ("one number" if got.ndim == 0 else
                f"{got.size} numbers" if got.ndim == 1 else f"shape {got.shape}")
        msg = (f"❌ {key}: wrong shape: expected {want} (in the order the exercise asks), "
               f"got {have}.")
        ok = False
    elif not np.isfinite(got).all():
        msg, ok = f"❌ {key}: your answer contains NaN or inf.", False
    else:
        good = np.isclose(got, truth, rtol=spec.rtol, atol=spec.atol)
        ok = bool(good.all())
        if ok:
            msg = f"✅ {key}: correct."
        elif truth.ndim == 0:
            msg = f"❌ {key}: not correct: your value {_band(float(got), float(truth), spec)}."
        else:
            wrong = [i for i in np.ndindex(truth.shape) if not good[i]]
            parts = [f"{_entry(i, truth.shape)} {_band(float(got[i]), float(truth[i]), spec)}"
                     for i in wrong]
            right = truth.size - len(wrong)
            msg = (f"❌ {key}: not correct: " + "; ".join(parts) +
                   (f" ({right} of {truth.size} right)." if right else "."))
        if not ok and spec.hint:
            msg += (f" Hint: {spec.hint}" if hint else
                    f" (A nudge: check({key!r}, value, hint=True).)")
    if not quiet:
        print(msg)
    return ok


def check(key: str, answer, *, hint: bool = False, quiet: bool = False) -> bool:
    """Check an exercise answer; prints a verdict and returns True/False.

    A wrong answer gets a coarse band only (close, far, wrong sign, wrong shape) and, for
    a list, which entries are wrong; never the answer or its signed error. ``hint=True``
    adds the exercise's hint, a nudge, not the solution. ``quiet=True`` prints nothing.
    Raises ``ValueError`` for an unknown ``key``.
    """
    return _verdict(key, answer, quiet, bool(hint))
