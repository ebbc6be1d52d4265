"""Requests that queue for one server: TTFT, TPOT and the M/G/1 queue (chapter 11).

Requests arrive as a Poisson process of rate λ and one server decodes one request at a
time (batch size one), first come first served. A request's service time is its prefill
plus the time to decode its response, so the system is an M/G/1 queue. The
Pollaczek–Khinchine formula gives the mean wait from the first two moments of the service
time (chapter 11, eq. ch11-pk); speculation changes both. Times are in any unit (the
chapter uses target steps); rates are per the same unit. This model has no batching:
continuous batching is not an M/G/1 queue, and nothing here describes it. numpy only.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ._validate import as_generator, as_int, as_positive, scalar_or_array
from .serving import iteration_cost, iterations_to_n_moments

__all__ = [
    "utilisation",
    "pk_mean_wait",
    "mean_ttft",
    "service_moments",
    "wait_ratio",
    "wait_ratio_threshold",
    "fifo_waits",
    "simulate_mg1_waits",
    "regenerative_mean_wait",
    "overloaded_mean_e2e",
    "overloaded_service_mean",
    "overloaded_excess_bounds",
    "gamma_laplace",
    "simulate_overloaded_runs",
]


def _rate(x, name: str) -> np.ndarray:
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a finite number ≥ 0; got {x!r}") from err
    if np.isnan(a).any() or np.isinf(a).any():
        raise ValueError(f"{name} must be a finite number ≥ 0; got {x!r}")
    if (a < 0).any():
        raise ValueError(f"{name} must be ≥ 0 (a rate cannot be negative); got "
                         f"{a[a < 0].flat[0]:g}")
    return a


def _moments(mean, second, mean_name: str, second_name: str):
    m1 = as_positive(mean, mean_name, allow_inf=False)
    m2 = as_positive(second, second_name, allow_inf=False)
    m1, m2 = np.broadcast_arrays(m1, m2)
    if (m2 < m1**2 * (1 - 1e-12)).any():
        raise ValueError(f"{second_name} must be ≥ {mean_name}² (a variance is never "
                         f"negative)")
    return m1, m2


def utilisation(arrival_rate: ArrayLike, service_mean: ArrayLike) -> float | np.ndarray:
    """Offered load φ = λ E[T_svc] of one server (ch. 11, eq. ch11-pk).

    Below one it is the server's utilisation; at or above one there is no steady state
    (the overloaded runs of proposition ch11-prop-over).

    Parameters
    ----------
    arrival_rate : array_like
        λ ≥ 0, requests per unit of time.
    service_mean : array_like
        E[T_svc] > 0, in the same unit.

    Returns
    -------
    float or ndarray
        λ E[T_svc]; the long-run fraction of time the server is busy when φ < 1.
    """
    lam = _rate(arrival_rate, "arrival_rate")
    m1 = as_positive(service_mean, "service_mean", allow_inf=False)
    return scalar_or_array(lam * m1)


def pk_mean_wait(arrival_rate: ArrayLike, service_mean: ArrayLike,
                 service_second_moment: ArrayLike) -> float | np.ndarray:
    """Mean wait in the queue of an M/G/1 server (ch. 11, eq. ch11-pk).

    Pollaczek–Khinchine: E[T_wait] = λ E[T_svc²] / (2 (1 − φ)) with φ = λ E[T_svc].

    Parameters
    ----------
    arrival_rate : array_like
        λ ≥ 0 (Poisson arrivals).
    service_mean, service_second_moment : array_like
        E[T_svc] > 0 and E[T_svc²] ≥ E[T_svc]².

    Raises
    ------
    ValueError
        If λ < 0, a moment is not positive, E[T_svc²] < E[T_svc]², or φ ≥ 1 (no
        stationary queue: the wait grows without bound).
    """
    lam = _rate(arrival_rate, "arrival_rate")
    m1, m2 = _moments(service_mean, service_second_moment, "service_mean",
                      "service_second_moment")
    phi = lam * m1
    if (phi >= 1).any():
        raise ValueError(f"utilisation arrival_rate × service_mean must be < 1 for a "
                         f"stable queue; got {np.max(phi):g}")
    return scalar_or_array(lam * m2 / (2 * (1 - phi)))


def mean_ttft(arrival_rate: ArrayLike, service_mean: ArrayLike,
              service_second_moment: ArrayLike, prefill: ArrayLike) -> float | np.ndarray:
    """Mean time to first token, E[T_wait] + T_pre, at batch size one (ch. 11, eq. ch11-pk).

    The first token leaves with the prefill, after the request's wait in the queue.
    ``prefill`` ≥ 0 must not exceed ``service_mean`` (the prefill is part of the service).
    """
    pre = _rate(prefill, "prefill")
    m1 = as_positive(service_mean, "service_mean", allow_inf=False)
    if (pre > m1).any():
        raise ValueError("prefill must be ≤ service_mean (the prefill is part of the "
                         "service time)")
    return scalar_or_array(pk_mean_wait(arrival_rate, service_mean,
                                        service_second_moment) + pre)


def service_moments(alpha: float, k: int, c: float, lengths: ArrayLike,
                    weights: ArrayLike | None = None, prefill: float = 0.0,
                    verify_cost: float = 1.0) -> tuple[float, float]:
    """E[T_svc] and E[T_svc²] of one request, in target steps (ch. 11, eq. ch11-svc).

    T_svc = T_pre + θ M(n): the prefill, then M(n) iterations of cost θ = k/c + V to
    decode n tokens (chapter 11's renewal count, its exact moments), with n drawn from
    the discrete law ``weights`` on ``lengths``. k = 0 is plain decoding (θ = 1,
    M(n) = n).

    Returns
    -------
    (float, float)
        The mean and the second moment.
    """
    n = np.atleast_1d(np.asarray(lengths))
    w = (np.full(n.size, 1.0 / n.size) if weights is None
         else np.atleast_1d(np.asarray(weights, dtype=float)))
    if n.ndim != 1 or w.shape != n.shape:
        raise ValueError("lengths and weights must be 1-D of the same length")
    if (w < 0).any() or not np.isclose(w.sum(), 1.0):
        raise ValueError("weights must be ≥ 0 and sum to 1")
    pre = float(_rate(prefill, "prefill"))
    th = float(iteration_cost(k, c, verify_cost))
    mom = np.array([iterations_to_n_moments(alpha, k, int(as_int(x, "lengths",
                                                                  minimum=1)))
                    for x in n])
    mean_t = pre + th * mom[:, 0]
    second_t = mean_t**2 + th**2 * mom[:, 1]
    return float(w @ mean_t), float(w @ second_t)


def wait_ratio(phi_plain: ArrayLike, plain_mean: ArrayLike, plain_second: ArrayLike,
               spec_mean: ArrayLike, spec_second: ArrayLike) -> float | np.ndarray:
    """E[T_wait] plain ÷ E[T_wait] speculative at the same λ (ch. 11, eq. ch11-wait-ratio).

    With S_svc = E[T_p]/E[T_s] and φ_p the plain utilisation, the ratio is
    (E[T_p²]/E[T_s²]) (1 − φ_p/S_svc)/(1 − φ_p).

    Parameters
    ----------
    phi_plain : array_like
        Utilisation of the plain server, in [0, 1).
    plain_mean, plain_second, spec_mean, spec_second : array_like
        E[T_svc] and E[T_svc²] of the plain and the speculative service.

    Returns
    -------
    float or ndarray
        The ratio of the two mean waits (eq. ch11-wait-ratio).
    """
    phi = _rate(phi_plain, "phi_plain")
    if (phi >= 1).any():
        raise ValueError("phi_plain must be < 1 (a stable plain queue)")
    m1p, m2p = _moments(plain_mean, plain_second, "plain_mean", "plain_second")
    m1s, m2s = _moments(spec_mean, spec_second, "spec_mean", "spec_second")
    s = m1p / m1s
    return scalar_or_array((m2p / m2s) * (1 - phi / s) / (1 - phi))


def wait_ratio_threshold(plain_mean: ArrayLike, plain_second: ArrayLike,
                         spec_mean: ArrayLike, spec_second: ArrayLike
                         ) -> float | np.ndarray:
    """Plain utilisation above which the wait falls more than the speedup (ch. 11).

    Theorem ch11-thm-wait: with S_svc = E[T_p]/E[T_s] > 1 and ξ = (1 + cv_s²)/(1 + cv_p²),
    cv the coefficients of variation of the two service times, the wait ratio exceeds
    S_svc exactly for φ_p > φ* = max(0, (ξ − S_svc)/(ξ − 1)) when ξ > 1, and for every
    φ_p when ξ ≤ 1 (φ* = 0).

    Parameters
    ----------
    plain_mean, plain_second, spec_mean, spec_second : array_like
        E[T_svc] and E[T_svc²] of the plain and the speculative service.

    Returns
    -------
    float or ndarray
        φ* in [0, 1).

    Raises
    ------
    ValueError
        Unless spec_mean < plain_mean, or if a second moment is below its mean squared.
    """
    m1p, m2p = _moments(plain_mean, plain_second, "plain_mean", "plain_second")
    m1s, m2s = _moments(spec_mean, spec_second, "spec_mean", "spec_second")
    s = m1p / m1s
    if (s <= 1).any():
        raise ValueError("spec_mean must be < plain_mean (a speedup above one)")
    r = (m2s / m1s**2) / (m2p / m1p**2)
    with np.errstate(divide="ignore", invalid="ignore"):
        th = np.where(r > 1, np.maximum(0.0, (r - s) / (r - 1)), 0.0)
    return scalar_or_array(th)


def fifo_waits(interarrivals: ArrayLike, services: ArrayLike) -> np.ndarray:
    """Waits of a first-come-first-served single server, by Lindley's recursion (ch. 11).

    W_1 = 0 and W_{i+1} = max(0, W_i + T_i − A_{i+1}), with A_{i+1} the time between
    arrivals i and i + 1 (``interarrivals[0]`` is unused). Vectorised:
    W_i = U_i − min_{j ≤ i} U_j with U the partial sums of T_i − A_{i+1}.

    Parameters
    ----------
    interarrivals, services : array_like
        1-D, same length, finite and ≥ 0.

    Returns
    -------
    ndarray
        The wait of each customer, W_1 = 0.
    """
    a = np.asarray(interarrivals, dtype=float)
    t = np.asarray(services, dtype=float)
    if a.ndim != 1 or t.shape != a.shape:
        raise ValueError("interarrivals and services must be 1-D of the same length")
    if (a < 0).any() or (t < 0).any() or not (np.isfinite(a).all() and np.isfinite(t).all()):
        raise ValueError("interarrivals and services must be finite and ≥ 0")
    u = np.concatenate([[0.0], np.cumsum(t[:-1] - a[1:])])
    return u - np.minimum.accumulate(u)


def simulate_mg1_waits(arrival_rate: float, services: ArrayLike,
                       rng: np.random.Generator) -> np.ndarray:
    """Waits of customers with the given service times and Poisson arrivals (ch. 11).

    A discrete-event simulation of the M/G/1 queue starting empty: exponential gaps of
    mean 1/λ, then :func:`fifo_waits`.

    Parameters
    ----------
    arrival_rate : float
        λ > 0.
    services : array_like
        The customers' service times, in order of arrival.
    rng : numpy.random.Generator
        Source of the arrival gaps.

    Returns
    -------
    ndarray
        The waits in the queue.
    """
    lam = float(_rate(arrival_rate, "arrival_rate"))
    if lam <= 0:
        raise ValueError("arrival_rate must be > 0 to simulate arrivals")
    rng = as_generator(rng)
    t = np.asarray(services, dtype=float)
    return fifo_waits(rng.exponential(1 / lam, t.size), t)


def regenerative_mean_wait(waits: ArrayLike) -> tuple[float, float, int]:
    """Mean wait and its standard error by the regenerative method (ch. 11).

    A busy cycle starts at each customer who finds the server idle (wait 0); cycles are
    i.i.d., so the mean wait is Σ Y_i / Σ K_i (Y_i the waits of cycle i, K_i its
    customers), with the delta-method standard error √Σ (Y_i − r K_i)² / Σ K_i. The last,
    unfinished cycle is dropped.

    Parameters
    ----------
    waits : array_like
        Waits of successive customers from an empty start (the first is 0).

    Returns
    -------
    (float, float, int)
        The estimate, its standard error and the number of complete cycles.
    """
    w = np.asarray(waits, dtype=float)
    starts = np.flatnonzero(w == 0)
    if starts.size < 3 or starts[0] != 0:
        raise ValueError("waits must start with 0 and contain at least 3 busy cycles")
    y = np.add.reduceat(w, starts)[:-1]
    kk = np.diff(starts).astype(float)
    r = y.sum() / kk.sum()
    se = np.sqrt(np.sum((y - r * kk) ** 2)) / kk.sum()
    return float(r), float(se), int(kk.size)


def overloaded_service_mean(duration: ArrayLike,
                            n_requests: ArrayLike) -> float | np.ndarray:
    """Estimate of E[T_svc] from a run's duration: duration / n (ch. 11, ch11-prop-over).

    With the first request sent at time 0 (as vLLM's benchmark does), the duration is
    n E[T_svc] plus the server's idle time, so E[duration]/n ≥ E[T_svc]: the estimate
    is high by the mean idle time over n, at most (n − 1) E[e^{−λT}]/(nλ) (see
    :func:`overloaded_excess_bounds`).

    Parameters
    ----------
    duration : array_like
        The run's length, from the first request to the last completion.
    n_requests : array_like
        n > 0 requests.

    Returns
    -------
    float or ndarray
        duration / n.
    """
    d = as_positive(duration, "duration", allow_inf=False)
    n = as_positive(n_requests, "n_requests", allow_inf=False)
    return scalar_or_array(d / n)


def overloaded_mean_e2e(n_requests: ArrayLike, arrival_rate: ArrayLike,
                        service_mean: ArrayLike) -> float | np.ndarray:
    """Lower bound on the mean end-to-end latency of an n-request run (ch. 11).

    Request i arrives at 𝒯_i (𝒯_1 = 0, E[𝒯_i] = (i − 1)/λ) and leaves at
    T_1 + … + T_i plus the server's idle time before it, so
    E[e2e_i] ≥ i E[T_svc] − (i − 1)/λ whatever the law of T_svc, and the mean over the n
    requests is at least (n + 1) E[T_svc]/2 − (n − 1)/(2λ) (eq. ch11-over,
    proposition ch11-prop-over). The excess is at most (n − 1) E[e^{−λT}]/(2λ)
    (:func:`overloaded_excess_bounds`); it is not zero, because Poisson gaps can exceed
    any service time.

    Parameters
    ----------
    n_requests, arrival_rate, service_mean : array_like
        n > 0, λ > 0 and E[T_svc] > 0.

    Returns
    -------
    float or ndarray
        (n + 1) E[T_svc]/2 − (n − 1)/(2λ).
    """
    n = as_positive(n_requests, "n_requests", allow_inf=False)
    lam = as_positive(arrival_rate, "arrival_rate", allow_inf=False)
    m1 = as_positive(service_mean, "service_mean", allow_inf=False)
    return scalar_or_array((n + 1) * m1 / 2 - (n - 1) / (2 * lam))


def overloaded_excess_bounds(n_requests: int, arrival_rate: float,
                             laplace: float) -> tuple[float, float, float]:
    """How far an n-request run can exceed eq. ch11-over (ch. 11, ch11-prop-over).

    The idle time before request j is at most (G_j − T_{j−1})⁺, G_j the exponential gap
    before it, whose mean is E[e^{−λT}]/λ (memorylessness). Summed over j = 2 … n:

    * E[duration] − n E[T] ≤ (n − 1) E[e^{−λT}]/λ,
    * mean e2e − eq. ch11-over ≤ (n − 1) E[e^{−λT}]/(2λ) (request j's idle time delays
      the n − j + 1 requests from j on),
    * P(the server idles before the last request) ≤ (n − 1) E[e^{−λT}] (union bound).

    Parameters
    ----------
    n_requests : int
        n ≥ 1.
    arrival_rate : float
        λ > 0.
    laplace : float
        E[e^{−λT_svc}] in [0, 1] (the Laplace transform of the service law at λ).

    Returns
    -------
    (float, float, float)
        The bounds on the duration's excess, the mean e2e's excess, and P(idle).
    """
    n = as_int(n_requests, "n_requests", minimum=1)
    lam = float(as_positive(arrival_rate, "arrival_rate", allow_inf=False))
    L = float(np.asarray(laplace, dtype=float))
    if not 0.0 <= L <= 1.0:
        raise ValueError(f"laplace must be E[exp(−λT)], in [0, 1]; got {laplace!r}")
    return (n - 1) * L / lam, (n - 1) * L / (2 * lam), min(1.0, (n - 1) * L)


def gamma_laplace(mean: ArrayLike, cv: ArrayLike, s: ArrayLike) -> float | np.ndarray:
    """E[e^{−sT}] for a gamma service time of the given mean and cv (ch. 11).

    Shape 1/cv², scale mean·cv²: E[e^{−sT}] = (1 + s·mean·cv²)^{−1/cv²}.
    """
    m = as_positive(mean, "mean", allow_inf=False)
    v = as_positive(cv, "cv", allow_inf=False)
    s_ = as_positive(s, "s", allow_inf=False)
    return scalar_or_array((1 + s_ * m * v**2) ** (-1 / v**2))


def simulate_overloaded_runs(services: ArrayLike, arrival_rate: float,
                             rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Replications of an n-request benchmark run at one FIFO server (ch. 11).

    The first request is sent at time 0 and the others after exponential gaps of mean
    1/λ, as in vLLM's ``benchmark_serving.py``; the server may go idle.

    Parameters
    ----------
    services : array_like, shape (R, n)
        Service times of the n requests of each of R runs, in order of arrival.
    arrival_rate : float
        λ > 0.
    rng : numpy.random.Generator
        Source of the arrival gaps.

    Returns
    -------
    dict
        ``arrivals``, ``starts``, ``departures`` (each R × n), ``duration`` (the last
        departure), ``mean_e2e`` (over the n requests) and ``idle`` (total idle time).
    """
    t = np.asarray(services, dtype=float)
    if t.ndim != 2 or t.shape[1] < 1 or (t < 0).any() or not np.isfinite(t).all():
        raise ValueError("services must be a finite (R, n) array of times ≥ 0")
    lam = float(as_positive(arrival_rate, "arrival_rate", allow_inf=False))
    rng = as_generator(rng)
    R, n = t.shape
    gaps = rng.exponential(1 / lam, size=(R, n))
    gaps[:, 0] = 0.0
    arr = np.cumsum(gaps, axis=1)
    start, dep = np.empty_like(t), np.empty_like(t)
    free, idle = np.zeros(R), np.zeros(R)
    for i in range(n):
        idle += np.maximum(arr[:, i] - free, 0.0)
        start[:, i] = np.maximum(free, arr[:, i])
        free = start[:, i] + t[:, i]
        dep[:, i] = free
    return {"arrivals": arr, "starts": start, "departures": dep,
            "duration": dep[:, -1], "mean_e2e": (dep - arr).mean(axis=1),
            "idle": idle}
