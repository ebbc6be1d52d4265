"""Input validation shared by every public function.

Every check raises :class:`ValueError` with a message that names the argument and the
rule it breaks, so a reader sweeping a grid never gets a silent NaN.
"""

from __future__ import annotations

import numbers
from pathlib import Path

import numpy as np

#: Tolerance used when checking that a float64 distribution sums to one: |Σ p − 1| ≤ SUM_TOL.
#: Rows in lower precision (float32, float16, bfloat16) get the larger tolerance of
#: :func:`sum_tolerance`, which never falls below this.
SUM_TOL = 1e-6

#: λ of the probabilistic rounding-error bound in :func:`sum_tolerance` (Higham & Mary 2019).
ROUNDING_LAMBDA = 10.0

#: Rows whose float64 sum is within this of one are returned bit for bit; others are divided
#: by their sum.
RENORMALISE_EPS = 1e-12

_U64 = 2.0 ** -53   # unit roundoff of float64
_U32 = 2.0 ** -24   # float32
_U16 = 2.0 ** -11   # float16
_UBF16 = 2.0 ** -8  # bfloat16 (8 significant bits)

#: Per storage format: unit roundoff u_s, smallest positive normal number, smallest positive
#: subnormal η_s (bfloat16 has float32's exponent range with 8 significant bits).
_FORMATS = {
    "float64": (_U64, 2.0 ** -1022, 2.0 ** -1074),
    "float32": (_U32, 2.0 ** -126, 2.0 ** -149),
    "float16": (_U16, 2.0 ** -14, 2.0 ** -24),
    "bfloat16": (_UBF16, 2.0 ** -126, 2.0 ** -133),
}


def _unit_roundoffs(storage: str) -> tuple[float, float]:
    """(u_s, u_a): unit roundoff of the storage format and of the accumulation."""
    try:
        u_s = _FORMATS[storage][0]
    except KeyError as err:
        raise ValueError(f"storage must be one of 'float64', 'float32', 'float16', "
                         f"'bfloat16'; got {storage!r}") from err
    return u_s, (_U64 if storage == "float64" else _U32)


