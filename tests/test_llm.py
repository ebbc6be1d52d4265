"""specmath.llm on tiny random causal LMs built in-process (no downloads, CPU, float64).

Target and draft are two Qwen2 models of the same shape initialised from different seeds,
with a small vocabulary, so they disagree often (α well below 1) and every output
distribution can be enumerated exactly.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import specmath as sm  # noqa: E402
from specmath import llm  # noqa: E402
from specmath.stats import g_test  # noqa: E402

V = 8  # vocabulary size: the joint law of two tokens has V² = 64 cells
PROMPTS = [[1, 2, 3], [5], [7, 0, 7, 0, 2, 6], [4, 4]]


def _tiny(seed: int):
    torch.manual_seed(seed)
    cfg = transformers.Qwen2Config(
        vocab_size=V, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
        initializer_range=0.25, tie_word_embeddings=False)
    return transformers.Qwen2ForCausalLM(cfg).double().eval()


@pytest.fixture(scope="module")
def pair():
    # one thread: tiny models are dominated by thread-pool overhead on a busy 2-core CI box
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield _tiny(0), _tiny(1)
    torch.set_num_threads(threads)


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


def test_eos_stops_generation(pair):
    target, draft = pair
    full = llm.speculative_generate(target, draft, _ids(PROMPTS[0]), k=3, temperature=0,
                                    max_new_tokens=20).tokens
    eos = full[5]
    cut = full.index(eos)
    out = llm.speculative_generate(target, draft, _ids(PROMPTS[0]), k=3, temperature=0,
                                   max_new_tokens=20, eos_token_id=eos).tokens
    assert out == full[:cut + 1]


# ---- sampling: the output law is the target's ------------------------------------------------

N_SAMPLES = 1500
LEVEL = 1e-3  # false-alarm rate of each G-test below


def _sample_two_tokens(pair, prompt, temperature, seed, broken=False):
    target, draft = pair
    g = torch.Generator().manual_seed(seed)
    counts = np.zeros((V, V))
    alphas, acc, drafted = [], 0, 0
    for _ in range(N_SAMPLES):
        # k = 2 with 3 new tokens: the first iteration drafts 2, so token 2 can come from an
        # accepted draft, the residual at position 2, the bonus, or the next iteration.
        r = llm.speculative_generate(target, draft, _ids(prompt), k=2, temperature=temperature,
                                     max_new_tokens=3, generator=g,
                                     _broken_correction=broken)
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
    model = _tiny(seed).float()
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
