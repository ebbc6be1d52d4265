"""Graded classroom assignments: personal numbers and the autograder's checks (issue 17).

``make assignments`` (``scripts/make_assignments.py``) turns every chapter's exercises into
an Otter-Grader assignment. The student types an ID once, in the notebook's first cell;
:func:`start` then draws that student's inputs for the numeric exercises of a chapter that
has personal numbers, and disables the self-check :func:`specmath.exercises.check` (a
graded notebook has Otter's public tests instead). The autograder's hidden tests call
:func:`assert_correct`, which recomputes the expected answer from the same ID with the
chapter's own answer code (``specmath/exercises/chN.py``): the exercise, its answer and
its tests are written once, there.

How personal numbers are drawn: the seed is the first 8 bytes of
SHA-256(``"specmath|<salt>|<assignment>|<ID>"``), the ID with surrounding white space
removed and case folded; a NumPy ``default_rng`` with that seed picks each input from a
short list of values for which the exercise is well posed (:data:`PERSONAL`).
"""

from __future__ import annotations

import copy
import hashlib
import importlib
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

__all__ = ["PERSONAL", "Personal", "seed_for", "personal_overrides", "start", "expected",
           "assert_form", "assert_correct", "answer_name", "GRADED_MESSAGE"]

GRADED_MESSAGE = ("check() is not available in a graded assignment: store your answer in "
                  "the variable the exercise names and run grader.check(...) (it checks "
                  "the form of an answer, not its value).")


@dataclass(frozen=True)
class Personal:
    """How a chapter's exercise inputs are personalised.

    Attributes
    ----------
    module : str
        The chapter's answer module, e.g. ``"specmath.exercises.ch5"``.
    name : str
        The name the chapter's exercise code reads the inputs from (``P`` in chapter 5).
    draw : callable
        ``draw(rng) -> {attribute: value}``: the answer module's attributes to replace
        (chapter 5: its ``PARAMS``), drawn with ``rng``.
    value : callable
        ``value(overrides)``: what ``name`` is bound to in the student's notebook.
    """

    module: str
    name: str
    draw: Callable[[np.random.Generator], dict]
    value: Callable[[dict], object]


def _pick(rng: np.random.Generator, values):
    v = values[int(rng.integers(len(values)))]
    return float(v) if isinstance(v, float) else int(v)


def _draw_ch5(rng: np.random.Generator) -> dict:
    # Chapter 5's exercises (specmath/exercises/ch5.py, PARAMS): a copy of the chapter's
    # inputs with these fields drawn. Every list keeps the exercise well posed -- ex1 has
    # c > 1, ex2 an interior optimum (alpha >= 0.6 > 1/c), ex4 a crossing in (0, 1)
    # (c > 1), ex3 a draft length k >= 1 (so c_{k-1} exists), ex5 a target below the
    # best speedup reachable with k <= 64 at alpha -> 1, ex6 any alpha < 1 and increasing
    # c values (its answer is a vector of draft lengths), ex7 a noise sigma large enough
    # against Var(N) that the interval without the noise term fails the solution's
    # coverage check (every combination below passes the solution's checks at its seed)
    # (tested over many IDs in tests/test_classroom.py).
    from .exercises import ch5

    params = copy.deepcopy(ch5.PARAMS)
    alphas = [0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95]
    draws = {
        "ch5-ex1": {"c": [2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 12.0,
                          15.0, 16.0, 20.0, 25.0]},
        "ch5-ex2": {"alpha": alphas, "c": [5.0, 8.0, 10.0, 12.0, 15.0, 20.0, 25.0, 30.0]},
        "ch5-ex3": {"alpha": alphas[:-1], "k": [2, 3, 4, 5, 6]},
        "ch5-ex4": {"c": [5.0, 6.0, 8.0, 10.0, 12.0, 15.0, 20.0], "k_low": [2, 3, 4, 5, 6]},
        "ch5-ex5": {"c": [5.0, 8.0, 10.0, 12.0, 15.0, 20.0],
                    "target_speedup": [1.5, 2.0, 2.5, 3.0]},
    }
    for key, fields in draws.items():
        for name, values in fields.items():
            value = _pick(rng, values)            # drawn even if unused: stable streams
            if name in params.get(key, {}):
                params[key][name] = value
    # drawn after ex1-ex5, so their numbers are the ones drawn before ex6/ex7 existed
    base = params["ch5-ex6"]["cs"]
    params["ch5-ex6"]["alpha"] = _pick(rng, alphas)
    scale = _pick(rng, [0.75, 1.0, 1.5, 2.0, 2.5, 3.0])
    params["ch5-ex6"]["cs"] = [float(c * scale) for c in base]
    for name, values in {"alpha": alphas[:-1], "k": [3, 4, 5, 6],
                         "c": [6.0, 8.0, 10.0, 12.0, 16.0], "sigma": [0.75, 1.0]}.items():
        params["ch5-ex7"][name] = _pick(rng, values)
    return {"PARAMS": params}