def sum_tolerance(vocab_size: int, storage: str = "float64") -> float:
    """How far from one the sum of a computed probability row may be (issue 9, chapter 2).

    This is the tolerance every row gets; :func:`row_sum_tolerances` widens it, row by row,
    by two terms that only some rows need (float16 underflow, a left-to-right sum). The
    derivation of all of them:

    A row is what an engine hands over: ``p_i = fl(e_i / S)`` with ``e_i = exp(z_i − m)``
    and the normaliser ``S = Σ e_i`` accumulated over V terms, the result stored in some
    format. Write ``u_s`` for the unit roundoff of the storage format (2⁻²⁴ float32, 2⁻¹¹
    float16, 2⁻⁸ bfloat16, 2⁻⁵³ float64) and ``u_a`` for that of the accumulation
    (float32 for every low-precision format: engines accumulate softmax sums in float32,
    torch's float16 and bfloat16 softmax included; float64 for float64 rows). Then
    Σ p̃_i − 1 = Σ (p̃_i − p_i) + (S/Ŝ − 1) has two parts:

    1. **Storing each entry.** An entry in the format's normal range changes by at most
       ``u_s · p_i``, so those entries move the sum by at most ``u_s`` in all (Σ p_i = 1),
       whatever V is. An entry below the smallest normal number (2⁻¹⁴ ≈ 6.1·10⁻⁵ in
       float16) is stored as a subnormal or as 0 with an *absolute* error of at most half
       the smallest subnormal, ``η_s/2`` (2⁻²⁵ ≈ 3.0·10⁻⁸ in float16). With ``n`` such
       entries in a row that is ``n·η_s/2``, at most ``V·η_s/2``: 4.5·10⁻³ for float16 at
       V = 151,936, where almost every tail entry lies below 2⁻¹⁴ (1/V ≈ 6.6·10⁻⁶) and a
       confident row flushes most of them to 0. Those flushed entries all err downwards;
       the ones kept as nonzero subnormals round either way (in chapter 2's confident
       row, about a fifth of the subnormal entries round up), so the errors do not all
       share a sign, though their sum is downward. The bound counts absolute errors and
       does not depend on their signs. For float32 and bfloat16 (η_s = 2⁻¹⁴⁹, 2⁻¹³³) the
       term is below 10⁻³⁴.
    2. **The normaliser.** Every entry is divided by the same computed Ŝ, so a relative
       error ε in Ŝ moves the sum by about −ε. How large ε is depends on the order of the
       additions (Higham, *Accuracy and Stability*, §4.2, with γ_n = n u_a/(1 − n u_a)):

       * pairwise (tree) summation, what numpy and GPU reductions do:
         |ε| ≤ γ_⌈log₂V⌉ ≈ 18 u_a ≈ 1.1·10⁻⁶ for float32 at V = 151,936;
       * a running (left-to-right) sum, |ε| ≤ γ_{V−1} ≈ 9.1·10⁻³ — too lenient to
         use: it would accept a row that sums to 0.991. What the bound allows is not what
         happens: rounding errors of spread-out terms are about as often up as down.
         Treating them as independent and mean zero, |ε| ≤ λ √V u_a with probability at
         least 1 − 2V exp(−λ²(1 − u_a)²/2) (Higham & Mary 2019, to first order; the
         factor V is a union bound over the partial sums). With λ = 10 and V = 151,936
         that is 1 − 6·10⁻¹⁷. Eight SIMD lanes, each a running sum, are covered by the same
         bound (torch's float32 CPU softmax at V = 151,936 with logits of standard deviation
         3 is off by about 5·10⁻⁶, an eight-lane sum by about 1.3·10⁻⁵).
       * The exception is a term smaller than half a unit in the last place of the running
         sum s it is added to: it is lost entirely, always in the same direction (Ŝ too
         small, the row's sum above one). Since ulp(s)/2 ≤ u_a s and s ≈ S·P_{i−1}, with
         P_{i−1} = p_1 + … + p_{i−1} the row's own cumulative sum, the terms a running sum
         in vocabulary order can lose are those with p_i < u_a P_{i−1}, and their mass
         ``D = Σ {p_i : p_i < u_a P_{i−1}}`` bounds the loss. For float32 rows at
         V = 151,936 with logits of standard deviation 3–4, D ≈ 5·10⁻⁴ while the running
         sum is off by about 2.5·10⁻⁴ (above the λ √V u_a bound in 1 row of 20). A sum
         whose partial sums are smaller (lanes, trees) loses no more. D is one-sided; it
         only widens the tolerance above one.

    The few extra u_a from the exponentials and the division are absorbed in λ √V ≥ 10.
    So every row gets ``tol = max(SUM_TOL, u_s + λ √V u_a)``, returned here: about
    2.3·10⁻⁴ for float32, 7.2·10⁻⁴ for float16 and 4.1·10⁻³ for bfloat16 at V = 151,936
    (``SUM_TOL`` for float64 rows: hand-typed examples). :func:`row_sum_tolerances` adds
    ``n·η_s/2`` on both sides and D above one; a row that sums to 0.99 is still rejected
    in every format at this V, and a float32 row scaled by 0.999 still is too (its sum is
    below one, where only the underflow term widens the tolerance, and it is below 10⁻³⁴
    in float32).
    """
    V = int(vocab_size)
    if V < 1:
        raise ValueError(f"vocab_size must be an integer ≥ 1; got {vocab_size!r}")
    u_s, u_a = _unit_roundoffs(storage)
    return max(SUM_TOL, u_s + ROUNDING_LAMBDA * np.sqrt(V) * u_a)


def row_sum_tolerances(a: np.ndarray, storage: str) -> tuple[np.ndarray, np.ndarray]:
    """Per-row tolerances (below one, above one) for rows ``a`` stored in ``storage``.

    ``a`` holds the rows' values (float64, vocabulary on the last axis). Each row gets
    :func:`sum_tolerance` plus ``n·η_s/2`` on both sides, where ``n`` counts its entries
    below the format's smallest normal number (zeros included), and, above one only, the
    mass ``D`` of the entries a left-to-right float32 running sum may lose (see
    :func:`sum_tolerance`, points 1 and 2). Both terms are derived bounds computed from
    the row itself; neither depends on a row being far from one.
    """
    u_s, u_a = _unit_roundoffs(storage)
    _, tiny, eta = _FORMATS[storage]
    base = sum_tolerance(a.shape[-1], storage)
    underflow = (a < tiny).sum(axis=-1) * (eta / 2)
    before = np.cumsum(a, axis=-1) - a          # P_{i−1}
    lost = np.where(a < u_a * before, a, 0.0).sum(axis=-1)
    return base + underflow, base + underflow + lost


