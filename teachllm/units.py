"""The bottom layer: names of floating-point types, their sizes in bytes, integer ceiling division, and what
counts as a token id.

Everything that counts bytes (the KV caches, `teachllm.cost`, the loader) reads these, so a dtype
name such as "bf16" means the same everywhere.
"""

from __future__ import annotations

import numbers

import numpy as np
import torch

DTYPES = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
          "float16": torch.float16, "fp16": torch.float16}


def dtype_named(dtype: torch.dtype | str) -> torch.dtype:
    """A torch dtype from itself or from one of the names in DTYPES ("float32", "bf16", ...)."""
    if isinstance(dtype, torch.dtype):
        return dtype
    if not isinstance(dtype, str) or dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r} is not one of {', '.join(DTYPES)}")
    return DTYPES[dtype]


def element_size(dtype: torch.dtype | str) -> int:
    """Bytes per element: 4 for float32, 2 for bfloat16 and float16 (names such as "bf16" work too)."""
    if not isinstance(dtype, (str, torch.dtype)):
        raise ValueError(f"element_size: dtype={dtype!r} must be a torch.dtype or a name such as 'float32', 'bf16'")
    return torch.empty((), dtype=dtype_named(dtype)).element_size()


def ceil_div(a: int, b: int) -> int:
    """⌈a / b⌉ for non-negative integers: how many blocks of size b hold a items."""
    return (a + b - 1) // b


def is_id(x) -> bool:
    """An integer that is not a boolean (Python, numpy or a one-element integer tensor already unwrapped)."""
    return isinstance(x, numbers.Integral) and not isinstance(x, (bool, np.bool_))
