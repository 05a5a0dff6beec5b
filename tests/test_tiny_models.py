"""Every supported variant, on a tiny random checkpoint, against the matching transformers class.

Each case builds a transformers model from a tiny config, gives it weights large enough that
attention is sharp (the default 0.02 init makes attention nearly uniform, which would hide a
wrong RoPE or mask), saves it as safetensors and loads that folder with `tl.load`. The logits of
teachllm's uncached forward and of its prefill + decode path must equal transformers' forward.
"""

import pytest
import torch
import transformers

import teachllm as tl

pytestmark = pytest.mark.floating  # results depend on the CPU's kernels: `make test-avx2` runs it under AVX2 too

BASE = dict(vocab_size=97, hidden_size=64, intermediate_size=96, num_hidden_layers=3,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128, rms_norm_eps=1e-6)

CASES = {
    "llama-mha-untied": ("Llama", dict(num_key_value_heads=4, tie_word_embeddings=False)),
    "llama-gqa-tied": ("Llama", dict(tie_word_embeddings=True)),
    "llama3-rope-scaling": ("Llama", dict(rope_parameters=dict(
        rope_type="llama3", rope_theta=500000.0, factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
        original_max_position_embeddings=16))),
    "llama-biases": ("Llama", dict(attention_bias=True, mlp_bias=True)),
    "mistral-sliding-window": ("Mistral", dict(sliding_window=6, num_key_value_heads=1)),
    "qwen2-qkv-bias": ("Qwen2", dict(tie_word_embeddings=True)),
    "qwen3-qk-norm": ("Qwen3", dict(head_dim=24, tie_word_embeddings=False)),
}


def make_checkpoint(family: str, overrides: dict, folder):
    config = getattr(transformers, f"{family}Config")(**{**BASE, **overrides})
    torch.manual_seed(0)
    model = getattr(transformers, f"{family}ForCausalLM")(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1 + 0.2 * torch.randn_like(p))  # norms: around 1, but not exactly 1
            else:
                p.normal_(0, 0.3)  # weights and biases: large enough for peaked attention
    model.save_pretrained(folder)
    return model


@pytest.fixture(params=sorted(CASES), scope="module")
def pair(request, tmp_path_factory):
    family, overrides = CASES[request.param]
    folder = tmp_path_factory.mktemp(request.param)
    hf = make_checkpoint(family, overrides, folder)
    return hf, tl.load(folder, device="cpu", dtype="float32")


def test_config_read_from_checkpoint(pair):
    hf, lm = pair
    c, h = lm.config, hf.config
    assert (c.n_layers, c.hidden_size, c.n_heads, c.n_kv_heads) == (
        h.num_hidden_layers, h.hidden_size, h.num_attention_heads, h.num_key_value_heads)
    assert c.head_dim == hf.model.layers[0].self_attn.head_dim
    assert c.tie_word_embeddings == (hf.lm_head.weight.data_ptr() == hf.model.embed_tokens.weight.data_ptr())
    assert c.n_params == sum(p.numel() for p in hf.parameters())  # parameters() counts a tied matrix once


def test_forward_matches_transformers(pair):
    hf, lm = pair
    torch.manual_seed(1)
    ids = torch.randint(0, 97, (2, 20))
    with torch.no_grad():
        ref = hf(ids).logits
    torch.testing.assert_close(lm.forward(ids), ref, atol=1e-4, rtol=1e-5)
    assert ref.std() > 1.0  # the weights are large enough for the comparison to mean something


def test_prefill_then_decode_matches_transformers(pair):
    hf, lm = pair
    torch.manual_seed(2)
    ids = torch.randint(0, 97, (2, 20))
    with torch.no_grad():
        ref = hf(ids).logits  # [2, 20, V]
    cache = lm.new_cache(max_len=20, batch_size=2)
    got = [lm.prefill(ids[:, :8], cache)]
    for i in range(8, 20):
        got.append(lm.decode_step(ids[:, i], cache))
    torch.testing.assert_close(torch.stack(got, dim=1), ref[:, 7:], atol=1e-4, rtol=1e-5)


def test_traced_path_matches_fast_path(pair):
    _, lm = pair
    ids = torch.randint(0, 97, (1, 12))
    trace = tl.Trace()
    torch.testing.assert_close(lm.forward(ids, trace=trace), lm.forward(ids), atol=1e-4, rtol=1e-5)
    assert len(trace.layers) == lm.config.n_layers
    probs = trace.layers[0].probs  # [1, n_h, 12, 12]
    torch.testing.assert_close(probs.sum(-1), torch.ones(1, lm.config.n_heads, 12))
    assert probs.triu(diagonal=1).abs().max() == 0  # causal: nothing above the diagonal
