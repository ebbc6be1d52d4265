"""The website's live explorers compute what specmath computes (issue 15, "What to build").

Every explorer's Vega-Lite spec (``specmath.widgets.*_live``) is evaluated in Python by
``vegalite_eval`` at sample slider values, and each mark's data is compared with the
specmath functions the kernel's figure uses at the same values: the browser's closed forms
and the precomputed frames cannot drift from the package. The specs are also validated
against the Vega-Lite schema bundled with Altair (the version vendored for the site).
"""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest
from vegalite_eval import evaluate, to_python

import specmath as sm
from specmath.widgets._live import live_html


def _col(rows, name):
    return np.array([r[name] for r in rows], dtype=float)


def _validate(spec):
    jsonschema = pytest.importorskip("jsonschema")
    alt = pytest.importorskip("altair")
    schema = alt.vegalite.v6.schema.core.load_schema()
    errors = [e.message for e in jsonschema.Draft7Validator(schema).iter_errors(spec)]
    assert not errors, errors[:3]


def _slider_points(spec):
    """Each bound parameter at its minimum, maximum and default (others at their defaults)."""
    pts = [{}]
    for p in spec["params"]:
        b = p["bind"]
        vals = [b["min"], b["max"]] if b["input"] == "range" else list(b["options"])
        pts += [{p["name"]: v} for v in vals]
    return pts


# --- chapter 5: speedup --------------------------------------------------------------------

@functools.cache
def _speedup_spec():
    from specmath.widgets.speedup import speedup_live
    return speedup_live(alpha=0.8, k=5, c=10.0, k_max=16)


SPEEDUP_POINTS = [dict(alpha=0.8, k=5, c=10.0), dict(alpha=0.3, k=2, c=1.5),
                  dict(alpha=0.99, k=16, c=100.0), dict(alpha=0.0, k=0, c=1.0),
                  dict(alpha=0.55, k=9, c=3.5)]


@pytest.mark.parametrize("pt", SPEEDUP_POINTS)
def test_speedup_live_curves_equal_specmath_speedup_and_optimal_k(pt):
    a, k, c = pt["alpha"], pt["k"], pt["c"]
    d = evaluate(_speedup_spec(), pt)
    ks = _col(d["speedup_by_k"], "k")
    np.testing.assert_array_equal(ks, np.arange(17))
    np.testing.assert_allclose(_col(d["speedup_by_k"], "S"), sm.speedup(a, ks, c), rtol=1e-12)
    assert [r["k"] for r in d["your_k"]] == [k]
    best = [int(r["k"]) for r in d["best_k"]]
    assert best == [int(sm.optimal_k(a, c, k_max=16))]
    alphas = _col(d["speedup_by_alpha"], "a")
    assert alphas[0] == 0 and abs(alphas[-1] - 1) < 1e-12 and len(alphas) == 201
    np.testing.assert_allclose(_col(d["speedup_by_alpha"], "S"), sm.speedup(alphas, k, c),
                               rtol=1e-12)
    bk = _col(d["best_k_by_alpha"], "a")
    kb = sm.optimal_k(bk, c, k_max=16)
    np.testing.assert_allclose(_col(d["best_k_by_alpha"], "S"), sm.speedup(bk, kb, c),
                               rtol=1e-12)
    (pt_row,) = d["your_point"]
    assert pt_row["S"] == pytest.approx(float(sm.speedup(a, k, c)), rel=1e-12)
    be = d["break_even"]
    assert ([r["a"] for r in be] == [pytest.approx(1 / c)]) if c > 1 else be == []


# --- chapter 4: tokens per iteration ------------------------------------------------------

@functools.cache
def _tokens_spec():
    from specmath.widgets.tokens import tokens_live
    return tokens_live(alpha=0.8, k=5)


