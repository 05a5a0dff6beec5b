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
   FLOPs, bytes, intensity, achieved FLOP/s and the roof's attainable FLOP/s;
4. the weights' precision (bundled GGUF model on the CPU): greedy decode tokens/s of teachllm float32,
   teachllm with the GGUF's own 4/8-bit blocks (`tl.load(weights="gguf")`), transformers float32 and
   transformers bfloat16, each with its bytes read per step ÷ step time as a fraction of the measured
   bandwidth; and what each costs in quality against float32: max |Δlogit| and mean KL over 20
   prompts, perplexity of a fixed English and a fixed Chinese paragraph. Beside them: the same GGUF model on
   model.py's plain loop instead of the fast path (teachllm.fastpath.fused), the kernel each group of matrices uses
   (teachllm.fastpath.kernels), the share of a step spent outside the matrices, and llama.cpp's decode speed on the
   same file when a llama.cpp build is installed (teachllm.fastpath.llamacpp; skipped with a note otherwise).
   `--weights-only` runs this part alone;
5. the GPU fast path (bench/fast.py): teachllm's reference loop, its fast path (a CUDA graph per step) and
   torch.compile of its step, transformers eager and with its static cache compiled: TTFT, decode tokens/s at
   batch 1 and 32, kernels per decode step (torch.profiler). On the CPU the compiled ways are skipped, with why.

The report is printed and written as JSON (default artifacts/bench/bench-<device>.json).
Timing does not depend on weight values, so `--random-weights` (the bundled architecture built
from its shapes, for a machine the bundled checkpoint cannot reach) gives the same speed.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import transformers
from transformers import AutoModelForCausalLM, LlamaConfig

from .. import texts
from ..checkpoints.loading import bundled_gguf, checkpoint_folder, resolve_device, resolve_dtype
from ..config import ModelConfig
from ..cost import decode_cost
from ..fastpath import kernels, llamacpp, quant
from ..generate import greedy
from ..lm import LanguageModel, load
from ..model import Transformer, rope_inv_freq
from ..roofline import Device, PhasePoint, clock, decode_throughput, format_points, measure_device, measure_phases
from .fast import fast_section, format_fast

# SmolLM2-135M-Instruct's shapes (its config.json), for --random-weights where the checkpoint is absent.
SMOLLM2_135M = ModelConfig(vocab_size=49152, hidden_size=576, intermediate_size=1536, n_layers=30, n_heads=9,
                           n_kv_heads=3, head_dim=64, max_position_embeddings=8192, rope_theta=100000.0,
                           rms_norm_eps=1e-5, tie_word_embeddings=True, bos_token_id=1, eos_token_ids=(2,))
PROMPT = texts.ENGLISH.split(". ")[0] + "."  # the shared paragraph's first sentence, about 30 tokens


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
    fast_batch_sizes: tuple[int, ...] = (1, 32)  # section 5 (the GPU fast path): tokens/s at these batch sizes

    @classmethod
    def quick(cls) -> Settings:
        return cls(new_tokens=16, reps=1, batch_sizes=(1, 4, 16), batch_steps=4, prefill_lengths=(64, 256),
                   decode_contexts=(128, 1024), budget_s=2.0, fast_batch_sizes=(1, 4))


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
    hf = AutoModelForCausalLM.from_pretrained(checkpoint_folder(name), dtype=dtype, trust_remote_code=False)
    hf = hf.to(device).eval()
    return lm, hf


# ---- 1. greedy generation, teachllm against transformers -----------------------------------------
def teachllm_greedy(lm: LanguageModel, ids: list[int], n_new: int) -> list[int]:
    """The engine's greedy loop (teachllm.generate.greedy): prefill, then one decode_step per token."""
    return greedy(lm, ids, n_new)[0]


