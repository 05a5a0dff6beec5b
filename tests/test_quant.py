"""tl.load(weights="gguf"): the GGUF file's own Q4_1 / Q8_0 blocks, multiplied by PyTorch's packed int4 kernel.

References: the float32 weights `tl.load()` gives (transformers' GGUF converter de-quantises them, and
un-permutes llama.cpp's q/k rows), the `gguf` package's own de-quantiser, transformers in bfloat16 on the
same weights, and the float32 model's logits and greedy tokens.
"""

import numpy as np
import pytest
import torch
from gguf import GGUFReader
from gguf.quants import dequantize

import teachllm as tl
from teachllm.cli import main
from teachllm.fastpath.quant import Q4_1Linear, Q8_0Linear

pytestmark = [pytest.mark.floating, pytest.mark.usefixtures("one_thread")]

PROMPTS = [
    "The three primary colours are",
    "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n",
    "人工智能正在改变我们的生活方式，",
    "def fibonacci(n):\n    if n < 2:\n        return n\n",
]


@pytest.fixture(scope="module")
def qlm():
    return tl.load(weights="gguf", progress=False)


@pytest.fixture(scope="module")
def gguf_tensors():
    """The bundled file's tensors, by name, as the gguf package reads them."""
    return {t.name: t for t in GGUFReader(str(tl.checkpoints.loading.bundled_gguf())).tensors}


@pytest.fixture
def hf_bf16():
    """transformers' model in bfloat16, for the one test that compares with it: made for it and freed after it,
    so the rest of the module does not carry it."""
    from transformers import AutoModelForCausalLM

    folder = tl.checkpoints.loading.checkpoint_folder(progress=False)
    return AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16).eval()


def quantised(qlm):
    return {name: m for name, m in qlm.model.named_modules() if isinstance(m, (Q4_1Linear, Q8_0Linear))}


def test_every_packed_matrix_dequantises_to_the_float32_weight(lm, qlm):
    layers = quantised(qlm)
    c = lm.config
    assert len(layers) == 7 * c.n_layers + 1  # q, k, v, o, gate, up, down per layer, and the LM head
    assert isinstance(layers["lm_head"], Q8_0Linear)
    for name, layer in layers.items():
        reference = lm.model.get_submodule(name).weight  # float32, from transformers' converter
        assert torch.equal(layer.dequantize(), reference), name  # bit for bit, q/k row order included


def test_block_format_matches_the_gguf_packages_dequantiser(qlm, gguf_tensors):
    """The docstring's block layout, checked against the gguf package on the file's own (un-permuted) rows."""
    for gguf_name, ours in (("blk.0.ffn_down.weight", "layers.0.mlp.down_proj"), ("token_embd.weight", "lm_head")):
        t = gguf_tensors[gguf_name]
        expected = dequantize(np.array(t.data), t.tensor_type).reshape(t.data.shape[0], -1)
        assert np.array_equal(qlm.model.get_submodule(ours).dequantize().numpy(), expected)
    q = qlm.model.layers[0].mlp.up_proj.q
    assert q.dtype == torch.uint8 and int(q.min()) == 0 and int(q.max()) == 15


def test_sizes_are_the_files_bytes(qlm, gguf_tensors):
    """`sizes_mib()`, which chapter 10 prints: the GGUF tensor's own bytes as stored, 4 bytes a weight in float32."""
    for gguf_name, ours in (("blk.0.ffn_gate.weight", "layers.0.mlp.gate_proj"), ("token_embd.weight", "lm_head")):
        layer, t = qlm.model.get_submodule(ours), gguf_tensors[gguf_name]
        stored, as_float32 = layer.sizes_mib()
        assert stored == int(t.n_bytes) / 2**20, gguf_name
        assert as_float32 == int(t.n_elements) * 4 / 2**20, gguf_name


# A near-tie: float32's two candidates closer than this many logits. Why 0.5: the kernel rounds activations,
# per-group scales and zeros, and its output to bfloat16 (8 significant bits, up to 2⁻⁹ ≈ 0.2% per rounding),
# which moves the gap between two logits by a few hundredths typically and by up to 0.34 in the worst of 338
# positions (the 4 prompts here and the bench's 20), under AVX-512 and under AVX2 dispatch alike, whose int4
# kernels round in different orders. Where float32's top two are further apart than 0.5, no correct kernel
# may change the choice; nearer, either choice is bfloat16's to make (seen: margins of 0.003 to 0.11).
NEAR_TIE = 0.5


