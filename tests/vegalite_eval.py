"""Evaluate the data of the explorers' Vega-Lite specs in Python, at chosen slider values.

A small interpreter for the subset of Vega-Lite the live explorers use
(``specmath.widgets._live``): inline ``values`` and ``sequence`` data; the transforms
``calculate``, ``filter``, ``flatten``, ``aggregate`` and ``joinaggregate``; Vega
expressions made of numbers, strings, ``datum.field``, parameters, arithmetic, comparisons,
``&&``/``||``/``!`` and the functions listed in ``FUNCTIONS``. Anything else raises, so a
spec cannot silently use a construct this interpreter would get wrong.

``evaluate(spec, params)`` returns, for every named mark (``"name": …`` in the spec), the
rows that mark draws. ``tests/test_live_explorers.py`` compares those with specmath.
"""

from __future__ import annotations

import functools
import math
import re

import numpy as np

FUNCTIONS = {
    "pow": lambda a, b: np.float64(a) ** np.float64(b),
    "min": lambda *a: min(a),
    "max": lambda *a: max(a),
    "abs": abs,
    "log": lambda a: np.log(np.float64(a)),
    "exp": lambda a: np.exp(np.float64(a)),
    "sqrt": lambda a: np.sqrt(np.float64(a)),
    "floor": lambda a: np.float64(math.floor(a)),
    "ceil": lambda a: np.float64(math.ceil(a)),
    "_if": lambda t, a, b: a if t else b,
    "sequence": lambda *a: list(_sequence(*a)),
    "indexof": lambda arr, v: arr.index(v) if v in arr else -1,
}
_ALLOWED = re.compile(r"^[\w\s.+\-*/%<>=!&|(),'\"\[\]]*$")


def _sequence(start, stop=None, step=1.0):
    if stop is None:
        start, stop = 0.0, start
    n = max(0, math.ceil((stop - start) / step))
    return (np.float64(start + i * step) for i in range(n))


def to_python(expr: str) -> str:
    """Translate a Vega expression of the supported subset to a Python expression."""
    if not _ALLOWED.match(expr) or "?" in expr:
        raise ValueError(f"unsupported characters in Vega expression {expr!r}")
    e = re.sub(r"\bdatum\.(\w+)", r'_d["\1"]', expr)
    e = e.replace("===", "==").replace("!==", "!=")
    e = e.replace("&&", " and ").replace("||", " or ")
    e = re.sub(r"!(?!=)", " not ", e)
    e = re.sub(r"\bif\(", "_if(", e)
    e = re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", e))
    for name in re.findall(r"\b([A-Za-z_]\w*)\s*\(", re.sub(r"'[^']*'", "''", e)):
        if name not in FUNCTIONS and name not in ("not", "and", "or"):
            raise ValueError(f"function {name!r} not supported in {expr!r}")
    return e


@functools.cache
def _compiled(expr: str):
    return compile(to_python(expr), "<vega expression>", "eval")


def eval_expr(expr: str, datum: dict, params: dict):
    ns = dict(FUNCTIONS)
    ns.update(params)
    ns["_d"] = {k: (np.float64(v) if isinstance(v, int | float) and not isinstance(v, bool) else v)
                for k, v in datum.items()}
    with np.errstate(all="ignore"):
        return eval(_compiled(expr), {"__builtins__": {}}, ns)  # noqa: S307 (our own specs)


def _data(data: dict) -> list[dict]:
    if "values" in data:
        return [dict(r) for r in data["values"]]
    if "sequence" in data:
        s = data["sequence"]
        name = s.get("as", "data")
        return [{name: v} for v in _sequence(s["start"], s["stop"], s.get("step", 1.0))]
    raise ValueError(f"unsupported data {sorted(data)}")


_OPS = {"max": max, "min": min, "sum": sum, "mean": lambda v: sum(v) / len(v),
        "count": len}


def _groups(rows, groupby):
    out: dict[tuple, list[dict]] = {}
    for r in rows:
        out.setdefault(tuple(r[g] for g in groupby), []).append(r)
    return out


def apply_transforms(rows: list[dict], transforms: list[dict], params: dict) -> list[dict]:
    for t in transforms:
        if "calculate" in t:
            for r in rows:
                r[t["as"]] = eval_expr(t["calculate"], r, params)
        elif "filter" in t:
            if not isinstance(t["filter"], str):
                raise ValueError(f"unsupported filter {t['filter']!r}")
            rows = [r for r in rows if eval_expr(t["filter"], r, params)]
        elif "flatten" in t:
            (field,) = t["flatten"]
            rows = [dict(r, **{field: v}) for r in rows for v in r[field]]
        elif "joinaggregate" in t:
            groups = _groups(rows, t.get("groupby", []))
            for members in groups.values():
                for a in t["joinaggregate"]:
                    v = _OPS[a["op"]]([m[a["field"]] for m in members])
                    for m in members:
                        m[a["as"]] = v
        elif "aggregate" in t:
            gb = t.get("groupby", [])
            rows = [dict(zip(gb, key, strict=True),
                         **{a["as"]: _OPS[a["op"]]([m[a["field"]] for m in members])
                            for a in t["aggregate"]})
                    for key, members in _groups(rows, gb).items()]
        else:
            raise ValueError(f"unsupported transform {sorted(t)}")
    return rows


def param_defaults(spec: dict) -> dict:
    return {p["name"]: p["value"] for p in spec.get("params", [])}


def evaluate(spec: dict, params: dict | None = None) -> dict[str, list[dict]]:
    """Rows drawn by every named mark of ``spec`` with its parameters set to ``params``."""
    values = param_defaults(spec)
    unknown = set(params or {}) - set(values)
    if unknown:
        raise ValueError(f"no such parameters in the spec: {sorted(unknown)}")
    values.update(params or {})
    values = {k: (np.float64(v) if isinstance(v, int | float) else v) for k, v in values.items()}
    out: dict[str, list[dict]] = {}

    def walk(node: dict, inherited: list[dict] | None):
        if "data" in node:
            rows = _data(node["data"])
        elif inherited is not None:
            rows = [dict(r) for r in inherited]
        else:
            rows = None
        if rows is not None:
            rows = apply_transforms(rows, node.get("transform", []), values)
        children = node.get("concat") or node.get("hconcat") or node.get("vconcat") or \
            node.get("layer")
        if children:
            for child in children:
                walk(child, rows)
        elif "mark" in node and "name" in node:
            out[node["name"]] = rows or []

    walk(spec, None)
    return out