@torch.no_grad()
def hf_greedy(hf, ids: list[int], n_new: int, exact: bool = True, **kwargs) -> list[int]:
    """The reference: transformers' generate with greedy settings, for the benchmark and the parity tests.

    exact: exactly n_new new tokens (the end-of-sequence token does not stop it); otherwise up to n_new,
    stopping at end-of-sequence. kwargs go to `generate` (repetition_penalty=..., no_repeat_ngram_size=...;
    num_beams=k makes it transformers' beam search).
    """
    input_ids = torch.tensor([ids], device=hf.device)  # [1, S]
    if exact:
        kwargs["min_new_tokens"] = n_new
    out = hf.generate(input_ids, attention_mask=torch.ones_like(input_ids), do_sample=False,
                      max_new_tokens=n_new, pad_token_id=0, **kwargs)
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
    """Greedy decode of `batch_steps` steps for B copies of the prompt, at each batch size
    (`roofline.decode_throughput`), beside the roofline's prediction.

    The roofline predicts a step time of max(FLOPs / peak, bytes / bandwidth): while memory-bound, a bigger
    batch costs almost nothing more, because the weights are read once per step whatever the batch.
    """
    rows = []
    for measured in decode_throughput(lm, ids, s.batch_sizes, s.batch_steps, reps=s.reps, budget_s=s.budget_s):
        b = measured["batch_size"]
        mid = len(ids) + s.batch_steps // 2  # keys visible at the middle step
        cost = decode_cost(lm.config, mid, b, lm.dtype)
        predicted_step = cost.flops / roof.attainable(cost.intensity)
        rows.append({"batch_size": b, "seconds": measured["seconds_per_step"] * s.batch_steps,
                     "tokens_per_s": measured["tokens_per_s"], "intensity": cost.intensity,
                     "predicted_tokens_per_s": b / predicted_step})
    for row in rows:
        row["ratio_to_batch_1"] = row["tokens_per_s"] / rows[0]["tokens_per_s"]
        row["predicted_ratio"] = row["predicted_tokens_per_s"] / rows[0]["predicted_tokens_per_s"]
    return rows


# ---- 4. the weights' precision: float32, the GGUF's own blocks, bfloat16 -------------------------
QUALITY_PROMPTS = [  # 20 prompts: English, Chinese, code, chat, numbers
    "The three primary colours are", "Once upon a time, in a small village by the sea,",
    "The capital of France is", "Water boils at a temperature of", "Photosynthesis is the process by which",
    "In 1969, the first humans to walk on the Moon were", "def fibonacci(n):\n    if n < 2:\n        return n\n",
    "import numpy as np\nx = np.linspace(0, 1, 100)\n", "SELECT name, age FROM users WHERE",
    "The quick brown fox jumps over the lazy dog. The quick brown fox", "1, 2, 3, 5, 8, 13, 21,",
    "<|im_start|>user\nWhat is the capital of Japan?<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>user\nWrite a haiku about the sea.<|im_end|>\n<|im_start|>assistant\n",
    "My favourite recipe for a quick dinner is", "The most important rule of writing clear code is",
    "人工智能正在改变我们的生活方式，", "北京是中国的首都，也是", "今天天气很好，我们去公园",
    "Le chat est sur la table, et le chien", "Dear customer, thank you for your order. Your package",
]
ENGLISH_PARAGRAPH, CHINESE_PARAGRAPH = texts.ENGLISH, texts.CHINESE  # perplexity is measured on these


def perplexity(logits: torch.Tensor, ids: list[int]) -> float:
    """exp(mean negative log-likelihood of each next token) from logits [1, S, V] over ids (S tokens)."""
    logp = torch.log_softmax(logits[0, :-1].float(), dim=-1)  # [S-1, V]
    target = torch.tensor(ids[1:], device=logits.device)  # [S-1]
    return float(torch.exp(-logp.gather(-1, target[:, None]).mean()))


