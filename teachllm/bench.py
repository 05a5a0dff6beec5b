"""python -m teachllm.bench: teachllm against transformers, and prefill and decode against the roofline.

    python -m teachllm.bench                       # bundled model, CPU fp32 (or CUDA bf16), a few minutes
    python -m teachllm.bench --quick               # fewer repetitions, shorter runs: a smoke run
    python -m teachllm.bench --device cuda --random-weights    # bundled architecture, random weights

Everything runs in one process, on the same model, device, dtype and prompt, after a warm-up,
and reports medians over repetitions. It measures

1. greedy generation of N tokens: teachllm's loop (prefill, then decode_step with argmax) against
   transformers' `generate(do_sample=False, min_new_tokens=N)`. TTFT = time of a run with N = 1;
   decode tokens/s = (N − 1) / (time(N) − time(1)), the same definition for both;
2. teachllm's decode throughput at several batch sizes: tokens/s = batch × steps / time, next to
   the roofline's prediction (a step takes max(FLOPs / peak, bytes / bandwidth));
3. prefill time against prompt length and decode step time against context length, each with its
   FLOPs, bytes, intensity, achieved FLOP/s and the roof's attainable FLOP/s.

The report is printed and written as JSON (default artifacts/bench/bench-<device>.json).
Timing does not depend on weight values, so `--random-weights` (the bundled architecture built
from its shapes, for a machine the bundled checkpoint cannot reach) gives the same speed.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import transformers
from transformers import AutoModelForCausalLM, LlamaConfig

from .config import ModelConfig
from .cost import decode_cost
from .lm import LanguageModel, load
from .loading import checkpoint_folder, resolve_device, resolve_dtype
from .model import Transformer, rope_inv_freq
from .roofline import Device, PhasePoint, clock, format_points, measure_device, measure_phases, timed

# SmolLM2-135M-Instruct's shapes (its config.json), for --random-weights where the checkpoint is absent.
SMOLLM2_135M = ModelConfig(vocab_size=49152, hidden_size=576, intermediate_size=1536, n_layers=30, n_heads=9,
                           n_kv_heads=3, head_dim=64, max_position_embeddings=8192, rope_theta=100000.0,
                           rms_norm_eps=1e-5, tie_word_embeddings=True, bos_token_id=1, eos_token_ids=(2,))
PROMPT = ("The history of the printing press begins in the fifteenth century, when Johannes Gutenberg "
          "combined movable metal type, oil-based ink and a wooden screw press.")


@dataclass
class Settings:
    """What to measure, and how long to spend on it."""
    new_tokens: int = 64  # N: tokens each greedy run generates
    reps: int = 3  # timed repetitions per measurement (the median is reported)
    batch_sizes: tuple[int, ...] = (1, 2, 4, 8, 16, 32)  # decode throughput at these batch sizes
    batch_steps: int = 16  # decode steps timed per batch size
    prefill_lengths: tuple[int, ...] = (64, 128, 256, 512, 1024, 2048)  # prompt lengths for prefill timing
    decode_contexts: tuple[int, ...] = (128, 512, 2048, 8192)  # context lengths for decode-step timing
    budget_s: float = 8.0  # stop repeating a measurement after this many timed seconds

    @classmethod
    def quick(cls) -> Settings:
        return cls(new_tokens=16, reps=1, batch_sizes=(1, 4, 16), batch_steps=4, prefill_lengths=(64, 256),
                   decode_contexts=(128, 1024), budget_s=2.0)


# ---- the two models ------------------------------------------------------------------------------
def to_hf_config(config: ModelConfig):
    """transformers' LlamaConfig for a teachllm ModelConfig (plain Llama shapes only)."""
    if config.model_type != "llama" or config.rope_scaling or config.qk_norm or config.qkv_bias != config.o_bias:
        raise ValueError("--random-weights builds plain Llama-shaped models only")
    return LlamaConfig(vocab_size=config.vocab_size, hidden_size=config.hidden_size,
                       intermediate_size=config.intermediate_size, num_hidden_layers=config.n_layers,
                       num_attention_heads=config.n_heads, num_key_value_heads=config.n_kv_heads,
                       head_dim=config.head_dim, max_position_embeddings=config.max_position_embeddings,
                       rope_parameters={"rope_type": "default", "rope_theta": config.rope_theta},
                       rms_norm_eps=config.rms_norm_eps, tie_word_embeddings=config.tie_word_embeddings,
                       attention_bias=config.qkv_bias, mlp_bias=config.mlp_bias,
                       bos_token_id=config.bos_token_id, eos_token_id=list(config.eos_token_ids) or None)


