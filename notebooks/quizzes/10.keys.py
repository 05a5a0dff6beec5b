"""Chapter 10 quiz keys, counted with teachllm.cost and teachllm.roofline from the model's config (no
timings): FLOPs of one matmul and of a decode step, FLOPs per byte, attention's share, weight bytes,
the H100's ridge point."""
from teachllm import cost
from teachllm.roofline import KNOWN_DEVICES


def matmul_flops(lm):
    h = lm.config.hidden_size
    return {"answer": 2 * 37 * h * h, "h": h}


def decode_flops_rule(lm):
    config = lm.config
    exact = cost.decode_flops(config, 38).total
    return {"answer": round(2 * config.n_params / 1e6), "n_params_m": config.n_params / 1e6,
            "exact_m": exact / 1e6}


def decode_intensity(lm):
    c = cost.decode_cost(lm.config, 38, dtype="float32")
    return {"answer": round(c.intensity, 3), "gflop": c.flops / 1e9, "mb": c.bytes / 1e6}


def attention_share(lm):
    f = cost.prefill_flops(lm.config, 37)
    share_300 = cost.prefill_flops(lm.config, 300).attention_fraction
    return {"answer": round(100 * f.attention_fraction, 2), "share_300": 100 * share_300}


def weights_read_mb(lm):
    return {"answer": round(cost.weight_bytes(lm.config, "float32") / 1e6, 1), "n_params_m": lm.config.n_params / 1e6}


def h100_ridge(lm):
    h100 = KNOWN_DEVICES["H100 SXM"]
    return {"answer": round(h100.ridge, 1), "peak_t": h100.peak_flops / 1e12, "bandwidth_t": h100.bandwidth / 1e12}