def bits_per_byte(logits: torch.Tensor, ids: list[int], tokenizer) -> float:
    """The loss `perplexity` averages over tokens, summed and shared out over the UTF-8 bytes of the text instead,
    in bits (the first token, which nothing predicts, is counted in the bytes: a small share of a paragraph).
    Unlike perplexity per token, this compares languages: a Chinese character is often cut into two or three
    byte-level tokens, the later ones easy to guess once the first is known, which lowers the average per token
    without the model knowing the language any better."""
    logp = torch.log_softmax(logits[0, :-1].float(), dim=-1)  # [S-1, V]
    target = torch.tensor(ids[1:], device=logits.device)  # [S-1]
    nats = -float(logp.gather(-1, target[:, None]).sum())
    n_bytes = len(tokenizer.decode(ids, skip_special_tokens=True).encode("utf-8"))
    return nats / math.log(2) / n_bytes


def quality(forward, reference, tokenizer) -> dict:
    """How far a model's logits are from the float32 reference's: both are functions ids → [1, S, V].

    max |Δlogit| over every position of the 20 prompts; mean KL(float32 ‖ model) over those positions;
    perplexity of the English and the Chinese paragraph under both. The two models may live on different devices
    (the GGUF's 4-bit model runs on the CPU, the float one may be on a GPU): their logits are compared on the CPU.
    """
    worst, kls = 0.0, []
    for text in QUALITY_PROMPTS:
        ids = tokenizer.encode(text)
        ref, got = reference(ids).float().cpu(), forward(ids).float().cpu()  # [1, S, V]
        worst = max(worst, float((got - ref).abs().max()))
        kl = torch.sum(ref.softmax(-1) * (ref.log_softmax(-1) - got.log_softmax(-1)), dim=-1)  # [1, S]
        kls.append(kl.flatten())
    out = {"max_abs_logit_diff": worst, "mean_kl": float(torch.cat(kls).mean())}
    for name, text in (("english", ENGLISH_PARAGRAPH), ("chinese", CHINESE_PARAGRAPH)):
        ids = tokenizer.encode(text)
        out[f"ppl_{name}"] = perplexity(forward(ids), ids)
        out[f"ppl_{name}_float32"] = perplexity(reference(ids), ids)
    return out


def greedy_speeds(runs: dict, n: int, reps: int) -> dict[str, dict]:
    """Decode tokens/s of several greedy generators (functions k → k new tokens), run in turn.

    Each run is timed at k = 1 and k = n; decode tokens/s = (n − 1) / (time(n) − time(1)), medians over
    `reps` rounds. Within a round they alternate, so that a busy moment slows all of them."""
    tokens = {name: generate(n) for name, generate in runs.items()}  # warm-up, and the tokens
    times = {(name, k): [] for name in runs for k in (1, n)}
    for _ in range(reps):
        for name, generate in runs.items():
            for k in (1, n):
                start = clock("cpu")
                generate(k)
                times[name, k].append(clock("cpu") - start)
    out = {}
    for name in runs:
        ttft, total = statistics.median(times[name, 1]), statistics.median(times[name, n])
        step = (total - ttft) / (n - 1) if total > ttft else float("nan")  # nan: a busy moment hid the steps
        out[name] = {"ttft_s": ttft, "step_s": step, "decode_tokens_per_s": 1 / step, "tokens": tokens[name]}
    return out


def agreeing_prefix(a: list[int], b: list[int]) -> int:
    """How many tokens two greedy runs share before they first differ."""
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


GGUF = "teachllm gguf (Q4_1 + Q8_0)"
PLAIN = "teachllm gguf, plain path"