def random_models(config: ModelConfig, device: torch.device, dtype: torch.dtype, seed: int = 0):
    """teachllm's Transformer with random weights, and transformers' model holding the same weights."""
    torch.manual_seed(seed)
    model = Transformer(config).to(device=device, dtype=dtype).eval()
    model.inv_freq = rope_inv_freq(config).to(device)  # RoPE frequencies stay float32, as build_model does
    lm = LanguageModel(model, tokenizer=None, name="random weights")
    hf = AutoModelForCausalLM.from_config(to_hf_config(config), dtype=dtype).to(device).eval()
    state = {(name if name.startswith("lm_head") else f"model.{name}"): t for name, t in model.state_dict().items()}
    hf.load_state_dict(state)
    return lm, hf


def checkpoint_models(name: str | None, device: torch.device, dtype: torch.dtype):
    """A checkpoint (default: the bundled model) in teachllm and in transformers."""
    lm = load(name, device=device, dtype=dtype, progress=True)
    hf = AutoModelForCausalLM.from_pretrained(checkpoint_folder(name), dtype=dtype).to(device).eval()
    return lm, hf


# ---- 1. greedy generation, teachllm against transformers -----------------------------------------
def teachllm_greedy(lm: LanguageModel, ids: list[int], n_new: int) -> list[int]:
    """The engine's greedy loop: prefill, then one decode_step per token, argmax each time."""
    cache = lm.new_cache(max_len=len(ids) + n_new)
    token = lm.prefill(ids, cache).argmax(-1)  # [1]
    tokens = [token]
    for _ in range(n_new - 1):
        token = lm.decode_step(token, cache).argmax(-1)  # [1]
        tokens.append(token)
    return torch.cat(tokens).tolist()


@torch.no_grad()
def hf_greedy(hf, ids: list[int], n_new: int) -> list[int]:
    """transformers' generate with greedy settings and exactly n_new new tokens."""
    input_ids = torch.tensor([ids], device=hf.device)  # [1, S]
    out = hf.generate(input_ids, attention_mask=torch.ones_like(input_ids), do_sample=False,
                      max_new_tokens=n_new, min_new_tokens=n_new, pad_token_id=0)
    return out[0, len(ids):].tolist()


def compare_greedy(lm, hf, ids: list[int], s: Settings) -> dict:
    """TTFT and decode tokens/s of both, and teachllm ÷ transformers.

    The two alternate run by run (teachllm, transformers, teachllm, ...), so that a busy moment
    on a shared machine slows both rather than one; each figure is the median of its runs.
    """
    n = s.new_tokens
    runs = {"teachllm": lambda k: teachllm_greedy(lm, ids, k), "transformers": lambda k: hf_greedy(hf, ids, k)}
    tokens = {name: generate(n) for name, generate in runs.items()}  # the warm-up, and the tokens to compare
    times = {(name, k): [] for name in runs for k in (1, n)}
    for _ in range(s.reps):
        for name, generate in runs.items():
            for k in (1, n):
                start = clock(lm.device)
                generate(k)
                times[name, k].append(clock(lm.device) - start)
    result = {}
    for name in runs:
        ttft, total = statistics.median(times[name, 1]), statistics.median(times[name, n])
        result[name] = {"ttft_s": ttft, "total_s": total, "decode_tokens_per_s": (n - 1) / max(total - ttft, 1e-9)}
    result["same_tokens"] = tokens["teachllm"] == tokens["transformers"]
    result["decode_ratio"] = result["teachllm"]["decode_tokens_per_s"] / result["transformers"]["decode_tokens_per_s"]
    result["ttft_ratio"] = result["transformers"]["ttft_s"] / result["teachllm"]["ttft_s"]  # > 1: teachllm faster
    return result


