"""Linear layers that keep a GGUF file's 4- and 8-bit blocks and multiply through PyTorch's packed kernels.

    lm = tl.load(weights="gguf")          # the bundled model as it ships: Q4_1 layers, Q8_0 LM head
    lin = lm.model.layers[0].mlp.gate_proj
    lin                                   # Q4_1Linear(576 → 1536, 0.53 MiB as stored, float32: 3.38 MiB)
    lin.q[0, :32], lin.d[0, 0], lin.m[0, 0]   # the first block of row 0: 32 integers, scale, minimum
    lin.dequantize()                      # [1536, 576] float32: exactly the weight tl.load() gives

A decode step reads every weight once, so the fewer bytes a weight takes, the faster the step.
The bundled GGUF stores each layer matrix in 5 bits per weight (Q4_1) and the embedding, tied to
the LM head, in 8.5 bits (Q8_0); `tl.load()` turns all of it into 32-bit floats. These classes keep
the stored integers and multiply with them directly:

  - `torch._weight_int4pack_mm_for_cpu` (4-bit integers in groups, one scale and one zero per group
    and output row) for the Q4_1 matrices, and for the Q8_0 head written as two 4-bit digits;
  - the activations enter the kernel in bfloat16 (its fast path: with float32 activations the same
    kernel was about 45× slower per call on this CPU than with bfloat16) and the result leaves in float32,
    so norms, attention and the residual stream stay float32;
  - the kernel's per-group scale and zero are bfloat16 too (d and m are float16 in the file, so they
    lose 3 of their 11 significant bits), and so is its output. The integers are never changed: every
    `dequantize()` equals the float32 weight exactly. The bfloat16 rounding of inputs, scales and outputs
    is the whole difference from the float32 model (see tests/test_quant.py for the bound). Splitting
    activations or scales into a bf16 high and low part, which costs a second pass, barely helped: the
    rounding of the kernel's bf16 output remains (chapter 10 gives the figures).

Prefill and decode take the same path: the int4 kernel was faster than float32 MKL at every length
measured (1 to 2,048 tokens), so there is no second, dequantised path for long prompts.
Only the CPU kernels are wired up; `weights="gguf"` on CUDA is refused in `loading.py`.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

GROUP = 32  # weights per block, for both formats


def _f16(block_bytes: torch.Tensor) -> torch.Tensor:
    """Two little-endian bytes per entry ([..., 2] uint8) read as float16 ([...])."""
    return block_bytes.contiguous().view(torch.float16).squeeze(-1)


class Q4_1Linear(nn.Module):
    """y = x · Wᵀ (+ bias) with W stored as GGUF Q4_1 blocks.

    Q4_1 block: 32 consecutive weights of one row, 20 bytes (5 bits per weight):

        bytes 0-1   d      float16   scale
        bytes 2-3   m      float16   minimum
        bytes 4-19  qs     16 bytes  32 unsigned 4-bit integers q in 0..15: byte j holds weight j in its
                                     low nibble and weight j+16 in its high nibble

        w[i] = d · q[i] + m

    The kernel computes w = (q − 8) · s + z per group, which is the same with s = d and z = m + 8d.
    `blocks` [N, K/32, 20] holds the file's bytes unchanged; `packed` and `scales_and_zeros` are the
    kernel's layout of the same numbers (built once, when the layer is made).
    """

    def __init__(self, blocks: torch.Tensor, in_features: int, bias: torch.Tensor | None = None):
        super().__init__()
        n = blocks.shape[0]
        self.in_features, self.out_features = in_features, n
        self.register_buffer("blocks", blocks.reshape(n, in_features // GROUP, 20).contiguous())  # [N, G, 20]
        self.bias = None if bias is None else nn.Parameter(bias, requires_grad=False)
        self.register_buffer("packed", torch._convert_weight_to_int4pack_for_cpu(self.q.to(torch.int32), 1))
        d, m = self.d.float(), self.m.float()  # [N, G]
        self.register_buffer("scales_and_zeros", _scales_and_zeros(d, m + 8 * d))  # [G, N, 2] bfloat16

    # ---- the block format, readable ----
    @property
    def d(self) -> torch.Tensor:
        return _f16(self.blocks[..., 0:2])  # [N, G] float16

    @property
    def m(self) -> torch.Tensor:
        return _f16(self.blocks[..., 2:4])  # [N, G] float16

    @property
    def q(self) -> torch.Tensor:
        qs = self.blocks[..., 4:]  # [N, G, 16]
        return torch.cat([qs & 0x0F, qs >> 4], dim=-1).reshape(self.out_features, self.in_features)  # [N, K] 0..15

    def dequantize(self) -> torch.Tensor:
        """The float32 weight [N, K]: d · q + m, as llama.cpp and transformers compute it."""
        q = self.q.float().view(self.out_features, -1, GROUP)  # [N, G, 32]
        return (self.d.float()[..., None] * q + self.m.float()[..., None]).view(self.out_features, -1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = int4_matmul(x, self.packed, self.scales_and_zeros)  # [..., N]
        return y if self.bias is None else y + self.bias

    @property
    def nbytes_read(self) -> int:
        """Bytes one call reads from memory: the packed 4-bit integers and the bf16 scales and zeros."""
        return self.packed.nbytes + self.scales_and_zeros.nbytes + (0 if self.bias is None else self.bias.nbytes)

    def extra_repr(self) -> str:
        return (f"{self.in_features} → {self.out_features}, {self.blocks.nbytes / 2**20:.2f} MiB as stored, "
                f"float32: {self.in_features * self.out_features * 4 / 2**20:.2f} MiB")


class Q8_0Linear(nn.Module):
    """y = x · Wᵀ with W stored as GGUF Q8_0 blocks (here: the LM head, tied to the embedding).

    Q8_0 block: 32 consecutive weights of one row, 34 bytes (8.5 bits per weight):

        bytes 0-1   d      float16   scale
        bytes 2-33  qs     32 int8   q in -128..127

        w[i] = d · q[i]

    PyTorch's CPU kernels have no 8-bit format with a scale per group of 32, so the head is written
    as two 4-bit digits, q + 128 = 16 · hi + lo (hi, lo in 0..15), and multiplied twice by the int4
    kernel: w = 16d · (hi − 8) + d · (lo − 8) + 8d. Together they read as many bytes as int8 would.
    """

    def __init__(self, blocks: torch.Tensor, in_features: int):
        super().__init__()
        n = blocks.shape[0]
        self.in_features, self.out_features = in_features, n
        self.register_buffer("blocks", blocks.reshape(n, in_features // GROUP, 34).contiguous())  # [N, G, 34]
        unsigned = self.q.to(torch.int32) + 128  # [N, K] in 0..255
        d = self.d.float()  # [N, G]
        self.register_buffer("packed_hi", torch._convert_weight_to_int4pack_for_cpu(unsigned >> 4, 1))
        self.register_buffer("packed_lo", torch._convert_weight_to_int4pack_for_cpu(unsigned & 0x0F, 1))
        self.register_buffer("scales_and_zeros_hi", _scales_and_zeros(16 * d, torch.zeros_like(d)))
        self.register_buffer("scales_and_zeros_lo", _scales_and_zeros(d, 8 * d))

    @property
    def d(self) -> torch.Tensor:
        return _f16(self.blocks[..., 0:2])  # [N, G] float16

    @property
    def q(self) -> torch.Tensor:
        return self.blocks[..., 2:].contiguous().view(torch.int8).reshape(self.out_features, self.in_features)

    def dequantize(self) -> torch.Tensor:
        """The float32 weight [N, K]: d · q."""
        q = self.q.float().view(self.out_features, -1, GROUP)  # [N, G, 32]
        return (self.d.float()[..., None] * q).view(self.out_features, -1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (int4_matmul(x, self.packed_hi, self.scales_and_zeros_hi)
                + int4_matmul(x, self.packed_lo, self.scales_and_zeros_lo))  # [..., N]

    @property
    def nbytes_read(self) -> int:
        return (self.packed_hi.nbytes + self.packed_lo.nbytes + self.scales_and_zeros_hi.nbytes
                + self.scales_and_zeros_lo.nbytes)

    def extra_repr(self) -> str:
        return (f"{self.in_features} → {self.out_features}, {self.blocks.nbytes / 2**20:.2f} MiB as stored, "
                f"float32: {self.in_features * self.out_features * 4 / 2**20:.2f} MiB")


def _scales_and_zeros(scale: torch.Tensor, zero: torch.Tensor) -> torch.Tensor:
    """The int4 kernel's [G, N, 2] table (bfloat16, like the activations) from [N, G] scales and zeros."""
    return torch.stack([scale, zero], dim=-1).transpose(0, 1).contiguous().to(torch.bfloat16)