def compare_weights(lm: LanguageModel, hf, ids: list[int], s: Settings, roof: Device) -> dict:
    """Section 4: float32, the GGUF's own blocks and bfloat16, in speed and in quality (CPU, bundled model);
    the kernels the GGUF model chose, the share of its step outside the matrices on the fast and the plain
    path, and llama.cpp's speed on the same file when it is installed."""
    gguf = load(weights="gguf", device="cpu", progress=False)
    plain = LanguageModel(gguf.model, gguf.tokenizer, name=gguf.name)  # the same weights, model.py's own loop
    hf_bf16 = AutoModelForCausalLM.from_pretrained(checkpoint_folder(), dtype=torch.bfloat16,
                                                   trust_remote_code=False).eval()
    n = s.new_tokens
    runs = {"teachllm float32": lambda k: teachllm_greedy(lm, ids, k),
            GGUF: lambda k: teachllm_greedy(gguf, ids, k),
            PLAIN: lambda k: teachllm_greedy(plain, ids, k),
            "transformers float32": lambda k: hf_greedy(hf, ids, k),
            "transformers bfloat16": lambda k: hf_greedy(hf_bf16, ids, k)}
    speeds = greedy_speeds(runs, n, s.reps)

    # bytes one decode step reads, at the middle step's context: the weights, plus the K and V read and written
    c = lm.config
    kv32 = decode_cost(c, len(ids) + n // 2, 1, torch.float32)
    kv16 = decode_cost(c, len(ids) + n // 2, 1, torch.bfloat16)
    gguf_bytes = kv32.bytes - kv32.weight_bytes + quant.weight_bytes_read(gguf.model)
    step_bytes = {"teachllm float32": kv32.bytes, "transformers float32": kv32.bytes,
                  "transformers bfloat16": kv16.bytes, GGUF: gguf_bytes, PLAIN: gguf_bytes}
    for name, row in speeds.items():
        row["bytes_per_step"] = step_bytes[name]
        row["bandwidth_fraction"] = step_bytes[name] / row["step_s"] / roof.bandwidth
        row["roofline_tokens_per_s"] = roof.bandwidth / step_bytes[name]  # memory-bound: one step reads them once
    reference = speeds["teachllm float32"]["tokens"]
    for row in speeds.values():
        row["same_tokens_as_float32"] = agreeing_prefix(row.pop("tokens"), reference)

    def hf_logits(model):
        return torch.no_grad()(lambda i: model(torch.tensor([i])).logits)

    qualities = {GGUF: quality(gguf.forward, lm.forward, lm.tokenizer),
                 "transformers bfloat16": quality(hf_logits(hf_bf16), lm.forward, lm.tokenizer)}
    q_speed = speeds[GGUF]["decode_tokens_per_s"]
    matmuls = kernels.matmul_ms(gguf.model)
    yardstick = llamacpp.decode_speed(bundled_gguf(), torch.get_num_threads(), n)
    return {"speed": speeds, "quality": qualities, "kernels": gguf.describe(),
            "matmul_ms": matmuls, "outside_matmuls": {name: 1 - matmuls / (1e3 * speeds[name]["step_s"])
                                                      for name in (GGUF, PLAIN)},
            "llama_cpp": {**yardstick, "teachllm_share": q_speed / yardstick["tokens_per_s"]
                          if yardstick["tokens_per_s"] else None},
            "gguf_over_transformers_float32": q_speed / speeds["transformers float32"]["decode_tokens_per_s"],
            "gguf_over_transformers_bfloat16": q_speed / speeds["transformers bfloat16"]["decode_tokens_per_s"],
            "gguf_over_teachllm_float32": q_speed / speeds["teachllm float32"]["decode_tokens_per_s"]}


def format_weights(w: dict, n: int) -> str:
    lines = [f"4. weights' precision, greedy, batch 1   decode tokens/s   MB read/step   × bandwidth   "
             f"roofline tokens/s   same tokens (of {n})"]
    for name, row in w["speed"].items():
        lines.append(f"   {name:<36}{row['decode_tokens_per_s']:>12.1f}{row['bytes_per_step'] / 1e6:>15.1f}"
                     f"{row['bandwidth_fraction']:>14.2f}{row['roofline_tokens_per_s']:>20.1f}"
                     f"{row['same_tokens_as_float32']:>15}")
    y = w["llama_cpp"]
    if y["tokens_per_s"]:
        lines.append(f"   {'llama.cpp on the same file':<36}{y['tokens_per_s']:>12.1f}   ({y['how']})")
    lines.append(f"   gguf ÷ transformers float32 ×{w['gguf_over_transformers_float32']:.2f}, "
                 f"÷ transformers bfloat16 ×{w['gguf_over_transformers_bfloat16']:.2f}, "
                 f"÷ teachllm float32 ×{w['gguf_over_teachllm_float32']:.2f}"
                 + (f", ÷ llama.cpp ×{y['teachllm_share']:.2f}" if y["tokens_per_s"] else f"; llama.cpp: {y['how']}"))
    lines.append(f"   the quantised matrices take {w['matmul_ms']:.1f} ms of a step; outside them: "
                 f"{w['outside_matmuls'][GGUF]:.0%} of the fast path's step, {w['outside_matmuls'][PLAIN]:.0%} "
                 "of the plain path's")
    lines.append("   quality against float32 (20 prompts)   max |Δlogit|   mean KL   "
                 "ppl English (fp32)   ppl Chinese (fp32)")
    for name, q in w["quality"].items():
        lines.append(f"   {name:<36}{q['max_abs_logit_diff']:>12.3f}{q['mean_kl']:>12.2e}"
                     f"{q['ppl_english']:>10.3f} ({q['ppl_english_float32']:.3f}){q['ppl_chinese']:>10.3f} "
                     f"({q['ppl_chinese_float32']:.3f})")
    lines.append("   " + w["kernels"].replace("\n", "\n   "))
    return "\n".join(lines)


# ---- the whole run -------------------------------------------------------------------------------
def run(lm: LanguageModel, hf, ids: list[int], s: Settings, name: str = "model", roof: Device | None = None) -> dict:
    """All three measurements; returns the JSON-ready report. `roof`: the device's roof (measured if None)."""
    started = time.perf_counter()
    roof = roof or measure_device(lm.device, lm.dtype, config=lm.config)
    greedy = compare_greedy(lm, hf, ids, s)
    batches = batch_throughput(lm, ids, s, roof)
    contexts = tuple(T for T in s.decode_contexts if T <= lm.config.max_position_embeddings)
    points = measure_phases(lm, prefill_lengths=s.prefill_lengths, decode_batches=(1,), decode_contexts=contexts,
                            device=roof, reps=s.reps, budget_s=s.budget_s)
    fast = fast_section(lm, hf, ids, s.new_tokens, s.fast_batch_sizes, reps=s.reps)
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
        "fast_path": fast,
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
              *(["", format_fast(r["fast_path"])] if "fast_path" in r else []),
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
    parser.add_argument("--weights-only", action="store_true",
                        help="only part 4: float32, the GGUF's own 4/8-bit blocks and bfloat16 (bundled model, CPU)")
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
    roof = measure_device(lm.device, lm.dtype, config=lm.config)
    weights_part = not args.random_weights and args.model is None and device.type == "cpu" and dtype == torch.float32
    if args.weights_only:
        if not weights_part:
            parser.error("--weights-only needs the bundled model on the CPU in float32")
        report = {"setup": {"model": name, "device": str(device), "threads": torch.get_num_threads(),
                            "torch": torch.__version__, "settings": asdict(settings)},
                  "roofline": {**asdict(roof), "ridge": roof.ridge}}
    else:
        report = run(lm, hf, ids, settings, name, roof)
        print(format_report(report))
    if weights_part:
        report["weights"] = compare_weights(lm, hf, ids, settings, roof)
        print(f"\nroof: bandwidth {roof.bandwidth / 1e9:.1f} GB/s (measured); CPU: {kernels.machine()['cpu']}, "
              f"{torch.backends.cpu.get_cpu_capability()} dispatch, {torch.get_num_threads()} threads")
        print(format_weights(report["weights"], settings.new_tokens))
    out = Path(args.out or f"artifacts/bench/bench-{device.type}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
    print(f"wrote {out}")
    return report


if __name__ == "__main__":
    main()
