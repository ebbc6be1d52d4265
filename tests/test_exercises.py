"""Every exercise checker accepts its own computed answer, rejects a wrong one, and never
prints the answer."""

from __future__ import annotations

import re

import numpy as np
import pytest

from specmath.exercises import _REGISTRY, check, exercise_keys

KEYS = exercise_keys()


def test_unknown_exercise_key_is_a_clear_value_error():
    with pytest.raises(ValueError, match="key"):
        check("no-such-exercise", 1.0)


@pytest.mark.parametrize("key", KEYS)
def test_checker_accepts_the_computed_answer_and_rejects_a_wrong_one(key, capsys):
    truth = np.asarray(_REGISTRY[key].compute(), dtype=float)
    assert np.isfinite(truth).all()
    assert check(key, truth) is True
    wrong = truth + np.where(truth == 0, 1.0, 0.5 * np.abs(truth)) + 10 * _REGISTRY[key].atol
    assert check(key, wrong) is False
    out = capsys.readouterr().out
    for v in np.atleast_1d(truth):
        for fmt in ("{:.3f}", "{:.4g}"):
            s = fmt.format(float(v))
            if len(s.strip("0.-")) >= 3:  # only non-trivial values can leak
                assert s not in out, f"{key}: the checker printed the answer"


def _wrong_by(truth: np.ndarray, factor: float) -> np.ndarray:
    return np.where(truth == 0, 1.0, truth * factor)


@pytest.mark.parametrize("key", KEYS)
def test_a_wrong_answer_gets_a_coarse_band_never_the_signed_or_relative_error(key, capsys):
    truth = np.asarray(_REGISTRY[key].compute(), dtype=float)
    for factor in (1.5, 0.5, 1.05):
        got = _wrong_by(truth, factor) + 10 * _REGISTRY[key].atol
        if check(key, got):
            continue  # within tolerance (integer answers that round back)
        out = capsys.readouterr().out
        assert "too high" not in out and "too low" not in out and "%" not in out, out
        assert "relative" not in out and "off by" not in out, out
        assert "Hint:" not in out, f"{key}: a hint was printed without hint=True"
        assert re.search(r"far off|close but not|wrong sign", out), out
        rel = np.abs(got - truth) / np.maximum(np.abs(truth), 1e-300)
        for r in np.atleast_1d(rel):
            for fmt in ("{:.3g}", "{:.2f}", "{:.1f}"):
                assert fmt.format(100 * float(r)) not in re.sub(r"entry \d+ of \d+|\(\d+ of "
                                                                 r"\d+ right\)|ch\d+-ex\d+",
                                                                 "", out), out


def test_the_bands_close_far_wrong_sign_and_wrong_shape(capsys):
    truth = float(_REGISTRY["ch5-ex1"].compute())
    assert not check("ch5-ex1", truth * 1.05)
    assert "close but not within the tolerance" in capsys.readouterr().out
    assert not check("ch5-ex1", truth * 3)
    assert "far off" in capsys.readouterr().out
    assert not check("ch5-ex1", -truth)
    assert "wrong sign" in capsys.readouterr().out
    assert not check("ch5-ex1", [truth, truth])
    out = capsys.readouterr().out
    assert "wrong shape" in out and "one number" in out


def test_a_list_answer_names_the_wrong_entry(capsys):
    truth = np.asarray(_REGISTRY["ch5-ex2"].compute(), dtype=float)
    assert truth.size == 4
    got = truth.copy()
    got[3] *= 3
    assert not check("ch5-ex2", got)
    out = capsys.readouterr().out
    assert "entry 4 of 4 is far off" in out and "(3 of 4 right)" in out
    for i in range(3):
        assert f"entry {i + 1} of 4" not in out


def test_a_non_number_is_a_message_not_a_traceback(capsys):
    assert check("ch5-ex1", "one third") is False
    assert "must be a number" in capsys.readouterr().out
    assert check("ch5-ex1", None) is False
    assert check("ch5-ex1", [1, 2, 3]) is False


@pytest.mark.parametrize("key", KEYS)
def test_hints_are_opt_in_nudges_not_formulas(key, capsys):
    spec = _REGISTRY[key]
    assert spec.hint, f"{key} has no hint"
    # a nudge names an idea, not the solution's formula or the answer's value
    assert "=" not in spec.hint and "Σ" not in spec.hint and "^" not in spec.hint, spec.hint
    truth = np.asarray(spec.compute(), dtype=float)
    wrong = _wrong_by(truth, 3.0) + 10 * spec.atol
    assert not check(key, wrong)
    assert f"check('{key}', value, hint=True)" in capsys.readouterr().out
    assert not check(key, wrong, hint=True)
    assert f"Hint: {spec.hint}" in capsys.readouterr().out
    assert check(key, truth, hint=True)
    assert "Hint" not in capsys.readouterr().out
