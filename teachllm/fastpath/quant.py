"""Linear layers that keep a GGUF file's 4- and 8-bit blocks, and multiply through the kernel chosen for them.

    lm = tl.load(weights="gguf")          # the bundled model as it ships: Q4_1 layers, Q8_0 LM head
    lin = lm.model.layers[0].mlp.gate_proj
    lin                                   # Q4_1Linear(576 → 1536, 0.53 MiB as stored, float32: 3.38 MiB, kernel int4)
    lin.q[0, :32], lin.d[0, 0], lin.m[0, 0]   # the first block of row 0: 32 integers, scale, minimum
    lin.dequantize()                      # [1536, 576] float32: exactly the weight tl.load() gives

A decode step reads every weight once, so the fewer bytes a weight takes, the faster the step.
The bundled GGUF stores each layer matrix in 5 bits per weight (Q4_1) and the embedding, tied to
the LM head, in 8.5 bits (Q8_0); `tl.load()` turns all of it into 32-bit floats. These classes keep
the stored blocks, and so the exact weights: every `dequantize()` equals the float32 weight.

To multiply, a layer hands its activations to a *kernel* (teachllm.fastpath.kernels), which holds the same weight in
the layout it reads: by default PyTorch's packed int4 kernel on the stored integers, or, where this CPU
multiplies faster another way, a float16 or bfloat16 copy (`tl.load` measures that once per machine;
`lm.describe()` says what it chose and why). Norms, attention and the residual stream stay float32.
Only the CPU kernels are wired up; `weights="gguf"` on CUDA is refused in `loading.py`.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from . import kernels

GROUP = kernels.GROUP  # weights per block, for both formats


def _f16(block_bytes: torch.Tensor) -> torch.Tensor:
    """Two little-endian bytes per entry ([..., 2] uint8) read as float16 ([...])."""
    return block_bytes.contiguous().view(torch.float16).squeeze(-1)


class QuantisedLinear(nn.Module):
    """y = x · Wᵀ (+ bias) with W kept as a GGUF file's blocks [N, K/32, bytes per block], multiplied by
    `self.impl`, the weight in the layout of kernel `self.kernel` (int4 until told otherwise)."""

    format = ""  # "Q4_1" or "Q8_0"
    block_bytes = 0

    def __init__(self, blocks: torch.Tensor, in_features: int, bias: torch.Tensor | None = None):
        super().__init__()
        n = blocks.shape[0]
        self.in_features, self.out_features = in_features, n
        shape = (n, in_features // GROUP, self.block_bytes)
        self.register_buffer("blocks", blocks.reshape(shape).contiguous())  # [N, G, bytes]: the file's bytes
        self.bias = None if bias is None else nn.Parameter(bias, requires_grad=False)
        self.kernel, self.impl = None, None
        self.use_kernel("int4", kernels.build(self, "int4"))

    def use_kernel(self, name: str, impl: nn.Module) -> None:
        """Multiply through `impl` (kernel `name`'s layout of this weight, from teachllm.fastpath.kernels.build)."""
        self.kernel, self.impl = name, impl

    @property
    def d(self) -> torch.Tensor:
        return _f16(self.blocks[..., 0:2])  # [N, G] float16: each block's scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.impl(x)  # [..., N]
        return y if self.bias is None else y + self.bias

    @property
    def nbytes_read(self) -> int:
        """Bytes one call reads from memory: the weight in its kernel's layout (and the bias)."""
        return self.impl.nbytes + (0 if self.bias is None else self.bias.nbytes)

    def sizes_mib(self) -> tuple[float, float]:
        """(MiB of the file's blocks, MiB the same weight takes in float32)."""
        return self.blocks.nbytes / 2**20, self.in_features * self.out_features * 4 / 2**20

    def extra_repr(self) -> str:
        stored, as_float32 = self.sizes_mib()
        return (f"{self.in_features} → {self.out_features}, {stored:.2f} MiB as stored, "
                f"float32: {as_float32:.2f} MiB, kernel {self.kernel}")


class Q4_1Linear(QuantisedLinear):
    """W stored as GGUF Q4_1 blocks.

    Q4_1 block: 32 consecutive weights of one row, 20 bytes (5 bits per weight):

        bytes 0-1   d      float16   scale
        bytes 2-3   m      float16   minimum
        bytes 4-19  qs     16 bytes  32 unsigned 4-bit integers q in 0..15: byte j holds weight j in its
                                     low nibble and weight j+16 in its high nibble

        w[i] = d · q[i] + m
    """

    format, block_bytes = "Q4_1", 20

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


class Q8_0Linear(QuantisedLinear):
    """W stored as GGUF Q8_0 blocks (here: the LM head, tied to the embedding).

    Q8_0 block: 32 consecutive weights of one row, 34 bytes (8.5 bits per weight):

        bytes 0-1   d      float16   scale
        bytes 2-33  qs     32 int8   q in -128..127

        w[i] = d · q[i]
    """

    format, block_bytes = "Q8_0", 34

    def __init__(self, blocks: torch.Tensor, in_features: int, bias: torch.Tensor | None = None):
        if bias is not None:
            raise ValueError("a Q8_0 layer with a bias is not supported")
        super().__init__(blocks, in_features)

    @property
    def q(self) -> torch.Tensor:
        return self.blocks[..., 2:].contiguous().view(torch.int8).reshape(self.out_features, self.in_features)

    def dequantize(self) -> torch.Tensor:
        """The float32 weight [N, K]: d · q."""
        q = self.q.float().view(self.out_features, -1, GROUP)  # [N, G, 32]
        return (self.d.float()[..., None] * q).view(self.out_features, -1)


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
    return (Q4_1Linear if kind == "Q4_1" else Q8_0Linear)(blocks, in_features, bias)


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
    for p in model.parameters():  # the float tensors left (the embedding, the norms) are views of the float32
        p.data = p.data.clone()   # file's memory map: copies of them (110 MB) let its 540 MB go
    return model


def weight_bytes_read(model: nn.Module) -> int:
    """Bytes of weights one decode step reads: packed matrices, plus the float vectors (norms)."""
    total = 0
    for mod in model.modules():
        if isinstance(mod, QuantisedLinear):
            total += mod.nbytes_read
        elif isinstance(mod, nn.Linear):
            total += mod.weight.nbytes + (0 if mod.bias is None else mod.bias.nbytes)
        elif hasattr(mod, "eps"):  # RMSNorm
            total += mod.weight.nbytes
    return total
