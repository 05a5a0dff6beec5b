"""The fused step for float weights (teachllm/fastpath/fused_float.py, issue 35 item 2), checked on the CPU:
- on a StaticKVCache it gives model.py's logits on a KVCache within tl.tolerance(dtype), prefill and every decode
  step, batch 1 and a left-padded batch, MHA, GQA and MQA, with biases, q/k norms and a sliding window, in float32
  and bfloat16; the reference is a copy of the model the fused step never touched;
- on the bundled model likewise, in float32 and bfloat16;
- a fused decode step reads no Python number from a device tensor and keeps every shape (the dispatch-mode check
  of tests/test_static_cache.py), eagerly and through the graph decoder's entry;
- stacking changes no weight and no logit of model.py, shares the memory (an edit is seen by both paths), and is
  noticed when the model's parameters are replaced;
- what it cannot fuse is refused with the reason, and the fast path then decodes with model.py's forward.
"""

import copy

import pytest
import torch
from test_static_cache import MAX_LEN, STEPS, both_paths, check_no_host_synchronisation, prompts
from tiny_decoder import random_decoder

import teachllm as tl
from teachllm.fastpath import loop
from teachllm.fastpath.fused_float import FusedStep, why_unfused
from teachllm.fastpath.graph import prefill
from teachllm.fastpath.static_cache import StaticKVCache
from teachllm.lm import LanguageModel

pytestmark = [pytest.mark.floating, pytest.mark.usefixtures("one_thread")]  # see conftest.py

DTYPES = [torch.float32, torch.bfloat16]


def tiny(dtype=torch.float32, **config):
    return random_decoder(0, max_position_embeddings=64, **config).to(dtype)


def fused_against_plain(model, ids, pad, reference=None):
    """model.py on a KVCache (`reference`, by default a copy of `model` made before the fused step stacks it) and
    the fused step on a StaticKVCache: the logits of both over a prefill and STEPS greedy steps
    (tests/test_static_cache.py's both_paths)."""
    reference = copy.deepcopy(model) if reference is None else reference
    return both_paths(model, ids, pad, forward=FusedStep(model, MAX_LEN), reference=reference)


def worst(want, got) -> float:
    return max(float((a.float() - b.float()).abs().max()) for a, b in zip(want, got, strict=True))


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "bfloat16"])
@pytest.mark.parametrize("n_kv_heads", [4, 2, 1], ids=["mha", "gqa", "mqa"])
@pytest.mark.parametrize("batch", [1, 3])
def test_the_fused_step_gives_model_pys_logits(batch, n_kv_heads, dtype):
    want, got = fused_against_plain(tiny(dtype, n_kv_heads=n_kv_heads), *prompts(batch))
    bound = tl.tolerance(dtype).logits
    print(f"{dtype}, batch {batch}, n_kv_heads {n_kv_heads}: max |Δlogit| over prefill + {STEPS} steps = "
          f"{worst(want, got):.3g} (bound {bound:g})")
    assert worst(want, got) <= bound
    assert len({tuple(g.argmax(-1).tolist()) for g in got}) > 3  # the tokens vary: not one repeated token


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "bfloat16"])
def test_biases_qk_norms_and_a_sliding_window(dtype):
    model = tiny(dtype, qkv_bias=True, o_bias=True, mlp_bias=True, qk_norm=True, sliding_window=5)
    with torch.no_grad():  # norms away from 1, so that a norm's weight applied wrongly shows
        for name, p in model.named_parameters():
            if "norm" in name:
                p.uniform_(0.5, 1.5)
    want, got = fused_against_plain(model, *prompts(3, length=9))  # 9 + 10 tokens: the window of 5 slides
    assert worst(want, got) <= tl.tolerance(dtype).logits


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "bfloat16"])
def test_the_bundled_model(lm, dtype):
    """A prompt of 6 tokens and one of 9 (left-padded): the fused step on a copy of the bundled model in `dtype`,
    model.py on the bundled model (in float32) or on another copy (in bfloat16)."""
    model = copy.deepcopy(lm.model).to(dtype)
    reference = lm.model if dtype == lm.dtype else copy.deepcopy(model)
    texts = ["The three primary colours are", "def add(a, b):\n    return"]
    rows = [lm.tokenizer.encode(t) for t in texts]
    width = max(len(r) for r in rows)
    ids = torch.tensor([[0] * (width - len(r)) + r for r in rows], device=lm.device)  # [2, S]
    pad = torch.tensor([width - len(r) for r in rows], device=lm.device)  # [2]
    want, got = fused_against_plain(model, ids, pad, reference)
    bound = tl.tolerance(dtype).logits
    print(f"bundled model, {dtype}: max |Δlogit| over prefill + {STEPS} steps = {worst(want, got):.3g} "
          f"(bound {bound:g})")
    assert worst(want, got) <= bound