def _storage(dtype_name: str, a_in: np.ndarray | None = None) -> str:
    """Name of the format a probability array arrived in (bfloat16 detected by its bits).

    A float32 array ``a_in`` whose every entry has zero low 16 bits holds bfloat16 values
    (torch: ``probs.bfloat16().float()``); its rounding is bfloat16's. Without ``a_in`` a
    float32 array is reported as float32.
    """
    if dtype_name.endswith("bfloat16"):
        return "bfloat16"
    if dtype_name.endswith("float16"):
        return "float16"
    if dtype_name.endswith("float32"):
        if a_in is not None and a_in.size:
            bits = np.ascontiguousarray(a_in).view(np.uint32)
            if not np.bitwise_and(bits, np.uint32(0xFFFF)).any():
                return "bfloat16"
        return "float32"
    return "float64"


def as_distribution(x, name: str, *, min_ndim: int = 1) -> np.ndarray:
    """Return ``x`` as float64 probability vectors (vocabulary on the last axis).

    Rules: finite, non-negative, at least ``min_ndim`` dimensions, a non-empty last axis,
    and each vector sums to 1 within :func:`sum_tolerance` for its format and vocabulary
    size (``SUM_TOL`` for float64; larger for float32, float16 and bfloat16 rows, as
    engines produce them), widened per row by :func:`row_sum_tolerances` for float16
    underflow and the terms a running sum loses. Accepted rows are renormalised in float64, so every function
    downstream works with exact distributions. A torch bfloat16 tensor is read through
    ``.float()``; pass low-precision rows in their own dtype, not upcast to float64, so
    that the tolerance knows their precision.
    """
    raw = x
    torch_bf16 = str(getattr(x, "dtype", "")).endswith("bfloat16") and hasattr(x, "float")
    if torch_bf16:
        raw = x.float()          # torch bfloat16 → float32 (numpy has no bfloat16)
    try:
        a_in = np.asarray(raw)
        a = np.asarray(a_in, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be an array of probabilities; got {x!r}") from err
    if a.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimension(s) (vocabulary on "
                         f"the last axis); got shape {a.shape}")
    if a.shape[-1] == 0:
        raise ValueError(f"{name} must have a non-empty vocabulary axis; got shape {a.shape}")
    lo = a.min() if a.size else 0.0     # NaN propagates, -inf and negatives show
    if a.size and (not np.isfinite(lo) or lo < 0 or not np.isfinite(a.max())):
        if np.isnan(a).any():
            raise ValueError(f"{name} contains NaN; probabilities must be finite numbers")
        if np.isinf(a).any():
            raise ValueError(f"{name} contains inf; probabilities must be finite numbers")
        raise ValueError(f"{name} has negative entries (min {lo:.3g}); probabilities "
                         "must be ≥ 0")
    storage = _storage("bfloat16" if torch_bf16 else str(a_in.dtype))
    V = a.shape[-1]
    tol = sum_tolerance(V, storage)
    s = a.sum(axis=-1)
    err = np.abs(s - 1.0)
    if storage == "float32" and (err > tol).any():
        # only now pay for a look at the bits: bfloat16 values stored as float32?
        storage = _storage("float32", a_in)
        tol = sum_tolerance(V, storage)
    if (err > tol).any():
        # only now pay for the per-row terms: float16 underflow, a running sum's lost terms
        below, above = row_sum_tolerances(a, storage)
        row_tol = np.where(s < 1.0, below, above)
        over = err - row_tol
        if (over > 0).any():
            i = np.unravel_index(int(np.argmax(over)), np.shape(s)) if np.ndim(s) else ()
            hint = (" (rows computed in float32 or bfloat16 and then upcast should be "
                    "passed in their own dtype)" if storage == "float64" else "")
            where = f" in row {tuple(int(j) for j in i)}" if i else ""
            raise ValueError(f"{name} must sum to 1 along the last axis (within "
                             f"{float(np.asarray(row_tol)[i]):.3g} for {storage} rows of "
                             f"length {V}){hint}; found a sum of "
                             f"{float(np.asarray(s)[i]):.10f}{where}")
    off = err > RENORMALISE_EPS
    if np.any(off):
        a = a / np.where(off, s, 1.0)[..., None]
    return a


def same_shape(p: np.ndarray, q: np.ndarray, pname: str = "p", qname: str = "q") -> None:
    if p.shape != q.shape:
        raise ValueError(f"{pname} and {qname} must have the same shape; got {p.shape} and "
                         f"{q.shape}")


def as_probability(x, name: str) -> np.ndarray:
    """A real array with every entry in [0, 1] (for example an acceptance rate α)."""
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a real number in [0, 1]; got {x!r}") from err
    if np.isnan(a).any():
        raise ValueError(f"{name} must be in [0, 1]; got NaN")
    if ((a < 0) | (a > 1)).any():
        bad = a[(a < 0) | (a > 1)].flat[0]
        raise ValueError(f"{name} must be in [0, 1]; got {bad:g}")
    return a


def as_count(x, name: str, *, minimum: int = 0) -> np.ndarray:
    """An integer-valued array ≥ ``minimum`` (for example the draft length k)."""
    if isinstance(x, bool | np.bool_):
        raise ValueError(f"{name} must be an integer ≥ {minimum}; got a bool")
    try:
        a = np.asarray(x)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be an integer ≥ {minimum}; got {x!r}") from err
    if a.dtype == bool or not (np.issubdtype(a.dtype, np.integer)
                               or np.issubdtype(a.dtype, np.floating)):
        raise ValueError(f"{name} must be an integer ≥ {minimum}; got {x!r}")
    if np.issubdtype(a.dtype, np.floating):
        if not np.isfinite(a).all():
            raise ValueError(f"{name} must be a finite integer ≥ {minimum}; got {x!r}")
        if (a != np.round(a)).any():
            raise ValueError(f"{name} must be an integer ≥ {minimum}; got a non-integer "
                             f"value {a[a != np.round(a)].flat[0]:g}")
        a = a.astype(np.int64)
    if (a < minimum).any():
        raise ValueError(f"{name} must be an integer ≥ {minimum}; got {a[a < minimum].flat[0]}")
    return a.astype(np.int64)


def as_positive(x, name: str, *, allow_inf: bool = True) -> np.ndarray:
    """A real array > 0 (for example the draft speed ratio c). inf is allowed if asked."""
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a positive number; got {x!r}") from err
    if np.isnan(a).any():
        raise ValueError(f"{name} must be a positive number; got NaN")
    if (a <= 0).any():
        raise ValueError(f"{name} must be > 0; got {a[a <= 0].flat[0]:g}")
    if not allow_inf and np.isinf(a).any():
        raise ValueError(f"{name} must be finite; got inf")
    return a


def as_generator(rng, name: str = "rng") -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"{name} must be a numpy.random.Generator (np.random.default_rng(seed)); "
                         f"got {type(rng).__name__}")
    return rng