def int4_matmul(x: torch.Tensor, packed: torch.Tensor, scales_and_zeros: torch.Tensor) -> torch.Tensor:
    """x [..., K] (any float dtype) times the packed 4-bit weight: [..., N] in x's dtype.

    The activations go in as bfloat16 (the kernel's fast path) and the result comes back in x's dtype.
    """
    rows = x.reshape(-1, x.shape[-1]).to(torch.bfloat16)  # [M, K]
    y = torch._weight_int4pack_mm_for_cpu(rows, packed, GROUP, scales_and_zeros)  # [M, N] bfloat16
    return y.to(x.dtype).view(*x.shape[:-1], -1)


# ---- reading a GGUF file ----------------------------------------------------------------------------
LAYER_NAMES = {  # llama.cpp's tensor name → teachllm's module path (within layer i)
    "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}


def unpermute_rows(n_rows: int, n_heads: int) -> torch.Tensor:
    """Row order that undoes llama.cpp's q/k permutation, as transformers' GGUF converter does.

    llama.cpp stores each head's rows as interleaved (even, odd) pairs for its own RoPE; transformers
    (and teachllm) rotate the first half against the second. Row r of the un-permuted matrix is
    row order[r] of the file's. Whole rows move, so the blocks (which run along a row) move intact.
    """
    dim = n_rows // n_heads // 2
    return torch.arange(n_rows).reshape(n_heads, dim, 2).transpose(1, 2).reshape(n_rows)  # [N]


def read_gguf_blocks(path) -> dict[str, tuple[str, torch.Tensor, int]]:
    """Every quantised matrix of a GGUF file: teachllm module name → (format, raw blocks [N, bytes], K).

    Layer matrices map to `layers.{i}.{…}`; token_embd to `lm_head` (tied) and `output` to `lm_head`
    when the file has its own head. Only Q4_1 and Q8_0 are read; any other format raises.
    """
    from gguf import GGUFReader  # here: only weights="gguf" reads the file's blocks

    reader = GGUFReader(str(path))
    arch = reader.fields["general.architecture"].contents()
    n_heads = int(reader.fields[f"{arch}.attention.head_count"].contents())
    n_kv = int(reader.fields[f"{arch}.attention.head_count_kv"].contents())
    out = {}
    for t in reader.tensors:
        parts = t.name.split(".")
        if parts[0] == "blk" and parts[2] in LAYER_NAMES:
            name = f"layers.{parts[1]}.{LAYER_NAMES[parts[2]]}"
        elif t.name in ("token_embd.weight", "output.weight"):
            if t.name == "token_embd.weight" and "lm_head" in out:
                continue  # the file has its own head
            name = "lm_head"
        else:
            continue  # norms and other float32 vectors come from the float checkpoint
        kind = t.tensor_type.name
        if kind not in ("Q4_1", "Q8_0"):
            raise ValueError(f"{t.name} is stored as {kind}; weights='gguf' reads Q4_1 and Q8_0 blocks only")
        blocks = torch.from_numpy(np.array(t.data, copy=True))  # [N, K/32 · bytes per block] uint8
        if parts[0] == "blk" and parts[2] in ("attn_q", "attn_k"):
            blocks = blocks[unpermute_rows(blocks.shape[0], n_heads if parts[2] == "attn_q" else n_kv)]
        out[name] = (kind, blocks, int(t.shape[0]))  # gguf lists shapes innermost first: shape[0] = K
    return out


def quantised_linear(kind: str, blocks: torch.Tensor, in_features: int, bias=None) -> nn.Module:
    if kind == "Q4_1":
        return Q4_1Linear(blocks, in_features, bias)
    if bias is not None:
        raise ValueError("a Q8_0 layer with a bias is not supported")
    return Q8_0Linear(blocks, in_features)


def quantise_model(model: nn.Module, gguf_path) -> nn.Module:
    """Replace every nn.Linear of teachllm's `model` with the GGUF file's blocks, in place.

    The embedding stays the float32 table `model` already holds: a lookup reads one row per token,
    so its size costs memory, not time. The LM head, tied to it in the file, becomes a Q8_0Linear.
    """
    for name, (kind, blocks, k) in read_gguf_blocks(gguf_path).items():
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        old = getattr(parent, child)
        if not isinstance(old, nn.Linear) or old.weight.shape != (blocks.shape[0], k):
            raise ValueError(f"{name}: the GGUF matrix does not fit the model's {type(old).__name__}")
        setattr(parent, child, quantised_linear(kind, blocks, k, old.bias))
    left = [n for n, mod in model.named_modules() if isinstance(mod, nn.Linear)]
    if left:
        raise ValueError(f"the GGUF file has no quantised matrix for {left[:3]}")
    return model


def weight_bytes_read(model: nn.Module) -> int:
    """Bytes of weights one decode step reads: packed matrices, plus the float vectors (norms)."""
    total = 0
    for mod in model.modules():
        if isinstance(mod, (Q4_1Linear, Q8_0Linear)):
            total += mod.nbytes_read
        elif isinstance(mod, nn.Linear):
            total += mod.weight.nbytes + (0 if mod.bias is None else mod.bias.nbytes)
        elif hasattr(mod, "eps"):  # RMSNorm
            total += mod.weight.nbytes
    return total
