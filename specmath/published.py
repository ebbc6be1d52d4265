"""Published figures quoted by the course, with their provenance.

Numbers from papers, leaderboards and datasheets are data, not prose: each lives in a
JSON file ``specmath/data/published/<topic>.json`` shipped with the package (so Colab
reads it too), one record per figure::

    {"quantity": "speedup", "value": 2.25, "unit": "x", "method": "EAGLE-2",
     "model": "Vicuna-7B", "hardware": "1x RTX 3090", "source": "spec-bench leaderboard",
     "cite": "xia2024unlocking", "where": "README table, 3090 board",
     "date": "2024-06", "note": "..."}

``quantity``, ``value``, ``source`` and ``date`` are required; ``model`` and ``hardware``
are required where the figure depends on them (write ``"n/a"`` otherwise).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

__all__ = ["load", "topics", "REQUIRED_FIELDS"]

#: Every record carries at least these fields.
REQUIRED_FIELDS = ("quantity", "value", "source", "model", "hardware", "date")


def topics() -> list[str]:
    """Names of the available data files (without ``.json``)."""
    folder = resources.files("specmath") / "data" / "published"
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".json"))


@cache
def _load(topic: str) -> tuple[dict, ...]:
    if not isinstance(topic, str) or topic not in topics():
        raise ValueError(f"topic must be one of {topics()}; got {topic!r}")
    path = resources.files("specmath") / "data" / "published" / f"{topic}.json"
    records = json.loads(path.read_text(encoding="utf-8"))
    for i, r in enumerate(records):
        missing = [f for f in REQUIRED_FIELDS if f not in r]
        if missing:
            raise ValueError(f"{topic}.json record {i} lacks {missing}")
    return tuple(records)


def load(topic: str, **match) -> list[dict]:
    """The records of ``topic`` whose fields equal every ``match`` given (copies).

    Example: ``load("specbench", hardware="1x RTX 3090", method="EAGLE-2")``.
    """
    recs = [dict(r) for r in _load(topic)]
    return [r for r in recs if all(r.get(k) == v for k, v in match.items())]