def as_int(x, name: str, *, minimum: int = 0) -> int:
    if isinstance(x, bool) or not isinstance(x, numbers.Integral | float | np.floating):
        raise ValueError(f"{name} must be an integer ≥ {minimum}; got {x!r}")
    return int(as_count(x, name, minimum=minimum))


def scalar_or_array(a: np.ndarray):
    """Return a Python float/int for 0-d results, the array otherwise."""
    if np.ndim(a) == 0:
        # 0-d arrays *and* numpy scalars (np.int64 is not an int) become Python numbers
        return a.item() if isinstance(a, np.ndarray | np.generic) else a
    return a


def as_nonnegative_float(x, name: str) -> float:
    """A finite real number ≥ 0 (for example a noise scale or an exponent)."""
    try:
        v = float(x)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a number ≥ 0; got {x!r}") from err
    if not np.isfinite(v) or v < 0:
        raise ValueError(f"{name} must be a finite number ≥ 0; got {x!r}")
    return v


def as_existing_file(path, what: str = "file"):
    """``None`` for ``None`` (the caller then reads its recorded default), else ``path`` as
    an existing file's ``pathlib.Path``; ``what`` names the file in the error."""
    if path is None:
        return None
    if not isinstance(path, str | Path):
        raise ValueError(f"path must be a str or pathlib.Path (or None); got "
                         f"{type(path).__name__}")
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"path must name an existing {what}; {str(p)!r} does not exist")
    return p
