"""The execution budget of the book (guide: a theory chapter executes in under a minute;
the preface promises it). Read from the execution cache the build just filled, so the
times are those of this machine's `make book`."""

from pathlib import Path

import pytest
from sitekit import REPO, _missing

pytestmark = pytest.mark.site

CACHE = REPO / "_build" / ".jupyter_cache"
THEORY_LIMIT_S = 60.0               # the preface: "in under a minute"
REAL_MODEL_CHAPTERS = {"07_real_models"}   # loads two models; counted in the 8-min build


def latest_execution_seconds(cache: Path = CACHE) -> dict[str, float]:
    """Chapter stem -> seconds of its most recent execution in the jupyter cache."""
    from jupyter_cache import get_cache

    latest: dict[str, tuple] = {}
    for rec in get_cache(str(cache)).list_cache_records():
        stem = Path(rec.uri).stem
        secs = rec.data.get("execution_seconds")
        if secs is not None and (stem not in latest or rec.created > latest[stem][0]):
            latest[stem] = (rec.created, float(secs))
    return {stem: secs for stem, (_, secs) in latest.items()}


def slow_theory_chapters(times: dict[str, float]) -> dict[str, float]:
    """Theory chapters (not the real-model one) that took a minute or more."""
    return {c: round(t, 1) for c, t in times.items()
            if c not in REAL_MODEL_CHAPTERS and t >= THEORY_LIMIT_S}


def test_every_theory_chapter_executed_in_under_a_minute_in_the_last_build():
    if not CACHE.is_dir():
        _missing(f"no execution cache at {CACHE}; run `make book` first")
    times = latest_execution_seconds()
    chapters = sorted(p.stem for p in (REPO / "book").glob("[01][0-9]_*.ipynb"))
    missing = [c for c in chapters if c not in times]
    assert not missing, f"chapters never executed by the build: {missing}"
    slow = slow_theory_chapters({c: times[c] for c in chapters})
    assert not slow, f"theory chapters over {THEORY_LIMIT_S:.0f} s: {slow}"


def test_the_budget_check_catches_a_slow_theory_chapter_and_spares_the_model_chapter():
    """The check above must fail when one theory chapter takes a minute or more."""
    times = {"02_acceptance_rule": 75.0, "07_real_models": 90.0, "05_speedup": 4.0}
    assert slow_theory_chapters(times) == {"02_acceptance_rule": 75.0}