@pytest.mark.parametrize("a,k", [(0.8, 5), (0.0, 0), (1.0, 16), (0.35, 3), (0.95, 12)])
def test_tokens_live_law_mean_and_simulation_equal_specmath(a, k):
    d = evaluate(_tokens_spec(), {"alpha": a, "k": k})
    np.testing.assert_array_equal(_col(d["pmf_exact"], "n"), np.arange(1, k + 2))
    np.testing.assert_allclose(_col(d["pmf_exact"], "P"), sm.tokens_per_iteration_pmf(a, k),
                               rtol=1e-12, atol=1e-15)
    (en,) = d["expected_tokens"]
    assert en["n"] == pytest.approx(float(sm.expected_tokens(a, k)), rel=1e-12)
    s = sm.simulate_tokens_per_iteration(a, k, 2000, np.random.default_rng(0))
    freq = np.bincount(s, minlength=k + 2)[1:k + 2] / s.size
    np.testing.assert_allclose(_col(d["simulated"], "f"), freq, atol=1e-6)
    (m,) = d["simulated_mean"]
    assert m["n"] == pytest.approx(s.mean(), abs=1e-6)


# --- chapter 1: cost of a forward pass ----------------------------------------------------

@functools.cache
def _cost_spec():
    from specmath.widgets.cost import cost_live
    return cost_live()


@pytest.mark.parametrize("logp,b,k,gpu", [(np.log10(70.0), 2.0, 4, 1), (-1.0, 0.5, 0, 0),
                                          (3.0, 1.0, 64, 2), (0.5, 2.0, 30, 0)])
def test_cost_live_roofline_equals_costmodel(logp, b, k, gpu):
    from specmath import costmodel as cm
    hw = cm.ILLUSTRATIVE_GPUS[gpu]
    P = 10 ** logp * 1e9
    d = evaluate(_cost_spec(), {"log_params": logp, "bytes": b, "k": k, "gpu": hw.name})
    n = _col(d["forward_time"], "n")
    assert n[0] == 1 and n[-1] == 4096
    np.testing.assert_allclose(_col(d["forward_time"], "t"),
                               np.asarray(cm.forward_time(n, P, hw, b)) * 1e3, rtol=1e-12)
    np.testing.assert_allclose(_col(d["memory_time"], "t"),
                               float(cm.memory_time(P, hw, b)) * 1e3, rtol=1e-12)
    np.testing.assert_allclose(_col(d["compute_time"], "t"),
                               np.asarray(cm.compute_time(n, P, hw)) * 1e3, rtol=1e-12)
    (v,) = d["verify_point"]
    assert v["n"] == k + 1
    assert v["t"] == pytest.approx(float(cm.forward_time(k + 1, P, hw, b)) * 1e3, rel=1e-12)


# --- chapter 10: trees -------------------------------------------------------------------

@functools.cache
def _trees_spec():
    from specmath.widgets.trees import trees_live
    return trees_live()


@pytest.fixture(scope="module")
def trees_spec():
    return _trees_spec()


@pytest.mark.parametrize("c,m_max,n_max", [(0.3, 3, 30), (0.0, 6, 60), (1.0, 1, 4), (0.7, 4, 18)])
def test_trees_live_frames_equal_specmath_multidraft_and_best_tree(trees_spec, c, m_max, n_max):
    from specmath.multidraft import multidraft_acceptance, multidraft_ot_ceiling
    from specmath.trees import best_tree_values, chain_tree, rank_acceptance, tree_expected_accepted
    from specmath.widgets.trees import trees_pair

    d = evaluate(trees_spec, {"closeness": c, "m_max": m_max, "n_max": n_max})
    p, q = trees_pair(c)
    got = {}
    for r in d["multidraft"] + d["tree_budget"]:
        got.setdefault(r["series"], {})[int(r["x"])] = r["y"]
    rec = got["recursive rejection, i.i.d. candidates"]
    assert sorted(rec) == list(range(1, m_max + 1))
    for m, y in rec.items():
        assert y == pytest.approx(multidraft_acceptance(p, q, m), abs=1e-9)
    for m, y in got["optimal-transport ceiling, i.i.d. candidates"].items():
        assert m <= min(3, m_max) and y == pytest.approx(multidraft_ot_ceiling(p, q, m), abs=1e-9)
    acc = rank_acceptance(p, q, n_max)      # as many ranks as nodes: no cap on children
    best = got["best tree (dynamic programme)"]
    assert sorted(best) == list(range(n_max + 1))
    np.testing.assert_allclose([best[n] for n in range(n_max + 1)],
                               best_tree_values(acc, n_max) + 1, atol=1e-9)
    chain = got["chain"]
    assert chain[n_max] == pytest.approx(tree_expected_accepted(chain_tree(n_max), acc) + 1,
                                         abs=1e-9)
    assert all(x <= n_max for s in got.values() for x in s)