def test_logits_close_to_float32(lm, qlm, hf_bf16):
    """Bound: max |Δlogit| ≤ 1.5 and mean KL(float32 ‖ gguf) ≤ 3e-3 nats per position, and no worse than
    transformers in bfloat16 on the same weights; at every position the argmax is float32's unless float32's
    own margin between its choice and the 4-bit choice is under NEAR_TIE.

    Why: the integers are exact (test above), so the whole difference is bfloat16 rounding inside the
    kernel (see NEAR_TIE). The logits run to about ±30, so errors of a few tenths are what bfloat16 gives;
    transformers' own bfloat16 model, the usual way to halve the bytes, lands in the same range (on these
    prompts: gguf max 0.74 under AVX-512 dispatch and 0.86 under AVX2, KL about 1.2e-3; transformers bf16
    max 1.81, KL 1.7e-3).
    """
    ours, theirs = [], []
    worst = 0.0
    for text in PROMPTS:
        ids = lm.tokenizer.encode(text)
        ref = lm.forward(ids)[0]  # [S, V]
        got = qlm.forward(ids)[0]
        with torch.no_grad():
            bf16 = hf_bf16(torch.tensor([ids])).logits.float()[0]
        worst = max(worst, float((got - ref).abs().max()))
        logp = ref.log_softmax(-1)
        ours.append((logp.exp() * (logp - got.log_softmax(-1))).sum(-1))  # KL per position
        theirs.append((logp.exp() * (logp - bf16.log_softmax(-1))).sum(-1))
        mine, theirs_choice = ref.argmax(-1), got.argmax(-1)  # [S] each
        margin = ref.gather(-1, mine[:, None]) - ref.gather(-1, theirs_choice[:, None])  # [S, 1], 0 where equal
        assert bool((margin < NEAR_TIE).all()), (text, float(margin.max()))
    kl, kl_bf16 = float(torch.cat(ours).mean()), float(torch.cat(theirs).mean())
    assert worst <= 1.5
    assert kl <= 3e-3
    assert kl <= kl_bf16


def test_greedy_text_agrees_until_a_near_tie(lm, qlm, greedy):
    """Greedy decoding (prefill + decode_step, the cached path), 32 tokens per prompt: the 4-bit model's
    tokens are float32's until the first step where float32's margin between the two choices is under
    NEAR_TIE; after a near-tie the texts may go their own ways.

    Where they part differs by kernel (under AVX-512 dispatch: the Chinese prompt after 6 tokens, the code
    prompt after 28; under AVX2: "The three primary colours are" after 7, the Chinese prompt at once),
    always at a margin under 0.06 logits. The bound must hold for every correct kernel, so it asserts the
    reason for parting, not the place.
    """
    for text in PROMPTS:
        ids = lm.tokenizer.encode(text)
        ref, got = greedy(lm, ids, 32), greedy(qlm, ids, 32)
        n = next((i for i, (a, b) in enumerate(zip(ref, got, strict=False)) if a != b), None)
        if n is None:
            assert ref == got, text  # the same tokens, and both stopped at the same place
            continue
        logits = lm.forward(ids + ref[:n])[0, -1]  # float32's logits at the step where they part
        assert float(logits[ref[n]] - logits[got[n]]) < NEAR_TIE, (text, n)


def test_weights_option_is_checked(tmp_path):
    with pytest.raises(ValueError, match="weights must be one of"):
        tl.load(weights="int3")
    with pytest.raises(ValueError, match="needs a .gguf file"):
        tl.load(tmp_path, weights="gguf")


def test_cli_weights_gguf(qlm, greedy, capsys):
    main(["step", "The capital of France is", "--max-tokens", "4", "--weights", "gguf", "--device", "cpu"])
    out = capsys.readouterr().out
    assert "(weights=gguf)" in out
    ids = qlm.tokenizer.encode("The capital of France is")
    expected = greedy(qlm, ids, 4)
    assert repr(qlm.tokenizer.decode(expected, skip_special_tokens=True)) in out
    main(["generate", "The capital of France is", "--max-tokens", "4", "--temperature", "0", "--weights", "gguf"])
    assert qlm.tokenizer.decode(expected, skip_special_tokens=True) in capsys.readouterr().out


def test_the_q8_0_head_on_the_int4_kernel_reads_a_little_more_than_its_blocks():
    """Chapter 10.13: with kernel="int4" the Q8_0 head goes through the 4-bit kernel as two digits, each pass with its
    own bfloat16 scales and zeros, so a step reads a little more of it than its Q8_0 blocks hold (10 bits a weight
    against 8.5); the chapter's table counts those bytes."""
    head = tl.load(weights="gguf", kernel="int4", progress=False).model.lm_head
    assert isinstance(head, Q8_0Linear) and head.kernel == "int4"
    weights = head.in_features * head.out_features
    assert head.blocks.nbytes * 8 / weights == 8.5  # 32 int8 values and one float16 scale per 32 weights
    assert head.blocks.nbytes < head.nbytes_read <= 1.2 * head.blocks.nbytes