# ---- no host synchronisation ----------------------------------------------------------------------------------
def test_a_fused_decode_step_makes_no_host_synchronisation_and_keeps_every_shape():
    model = tiny()
    check_no_host_synchronisation(model, FusedStep(model, MAX_LEN))


# ---- stacking ---------------------------------------------------------------------------------------------------
@torch.no_grad()
def test_stacking_changes_no_weight_and_shares_the_memory():
    model = tiny(qkv_bias=True)
    before = {name: p.clone() for name, p in model.state_dict().items()}
    ids = torch.tensor([[5, 6, 7, 8]])
    logits = model(ids)  # [1, S, V] uncached
    fused = FusedStep(model, MAX_LEN)
    for name, p in model.state_dict().items():
        assert torch.equal(p, before[name]), name  # every weight where it was, bit for bit
    assert torch.equal(model(ids), logits)  # model.py's logits unchanged, bit for bit
    a = model.layers[1].self_attn
    assert a.k_proj.weight.untyped_storage().data_ptr() == fused.qkv[1][0].untyped_storage().data_ptr()
    assert fused.current()

    a.v_proj.weight[3, :5] += 1.0  # an edit to model.py's matrix is an edit to the stacked one
    a.q_proj.bias[2] -= 1.0
    model.layers[0].mlp.up_proj.weight[7] *= 2
    static = StaticKVCache(model.config, MAX_LEN, 1, dtype=torch.float32, device="cpu")
    torch.testing.assert_close(prefill(fused, ids, static), model(ids)[:, -1])

    model.to(torch.bfloat16)  # new parameters: the stacked matrices are no longer the model's
    assert not fused.current()


def test_the_fast_path_keeps_its_fused_step_while_it_is_current(monkeypatch):
    lm = LanguageModel(tiny(), None, name="tiny")
    step, which = loop.step_for(lm)
    assert isinstance(step, FusedStep) and "the fused step" in which
    assert loop.step_for(lm)[0] is step  # kept: stacking and the RoPE table are made once
    lm.model.layers[0].self_attn.q_proj.weight = torch.nn.Parameter(torch.zeros(64, 64))  # replaced, not edited
    assert loop.step_for(lm)[0] is not step
    monkeypatch.setenv(loop.UNFUSED_FLAG, "1")
    step, which = loop.step_for(lm)
    assert step is lm.model and loop.UNFUSED_FLAG in which
    params = tl.SamplingParams(temperature=0, max_tokens=4, ignore_eos=True)
    lm.generate([[5, 6, 7]], params, fast=True)
    assert "model.py's step (TEACHLLM_UNFUSED_STEP is set)" in lm.decode_path


def test_what_cannot_be_fused_is_refused_with_the_reason():
    model = tiny()
    assert why_unfused(model) is None

    class Lora(torch.nn.Linear):
        pass

    model.layers[1].mlp.up_proj = Lora(64, 96, bias=False)
    assert why_unfused(model) == "layer 1's up_proj is a Lora, not a plain nn.Linear"
    with pytest.raises(ValueError, match="up_proj is a Lora.*use the model itself"):
        FusedStep(model)
    lm = LanguageModel(model, None, name="tiny")
    step, which = loop.step_for(lm)
    assert step is model and "model.py's step (layer 1's up_proj is a Lora" in which

    mixed = tiny()
    mixed.layers[0].self_attn.o_proj.to(torch.bfloat16)
    assert "layer 0's o_proj is torch.bfloat16" in why_unfused(mixed)
    with pytest.raises(ValueError, match=r"max_len=65; give 1 to 64"):
        FusedStep(tiny(), 65)
    short = FusedStep(tiny(), 8)
    with pytest.raises(ValueError, match=r"a cache of 32 positions needs a RoPE table as long.*max_len=32"):
        prefill(short, torch.tensor([[5, 6]]), StaticKVCache(short.config, 32, 1, dtype=torch.float32, device="cpu"))