def test_live_html_hides_the_spec_outside_the_site_and_escapes_script_ends():
    spec = {"description": "x</script><b>", "params": [], "mark": "point"}
    out = live_html(spec)
    assert out.count("</script>") == 1 and "hidden" in out and "display:none" in out
    assert json.loads(out.split('class="specmath-live-spec">')[1].split("</script>")[0]
                      .replace("<\\/", "</")) == spec
    assert "specmath-live-spec" not in live_html(None)


def test_vega_expression_translation_rejects_unsupported_constructs():
    with pytest.raises(ValueError, match="unsupported"):
        to_python("a ? b : c")
    with pytest.raises(ValueError, match="not supported"):
        to_python("random() + 1")
    assert to_python("if(datum.a >= 1 && !b, pow(x, 2), 0)") == \
        '_if(_d["a"] >= 1  and   not b, pow(x, 2), 0)'


# --- chapter 3: overlap ------------------------------------------------------------------

@functools.cache
def _overlap_spec():
    from specmath.widgets.overlap import overlap_live
    return overlap_live()


@pytest.mark.parametrize("s,t,w", [(1.0, 1.0, 0.0), (-4.0, 0.25, 0.35), (4.0, 3.0, 1.0),
                                   (2.25, 0.6, 0.5)])
def test_overlap_live_draft_alpha_and_tv_equal_specmath(s, t, w):
    from specmath.tv import overlap_pair

    d = evaluate(_overlap_spec(), {"shift": s, "temperature": t, "weight": w})
    p, q = overlap_pair(s, t, w)
    np.testing.assert_allclose(_col(d["target"], "p"), p, rtol=1e-12)
    np.testing.assert_allclose(_col(d["draft"], "q"), q, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(_col(d["overlap"], "m"), np.minimum(p, q), rtol=1e-9, atol=1e-15)
    (pt,) = d["this_draft"]
    assert pt["alpha"] == pytest.approx(float(sm.acceptance_probability(p, q)), abs=1e-12)
    p0, q0 = overlap_pair(s, t, 0.0)
    ws = _col(d["alpha_by_weight"], "w")
    np.testing.assert_allclose(ws, np.linspace(0, 1, 41), atol=1e-15)
    want = [float(sm.acceptance_probability(p0, sm.mix(p0, q0, x))) for x in ws]
    np.testing.assert_allclose(_col(d["alpha_by_weight"], "alpha_w"), want, atol=1e-12)
    np.testing.assert_allclose(_col(d["tv_by_weight"], "tv_w"), 1 - np.array(want), atol=1e-12)


# --- chapter 6: temperature --------------------------------------------------------------

@functools.cache
def _temperature_spec():
    from specmath.widgets.temperature import temperature_live
    return temperature_live()


@pytest.mark.parametrize("logT,noise,seed", [(0.0, 1.0, 6), (-2.0, 0.0, 0), (2.0, 3.0, 20),
                                             (-0.55, 0.4, 11)])
def test_temperature_live_softmax_alpha_curve_and_agreement_equal_specmath(logT, noise, seed):
    from specmath.temperature import alpha_at_temperature
    from specmath.widgets.temperature import default_logits

    d = evaluate(_temperature_spec(), {"log_T": logT, "noise": noise, "seed": seed})
    T = 10 ** logT
    zp, zq = default_logits(noise=noise, seed=seed)
    p, q = sm.softmax(zp, T), sm.softmax(zq, T)
    np.testing.assert_allclose(_col(d["target_bars"], "p"), p[:15], rtol=1e-9, atol=1e-300)
    np.testing.assert_allclose(_col(d["draft_bars"], "q"), q[:15], rtol=1e-9, atol=1e-300)
    assert list(np.argsort(-p, kind="stable")[:15]) == list(range(15))
    (pt,) = d["this_T"]
    assert pt["alpha"] == pytest.approx(float(sm.acceptance_probability(p, q)), abs=1e-12)
    ts = _col(d["alpha_by_T"], "T")
    np.testing.assert_allclose(ts, np.logspace(-2, 2, 121), rtol=1e-12)
    np.testing.assert_allclose(_col(d["alpha_by_T"], "alpha"),
                               alpha_at_temperature(zp, zq, ts), atol=1e-12)
    (ag,) = d["top1_agreement"]
    assert ag["agree"] == float(sm.top1_agreement(sm.softmax(zp), sm.softmax(zq)))


# --- chapter 2: acceptance rule ----------------------------------------------------------

ACC_P = np.array([0.35, 0.25, 0.20, 0.12, 0.08])
ACC_Q = np.array([0.15, 0.40, 0.10, 0.30, 0.05])


@functools.cache
def _acceptance_spec():
    from specmath.widgets.acceptance import acceptance_live
    return acceptance_live(ACC_P, ACC_Q, ["cat", "dog", "fox", "owl", "emu"])


@pytest.mark.parametrize("w,T", [(0.3, 1.0), (0.0, 0.2), (1.0, 3.0), (0.65, 1.7)])
def test_acceptance_live_rule_outputs_equal_specmath(w, T):
    from specmath.acceptance import naive_output_distribution
    from specmath.widgets.acceptance import explorer_draft

    d = evaluate(_acceptance_spec(), {"closeness": w, "draft_T": T})
    q = explorer_draft(ACC_P, ACC_Q, w, T)
    np.testing.assert_allclose(_col(d["rule_exact"], "out"), ACC_P, rtol=1e-12)
    for r in ("always-accept", "accept-if-top", "resample-from-p"):
        np.testing.assert_allclose(_col(d[f"rule_{r}"], "out"),
                                   naive_output_distribution(ACC_P, q, r), atol=1e-12)
    np.testing.assert_allclose(_col(d["target"], "p"), ACC_P)


# --- chapter 8: lossy verification ------------------------------------------------------

_rng8 = np.random.default_rng(8)
LOSSY_P = _rng8.dirichlet(np.ones(12) * 0.6, size=60)
LOSSY_Q = _rng8.dirichlet(np.ones(12) * 0.6, size=60)


@functools.cache
def _lossy_spec():
    from specmath.widgets.engines import lossy_live
    return lossy_live(LOSSY_P, LOSSY_Q, k=4, l=0.5, delta=0.3)


@pytest.mark.parametrize("l,k,delta", [(0.5, 4, 0.3), (0.05, 1, 0.05), (1.0, 10, 1.0),
                                       (0.35, 7, 0.65)])
def test_lossy_live_sweeps_and_selected_setting_equal_specmath(l, k, delta):
    from specmath.engines import lenient_acceptance, lenient_output_distribution
    from specmath.plots.engines import lossy_curves

    d = evaluate(_lossy_spec(), {"lenience": l, "k": k, "delta": delta})
    c = lossy_curves(LOSSY_P, LOSSY_Q, k, np.linspace(1.0, 0.05, 12),
                     np.geomspace(0.005, 0.6, 12), delta)
    for name in ("lenient", "typical"):
        b, en, tv = c[name]
        np.testing.assert_allclose(_col(d[name], "EN"), en, rtol=1e-9)
        np.testing.assert_allclose(_col(d[name], "t"), tv, atol=1e-11)
    (ex,) = d["exact"]
    assert ex["EN"] == pytest.approx(float(sm.expected_tokens(c["alpha"], k)), rel=1e-12)
    (sel,) = d["selected"]
    b = float(np.mean(lenient_acceptance(LOSSY_P, LOSSY_Q, l)))
    tv = float(np.mean(sm.tv_distance(lenient_output_distribution(LOSSY_P, LOSSY_Q, l), LOSSY_P)))
    assert sel["EN"] == pytest.approx(float(sm.expected_tokens(b, k)), rel=1e-9)
    assert sel["t"] == pytest.approx(tv, abs=1e-11)
    fr = d["impossible"]
    np.testing.assert_allclose(_col(fr, "t"), _col(fr, "b") - c["alpha"], atol=1e-12)


# --- chapter 11: batch size ----------------------------------------------------------------

def _shapes():
    from specmath import batching as bt
    return (bt.ModelShape(7.6e9, 28, 28, 4, 128, kv_window=4096),
            bt.ModelShape(0.5e9, 24, 14, 2, 64))


@functools.cache
def _batch_spec():
    from specmath.widgets.serving import batch_live
    return batch_live(*_shapes(), alpha=0.8, k=5)


@pytest.mark.parametrize("a,k,ctx,gpu", [(0.8, 5, 0, "H100"), (0.3, 1, 65536, "A100"),
                                         (0.98, 12, 8192, "H200"), (0.6, 8, 2048, "H100")])
def test_batch_live_speedups_equal_specmath_batching(a, k, ctx, gpu):
    from specmath import batching as bt
    from specmath import costmodel as cm

    tgt, drf = _shapes()
    hw = {h.name.split()[0]: h for h in cm.ILLUSTRATIVE_GPUS}[gpu]
    d = evaluate(_batch_spec(), {"alpha": a, "k": k, "context": ctx, "gpu": gpu})
    for name, kk in (("k_1", 1), ("k_yours", k), ("k_8", 8)):
        B = _col(d[name], "B").astype(int)
        np.testing.assert_allclose(_col(d[name], "S"),
                                   bt.batch_speedup(a, kk, B, tgt, drf, hw, ctx), rtol=1e-12)
    B = _col(d["best_k"], "B").astype(int)
    kb = bt.best_k_for_batch(a, B, tgt, drf, hw, ctx)
    np.testing.assert_allclose(_col(d["best_k"], "S"),
                               bt.batch_speedup(a, kb, B, tgt, drf, hw, ctx), rtol=1e-12)


# --- all explorers ---------------------------------------------------------------------------

LIVE = {"speedup": _speedup_spec, "tokens": _tokens_spec, "cost": _cost_spec,
        "trees": _trees_spec, "overlap": _overlap_spec, "temperature": _temperature_spec,
        "acceptance": _acceptance_spec, "lossy": _lossy_spec,
        "batch": _batch_spec}


@pytest.mark.parametrize("name", sorted(LIVE))
def test_live_spec_is_valid_vega_lite_with_labelled_bound_controls(name):
    spec = LIVE[name]()
    _validate(spec)
    assert "specmath-live-spec" in live_html(spec)
    assert spec["params"], "a live explorer has controls"
    for p in spec["params"]:
        assert p["bind"]["name"].strip(), f"{p['name']} has no visible label"
    json.dumps(spec, allow_nan=False)


@pytest.mark.parametrize("name", sorted(LIVE))
def test_every_live_control_changes_some_mark_data(name):
    """Moving any control to its extremes changes what some mark draws (no dead control)."""
    spec = LIVE[name]()
    base = evaluate(spec)
    defaults = {p["name"]: p["value"] for p in spec["params"]}
    for pt in _slider_points(spec)[1:]:
        ((par, value),) = pt.items()
        if value == defaults[par]:
            continue
        moved = evaluate(spec, pt)
        assert moved != base, f"{name}: moving {pt} changes nothing"


def test_kernel_trees_explorer_draws_at_the_largest_m_on_its_slider():
    """m = 6 candidates without replacement exceeds exact enumeration (6**6 tuples): the
    figure leaves that point out instead of raising when the reader moves the slider."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from specmath.widgets.trees import trees_figure

    fig = trees_figure(0.3, m_max=6, n_max=8)
    labels = [ln.get_label() for ln in fig.axes[0].get_lines()]
    assert "recursive rejection, without replacement" in labels
    plt.close(fig)


def test_one_explorer_call_emits_the_kernel_figure_the_controls_and_the_hidden_live_spec():
    """In a kernel the same call shows the default figure first and the ipywidgets controls;
    the live spec rides along as a hidden HTML output that only the website draws."""
    import matplotlib
    matplotlib.use("Agg")
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    from specmath.widgets.speedup import speedup_explorer, speedup_live

    InteractiveShell.instance()  # display() publishes rich outputs, as in a kernel
    with capture_output() as cap:
        box = speedup_explorer(alpha=0.8, k=5, c=10.0)
    kinds = [sorted(o.data) for o in cap.outputs]
    assert cap.outputs[0].data["text/plain"].startswith("<Figure")  # the default figure first
    assert any("application/vnd.jupyter.widget-view+json" in k for k in kinds)
    html = cap.outputs[-1].data["text/html"]
    assert 'class="specmath-live" hidden style="display:none"' in html
    spec = json.loads(html.split('class="specmath-live-spec">')[1].split("</script>")[0]
                      .replace("<\\/", "</"))
    assert spec == json.loads(json.dumps(speedup_live(0.8, 5, 10.0)))
    assert len(box.children) == 3
