"""Figures for chapter 1: the roofline and the time of one forward pass."""

from __future__ import annotations

import numpy as np

from .. import costmodel as cm
from .style import PALETTE, new_axes

__all__ = ["roofline_figure", "forward_time_figure", "verify_cost_figure"]


def roofline_figure(hardware: cm.Hardware = cm.H100_SXM, bytes_per_param: float = 2.0,
                    marks: dict | None = None):
    """Attainable FLOP/s against arithmetic intensity (log–log), with chosen n marked.

    ``marks`` maps a label to a number of tokens per pass, e.g. ``{"n = 1": 1}``.
    """
    marks = {"one token": 1} if marks is None else marks
    n_star = cm.ridge_point(hardware, bytes_per_param)
    n = np.unique(np.round(np.logspace(0, np.log10(max(64 * n_star, 10)), 400)))
    intensity = np.asarray(cm.arithmetic_intensity(n, bytes_per_param))
    attain = np.minimum(hardware.peak_flops, hardware.bandwidth * intensity)
    fig, ax = new_axes()
    ax.loglog(intensity, attain / 1e12, color=PALETTE["target"], lw=2.2, label="roofline")
    ax.axvline(cm.arithmetic_intensity(1, bytes_per_param) * n_star, color=PALETTE["grey"],
               ls="--", lw=1.2, label=f"ridge point (n* ≈ {n_star:.0f} tokens)")
    markers = ["o", "s", "^", "D", "v"]
    for i, (lab, m) in enumerate(marks.items()):
        im = float(cm.arithmetic_intensity(m, bytes_per_param))
        y = min(hardware.peak_flops, hardware.bandwidth * im) / 1e12
        ax.plot([im], [y], markers[i % len(markers)], ms=8, color=PALETTE["residual"],
                markeredgecolor="black", label=lab, zorder=3)
    ax.set_xlabel("arithmetic intensity (FLOP per byte of weights)")
    ax.set_ylabel("attainable TFLOP/s")
    ax.set_title(f"{hardware.name}, {bytes_per_param:g} bytes per parameter")
    ax.legend(fontsize=8, loc="lower right")
    return fig


def forward_time_figure(n_params: float, hardware: cm.Hardware = cm.H100_SXM,
                        bytes_per_param: float = 2.0, k: int | None = None,
                        n_max: int = 4096, kv_bytes: float = 0.0):
    """Time of one forward pass against tokens scored (log–log): flat, then linear.

    Draws the memory floor, the compute line and their maximum; marks n = k + 1 if ``k``.
    """
    n = np.unique(np.round(np.logspace(0, np.log10(n_max), 300))).astype(int)
    t = np.asarray(cm.forward_time(n, n_params, hardware, bytes_per_param, kv_bytes)) * 1e3
    tm = float(cm.memory_time(n_params, hardware, bytes_per_param, kv_bytes)) * 1e3
    tc = np.asarray(cm.compute_time(n, n_params, hardware)) * 1e3
    fig, ax = new_axes()
    ax.loglog(n, np.full(n.shape, tm), ls="--", color=PALETTE["draft"], lw=1.4,
              label="memory: bytes ÷ bandwidth")
    ax.loglog(n, tc, ls=":", color=PALETTE["residual"], lw=1.6,
              label="compute: 2·params·n ÷ peak")
    ax.loglog(n, t, color=PALETTE["target"], lw=2.4, label="model: the larger of the two")
    if k is not None:
        tk = float(cm.forward_time(k + 1, n_params, hardware, bytes_per_param, kv_bytes)) * 1e3
        ax.plot([k + 1], [tk], "o", ms=8, color=PALETTE["overlap"], markeredgecolor="black",
                label=f"verify k = {k} drafts (n = k + 1)", zorder=3)
    ax.set_xlabel("tokens scored in one forward pass, n")
    ax.set_ylabel("time per forward pass (ms)")
    ax.set_title(f"{n_params / 1e9:g}B parameters, {hardware.name}")
    ax.legend(fontsize=8, loc="upper left")
    return fig


def verify_cost_figure(n_params: float, hardware_list=cm.ILLUSTRATIVE_GPUS,
                       bytes_per_param_list=(2.0, 1.0, 0.5), k_max: int = 512):
    """T(k+1)/T(1) against k for several GPUs and weight precisions (the one-step cost)."""
    k = np.arange(0, k_max + 1)
    fig, ax = new_axes()
    colours = [PALETTE["target"], PALETTE["draft"], PALETTE["overlap"], PALETTE["residual"]]
    styles = ["-", "--", ":", "-."]
    for i, hw in enumerate(hardware_list):
        for j, b in enumerate(bytes_per_param_list):
            r = np.asarray(cm.verify_cost(k, n_params, hw, b))
            ax.plot(k + 1, r, color=colours[i % len(colours)], ls=styles[j % len(styles)],
                    lw=1.8, label=f"{hw.name.split(' (')[0]}, {b:g} B/param")
    ax.set_xscale("log")
    ax.set_xlabel("tokens scored in one pass, n = k + 1")
    ax.set_ylabel("cost in target steps, T(n) / T(1)")
    ax.legend(fontsize=7, ncol=2)
    return fig