# ---- 2. decode throughput against batch size -----------------------------------------------------
def batch_throughput(lm: LanguageModel, ids: list[int], s: Settings, roof: Device) -> list[dict]:
    """Greedy decode of `batch_steps` steps for B copies of the prompt, at each batch size.

    The prompt is prefilled once per batch size (not timed); each timed run rewinds the cache to
    the prompt (its slots are never overwritten) and decodes again. The roofline predicts a step
    time of max(FLOPs / peak, bytes / bandwidth): while memory-bound, a bigger batch costs almost
    nothing more, because the weights are read once per step whatever the batch.
    """
    rows = []
    for b in s.batch_sizes:
        cache = lm.new_cache(max_len=len(ids) + s.batch_steps, batch_size=b)
        first = lm.prefill([ids] * b, cache).argmax(-1)  # [B]

        def decode(cache=cache, first=first):
            cache.reset()
            cache.advance(len(ids))  # rewind to just after the prompt
            token = first
            for _ in range(s.batch_steps):
                token = lm.decode_step(token, cache).argmax(-1)  # [B]

        seconds = timed(decode, lm.device, reps=s.reps, budget_s=s.budget_s)
        mid = len(ids) + s.batch_steps // 2  # keys visible at the middle step
        cost = decode_cost(lm.config, mid, b, lm.dtype)
        predicted_step = cost.flops / roof.attainable(cost.intensity)
        rows.append({"batch_size": b, "seconds": seconds, "tokens_per_s": b * s.batch_steps / seconds,
                     "intensity": cost.intensity, "predicted_tokens_per_s": b / predicted_step})
        del cache
    for row in rows:
        row["ratio_to_batch_1"] = row["tokens_per_s"] / rows[0]["tokens_per_s"]
        row["predicted_ratio"] = row["predicted_tokens_per_s"] / rows[0]["predicted_tokens_per_s"]
    return rows


# ---- the whole run -------------------------------------------------------------------------------
def run(lm: LanguageModel, hf, ids: list[int], s: Settings, name: str = "model", roof: Device | None = None) -> dict:
    """All three measurements; returns the JSON-ready report. `roof`: the device's roof (measured if None)."""
    started = time.perf_counter()
    roof = roof or measure_device(lm.device, lm.dtype)
    greedy = compare_greedy(lm, hf, ids, s)
    batches = batch_throughput(lm, ids, s, roof)
    contexts = tuple(T for T in s.decode_contexts if T <= lm.config.max_position_embeddings)
    points = measure_phases(lm, prefill_lengths=s.prefill_lengths, decode_batches=(1,), decode_contexts=contexts,
                            device=roof, reps=s.reps, budget_s=s.budget_s)
    return {
        "setup": {"model": name, "device": str(lm.device), "dtype": str(lm.dtype).removeprefix("torch."),
                  "prompt_tokens": len(ids), "threads": torch.get_num_threads(), "torch": torch.__version__,
                  "transformers": transformers.__version__, "machine": platform.processor() or platform.machine(),
                  "settings": asdict(s)},
        "roofline": {**asdict(roof), "ridge": roof.ridge},
        "greedy": greedy,
        "batch_decode": batches,
        "prefill": [p.to_dict() for p in points if p.phase == "prefill"],
        "decode_context": [p.to_dict() for p in points if p.phase == "decode"],
        "elapsed_s": time.perf_counter() - started,
    }


