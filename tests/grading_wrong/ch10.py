"""Plausible wrong answers to chapter 10's exercises: the grader must give each less than full points."""

WRONG = {
    "ch10-ex1": [
        # forgets grouped-query attention: K and V projections as wide as Q
        """
def attention_half_length(cfg):
    h, d, f = cfg.hidden_size, cfg.head_dim, cfg.intermediate_size
    linear = 2 * h * 3 * cfg.n_heads * d + 2 * cfg.n_heads * d * h + 6 * h * f
    return linear / (4 * cfg.n_heads * d)
""",
        # a textbook MLP with two matrices (no gate)
        """
def attention_half_length(cfg):
    h, d, f = cfg.hidden_size, cfg.head_dim, cfg.intermediate_size
    linear = 2 * h * (cfg.n_heads + 2 * cfg.n_kv_heads) * d + 2 * cfg.n_heads * d * h + 4 * h * f
    return linear / (4 * cfg.n_heads * d)
""",
        # counts QKᵀ only, not scores·V
        """
def attention_half_length(cfg):
    h, d, f = cfg.hidden_size, cfg.head_dim, cfg.intermediate_size
    linear = 2 * h * (cfg.n_heads + 2 * cfg.n_kv_heads) * d + 2 * cfg.n_heads * d * h + 6 * h * f
    return linear / (2 * cfg.n_heads * d)
""",
    ],
    "ch10-ex2": [
        # forgets the K and V the new token writes
        """
from teachllm import cost
def decode_intensity_limit(cfg, context_len, dtype="bf16"):
    return cost.decode_flops(cfg, context_len).total / cost.kv_cache_bytes(cfg, context_len, dtype=dtype)
compute_bound_on_h100 = False
""",
        # the intensity at batch 1, where the weights dominate, and a wrong verdict
        """
from teachllm import cost
def decode_intensity_limit(cfg, context_len, dtype="bf16"):
    return cost.decode_cost(cfg, context_len, dtype=dtype).intensity
compute_bound_on_h100 = True
""",
    ],
    "ch10-ex3": [
        # K and V of one sequence only, whatever the batch
        """
from teachllm import cost
def kv_share(cfg, context_len, batch_size, dtype="float32"):
    kv = cost.kv_cache_bytes(cfg, context_len + 1, dtype=dtype)
    return kv / (cost.weight_bytes(cfg, dtype) + kv)
step_grows_with_context = 16
""",
        # K and V read, but not the new token's written; and the wrong batch
        """
from teachllm import cost
def kv_share(cfg, context_len, batch_size, dtype="float32"):
    kv = cost.kv_cache_bytes(cfg, context_len, batch_size=batch_size, dtype=dtype)
    return kv / (cost.weight_bytes(cfg, dtype) + kv)
step_grows_with_context = 1
""",
    ],
}
