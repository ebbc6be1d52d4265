"""Every exercise checker accepts its own computed answer, rejects a wrong one, and never
prints the answer."""

from __future__ import annotations

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