def _draw_ch6(rng: np.random.Generator) -> dict:
    # Chapter 6's exercises (specmath/exercises/ch6.py, PARAMS), drawn fields only:
    # ex1 keeps a unique top logit in each model (the T = 0 one-hot) and the temperatures;
    # ex2 keeps T = 1 and T = 1/2 (its solution uses softmax(z, 1/2) = zipf(2s)); ex3 has
    # decreasing per-position probabilities in (0, 1); ex4 has k >= 2, where E[N] is
    # strictly convex in alpha, so the chapter's Jensen claim holds.
    from .exercises import ch6

    params = copy.deepcopy(ch6.PARAMS)
    top, second = _pick(rng, [3.0, 4.0, 5.0]), _pick(rng, [1.0, 2.0])
    start, step = _pick(rng, [0.85, 0.9, 0.95]), _pick(rng, [0.05, 0.1, 0.15])
    draws = {
        "ch6-ex1": {"target_logits": [top, second, 0.0, 0.0],
                    "draft_logits": [second, top, 0.0, 0.0]},
        "ch6-ex2": {"vocab_size": _pick(rng, [200, 500, 1000, 2000, 5000]),
                    "exponent": _pick(rng, [0.8, 1.0, 1.1, 1.2, 1.5])},
        "ch6-ex3": {"alphas": [round(start - i * step, 2) for i in range(4)]},
        "ch6-ex4": {"alpha_values": [_pick(rng, [0.3, 0.4, 0.5, 0.6]),
                                     _pick(rng, [0.8, 0.85, 0.9, 0.95])],
                    "k": _pick(rng, [3, 4, 5, 6])},
        "ch6-ex5": {"seed": _pick(rng, list(range(10))), "k": _pick(rng, [3, 4, 5])},
    }
    for key, fields in draws.items():
        for name, value in fields.items():
            if name in params.get(key, {}):
                params[key][name] = value
    return {"PARAMS": params}


#: Chapters whose numeric exercises have personal inputs, by chapter (``"ch5"``).
PERSONAL: dict[str, Personal] = {
    "ch5": Personal("specmath.exercises.ch5", "P", _draw_ch5, lambda o: o["PARAMS"]),
    "ch6": Personal("specmath.exercises.ch6", "P", _draw_ch6, lambda o: o["PARAMS"]),
}


def _chapter(assignment: str) -> str:
    """``"05_speedup"`` or ``"ch5"`` -> ``"ch5"``."""
    head = assignment.split("_")[0]
    if head.startswith("ch") and head[2:].isdigit():
        return head
    if not head.isdigit():
        raise ValueError(f"assignment must look like 'NN_name' or 'chN'; got {assignment!r}")
    return f"ch{int(head)}"


def _normalise_id(student_id) -> str:
    if not isinstance(student_id, str) or not student_id.strip():
        raise ValueError("student_id must be a non-empty string: type your student ID "
                         "between the quotes in the notebook's first cell "
                         "(STUDENT_ID = \"...\") and run the notebook again")
    return " ".join(student_id.split()).casefold()


def seed_for(student_id: str, assignment: str, salt: str = "") -> int:
    """The seed of a student's personal numbers for one assignment (see module docstring)."""
    key = f"specmath|{salt}|{_chapter(assignment)}|{_normalise_id(student_id)}"
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big")


