"""The tests' tiny random decoder: teachllm's Transformer with weights large enough that attention is peaked and
greedy choices vary from step to step (the default init makes both nearly uniform, which would hide a wrong cache
or mask). One builder, so that the serving, static-cache and fast-path tests agree on what "tiny" means."""

import torch

import teachllm as tl
from teachllm.model import Transformer

BASE = dict(vocab_size=101, hidden_size=64, intermediate_size=96, n_layers=2, n_heads=4, n_kv_heads=2, head_dim=16,
            max_position_embeddings=128)


def random_decoder(seed: int = 0, **config) -> Transformer:
    """A Transformer of BASE's shape with `config`'s changes; weights N(0, 0.3), norms left at 1."""
    torch.manual_seed(seed)
    model = Transformer(tl.ModelConfig(**{**BASE, **config})).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" not in name:
                p.normal_(0, 0.3)
    return model