def format_report(r: dict) -> str:
    g, setup = r["greedy"], r["setup"]
    lines = [f"teachllm bench: {setup['model']} on {setup['device']} ({setup['machine']}), {setup['dtype']}, "
             f"{setup['threads']} threads, prompt {setup['prompt_tokens']} tokens, "
             f"{setup['settings']['new_tokens']} new tokens",
             f"roof (measured): peak {r['roofline']['peak_flops'] / 1e9:.1f} GFLOP/s, bandwidth "
             f"{r['roofline']['bandwidth'] / 1e9:.1f} GB/s, ridge {r['roofline']['ridge']:.1f} FLOP/byte", "",
             "1. greedy generation, batch 1        TTFT (ms)   decode tokens/s"]
    for name in ("teachllm", "transformers"):
        lines.append(f"   {name:<32}{g[name]['ttft_s'] * 1e3:>10.1f}{g[name]['decode_tokens_per_s']:>18.1f}")
    lines += [f"   teachllm ÷ transformers: decode ×{g['decode_ratio']:.2f}, TTFT ×{g['ttft_ratio']:.2f} "
              f"(> 1: teachllm faster); same tokens: {g['same_tokens']}", "",
              "2. decode throughput   batch   tokens/s   × batch 1   roofline: tokens/s   × batch 1"]
    for row in r["batch_decode"]:
        lines.append(f"{row['batch_size']:>27}{row['tokens_per_s']:>11.1f}{row['ratio_to_batch_1']:>12.2f}"
                     f"{row['predicted_tokens_per_s']:>20.1f}{row['predicted_ratio']:>12.2f}")
    lines += ["", "3. prefill against prompt length, decode step against context length (batch 1)",
              format_points([_point(p) for p in r["prefill"] + r["decode_context"]]),
              "", f"elapsed {r['elapsed_s']:.0f} s"]
    return "\n".join(lines)


def _point(d: dict) -> PhasePoint:
    return PhasePoint(d["phase"], d["batch_size"], d["length"], d["flops"], d["bytes"], d["seconds"],
                      d["attainable_flops"])


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m teachllm.bench", description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="auto", help="cpu, cuda, or auto (CUDA when present)")
    parser.add_argument("--dtype", default=None, help="float32 or bfloat16 (default: bf16 on CUDA, fp32 on CPU)")
    parser.add_argument("--model", default=None, help="checkpoint folder, .gguf or Hub id (default: bundled)")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions and shorter runs")
    parser.add_argument("--random-weights", action="store_true",
                        help="the model's architecture with random weights (default shapes: SmolLM2-135M)")
    parser.add_argument("--threads", type=int, default=None,
                        help="CPU threads for PyTorch (default: its own choice); 1 is steadier on a shared machine")
    parser.add_argument("--out", default=None, help="JSON path (default artifacts/bench/bench-<device>.json)")
    args = parser.parse_args(argv)
    transformers.logging.set_verbosity_error()

    if args.threads:
        torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    dtype = resolve_dtype(args.dtype, device)
    settings = Settings.quick() if args.quick else Settings(reps=10 if device.type == "cuda" else 3)
    if args.random_weights:
        config = ModelConfig.from_pretrained(args.model) if args.model else SMOLLM2_135M
        lm, hf = random_models(config, device, dtype)
        ids = torch.randint(0, config.vocab_size, (32,), generator=torch.Generator().manual_seed(0)).tolist()
        name = f"{args.model or 'SmolLM2-135M'} (random weights)"
    else:
        lm, hf = checkpoint_models(args.model, device, dtype)
        ids, name = lm.tokenizer.encode(PROMPT), lm.name
    report = run(lm, hf, ids, settings, name)
    print(format_report(report))
    out = Path(args.out or f"artifacts/bench/bench-{device.type}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
    print(f"wrote {out}")
    return report


if __name__ == "__main__":
    main()