def personal_overrides(assignment: str, student_id: str, salt: str = "") -> dict:
    """The answer module's attributes replaced for this student (empty: no personal numbers)."""
    spec = PERSONAL.get(_chapter(assignment))
    if spec is None:
        return {}
    return spec.draw(np.random.default_rng(seed_for(student_id, assignment, salt)))


@contextmanager
def _patched(module, overrides: dict):
    old = {k: getattr(module, k) for k in overrides}
    try:
        for k, v in overrides.items():
            setattr(module, k, v)
        yield
    finally:
        for k, v in old.items():
            setattr(module, k, v)


def _registry():
    from . import exercises
    exercises.exercise_keys()          # imports every chapter's answer module
    return exercises._REGISTRY


def _spec(key: str):
    reg = _registry()
    if key not in reg:
        raise ValueError(f"key must name a registered exercise; {key!r} is unknown")
    return reg[key]


def expected(assignment: str, key: str, student_id: str | None = None, *,
             personal: bool = True, salt: str = "") -> np.ndarray:
    """The expected answer of exercise ``key``, for this student's numbers when personal."""
    spec = _spec(key)
    chapter = PERSONAL.get(_chapter(assignment))
    if not personal or chapter is None:
        return np.asarray(spec.compute(), dtype=float)
    module = importlib.import_module(chapter.module)
    with _patched(module, personal_overrides(assignment, student_id, salt)):
        return np.asarray(spec.compute(), dtype=float)


def answer_name(key: str) -> str:
    """The variable a graded notebook stores the answer of ``key`` in: ``ans_ch5_ex1``."""
    return "ans_" + key.replace("-", "_")


def assert_form(key: str, answer) -> None:
    """Public test: the answer has the right form (numbers, shape, finite), not its value."""
    name = answer_name(key)
    if answer is Ellipsis or answer is None:
        raise AssertionError(f"{name} is not answered yet: replace the ... with your answer")
    try:
        got = np.asarray(answer, dtype=float)
    except (TypeError, ValueError):
        raise AssertionError(f"{name} must be a number or a list of numbers; got "
                             f"{type(answer).__name__}") from None
    want = np.asarray(_spec(key).compute(), dtype=float).shape
    if got.shape != want:
        n = int(np.prod(want)) if want else 1
        raise AssertionError(f"{name} must be {n} number(s) (shape {want}); got shape "
                             f"{got.shape}")
    if not np.isfinite(got).all():
        raise AssertionError(f"{name} contains NaN or inf")


def assert_correct(assignment: str, key: str, answer, student_id: str | None, *,
                   personal: bool = True, salt: str = "") -> None:
    """Hidden test: the answer equals the expected one for this student's numbers.

    The message never contains the expected value.
    """
    assert_form(key, answer)
    spec = _spec(key)
    truth = expected(assignment, key, student_id, personal=personal, salt=salt)
    got = np.asarray(answer, dtype=float)
    if not np.allclose(got, truth, rtol=getattr(spec, "rtol", 1e-3),
                       atol=getattr(spec, "atol", 0.0)):
        raise AssertionError(f"{answer_name(key)} is not the correct value for the numbers "
                             "of this notebook's student ID")


def _no_check(*args, **kwargs):
    raise RuntimeError(GRADED_MESSAGE)


def start(assignment: str, student_id: str, *, personal: bool = True, salt: str = ""):
    """First cell of a graded notebook: validate the ID, disable ``check``, draw the numbers.

    Returns the chapter's exercise inputs for this student (chapter 5: the ``PARAMS``
    dictionary the exercises read as ``P``) and prints them, or ``None`` for a chapter
    without personal numbers or with ``personal=False`` (then the chapter's own inputs
    apply, the same for everyone).
    """
    _normalise_id(student_id)
    from . import exercises
    exercises.check = _no_check
    chapter = PERSONAL.get(_chapter(assignment))
    if chapter is None or not personal:
        return None
    value = chapter.value(personal_overrides(assignment, student_id, salt))
    print(f"Your personal exercise inputs (the exercises read them as {chapter.name}[...]):")
    if isinstance(value, dict):
        for key, params in value.items():
            items = params.items() if isinstance(params, dict) else [("", params)]
            for name, v in items:
                print(f'  {chapter.name}["{key}"]["{name}"] = {v}')
    return value
