"""Bad input gets an exception that says what was wrong and what is allowed."""

import json

import pytest
import torch

import teachllm as tl


def test_empty_prompt(lm):
    with pytest.raises(ValueError, match="empty prompt"):
        lm.prefill([], lm.new_cache(max_len=8))
    with pytest.raises(ValueError, match="empty prompt"):
        lm.prefill(lm.tokenizer.encode(""), lm.new_cache(max_len=8))


def test_prompt_longer_than_the_cache(lm):
    cache = lm.new_cache(max_len=4)
    with pytest.raises(ValueError, match=r"KV cache is full: it holds 0 of 4 slots, and 5 more"):
        lm.prefill([1, 2, 3, 4, 5], cache)
    assert cache.length == 0  # nothing was written


def test_prompt_longer_than_the_context(lm):
    n = lm.config.max_position_embeddings + 1
    with pytest.raises(ValueError, match="context window of 8192"):
        lm.forward(torch.zeros(1, n, dtype=torch.long))
    with pytest.raises(ValueError, match="exceeds the model's context window"):
        lm.new_cache(max_len=n)


def test_decode_on_a_full_cache(lm):
    cache = lm.new_cache(max_len=3)
    lm.prefill([1, 2, 3], cache)
    with pytest.raises(ValueError, match="KV cache is full"):
        lm.decode_step(4, cache)
    assert cache.length == 3


def test_decode_before_prefill(lm):
    with pytest.raises(ValueError, match="call lm.prefill"):
        lm.decode_step(1, lm.new_cache(max_len=3))


@pytest.mark.parametrize("bad", [-1, 49152, 10**9])
def test_token_id_outside_the_vocabulary(lm, bad):
    with pytest.raises(ValueError, match=r"outside the vocabulary: ids must be in 0 .. 49151"):
        lm.prefill([1, bad], lm.new_cache(max_len=4))


def test_batch_mismatch(lm):
    cache = lm.new_cache(max_len=4, batch_size=2)
    with pytest.raises(ValueError, match="batch_size=2"):
        lm.prefill([1, 2], cache)


def test_float_ids_are_refused(lm):
    with pytest.raises(TypeError, match="integer"):
        lm.forward(torch.tensor([[1.0, 2.0]]))


def test_missing_folder():
    with pytest.raises(tl.ModelNotFoundError, match="no such folder"):
        tl.load("./no/such/checkpoint")


def test_unsupported_architecture(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]}))
    with pytest.raises(tl.UnsupportedModelError, match="unsupported model: 'gpt2'.*llama, mistral, qwen2, qwen3"):
        tl.load(tmp_path)


def test_pickled_weights_are_not_read(tmp_path):
    config = {"model_type": "llama", "vocab_size": 10, "hidden_size": 8, "intermediate_size": 16,
              "num_hidden_layers": 1, "num_attention_heads": 2, "max_position_embeddings": 16}
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "pytorch_model.bin").write_bytes(b"not read")
    with pytest.raises(tl.ModelNotFoundError, match="does not unpickle"):
        tl.load(tmp_path)


def test_offline_hub_id_names_the_bundled_default(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(tl.ModelNotFoundError, match="could not fetch 'someone/some-model'.*bundled SmolLM2"):
        tl.load("someone/some-model")


def test_bad_device_and_dtype():
    with pytest.raises(ValueError, match="dtype 'float8'"):
        tl.load(dtype="float8")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA GPU"):
            tl.load(device="cuda")


def test_config_validation():
    base = dict(vocab_size=10, hidden_size=8, intermediate_size=16, n_layers=1, n_heads=4, n_kv_heads=4,
                head_dim=2, max_position_embeddings=16)
    tl.ModelConfig(**base)
    with pytest.raises(ValueError, match="multiple of n_kv_heads"):
        tl.ModelConfig(**{**base, "n_kv_heads": 3})
    with pytest.raises(ValueError, match="n_layers must be a positive integer"):
        tl.ModelConfig(**{**base, "n_layers": 0})
    with pytest.raises(ValueError, match="model_type 'gpt2' is not supported"):
        tl.ModelConfig(**{**base, "model_type": "gpt2"})
