"""python -m teachllm.bench.serving: the serving chapters' numbers, measured on the bundled model.

    python -m teachllm.bench.serving            # a few minutes on a laptop CPU
    python -m teachllm.bench.serving --quick    # a smaller workload, for a smoke test
    python -m teachllm.bench.serving --out artifacts/serving/bench.json

Prints and writes (JSON):
1. batched decode: tokens/s at batch 1, 2, 4, 8, 16 (batching amortises the weight reads);
2. static vs continuous batching on one workload of mixed prompt and output lengths: total time,
   throughput, mean/median latency (all requests and the short ones), TTFT, and the continuous/static
   ratios; iterations and forward calls beside the wall-clock numbers;
3. chunked prefill: how long decoders stall when a long prompt arrives, without and with chunking;
4. paged vs contiguous KV cache: the max logit difference for several block sizes, and the
   fragmentation of each against contiguous reservation;
5. CacheBlend: quality lost against compute saved, for HKVD and random token selection;
6. speculative decoding with the model drafting for itself from some of its layers: acceptance rates;
7. an int8 KV cache: the memory it saves and the logit error it costs.

Everything runs in one process, after a warm-up. `--threads 1` (the default) keeps timings steady on
a shared machine; pass 0 to keep PyTorch's own choice.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch

from ..lm import load
from ..serving.cacheblend import quality_table
from ..serving.kv_quant import int8_error
from ..serving.parity import compare_with_contiguous
from ..serving.speculative import acceptance_table
from ..serving.workload import (
    DOCUMENTS,
    LONG_TEXT,
    QUESTION,
    QUESTION_SPEC,
    chunked_prefill_demo,
    compare_batching,
    decode_throughput,
    mixed_workload,
)


def _run_summary(run, short_ids) -> dict:
    return {"all": run.summary(), "short": run.summary(short_ids), "requests": [r.to_dict() for r in run.requests],
            "timeline": [r.to_dict() for r in run.timeline]}


def batching_section(lm, quick: bool) -> dict:
    if quick:
        seqs, workload = 4, mixed_workload(lm, n_requests=12, max_num_seqs=4, long_tokens=32, short_tokens=(2, 4))
    else:
        seqs, workload = 8, mixed_workload(lm, n_requests=20, max_num_seqs=8, long_tokens=96, short_tokens=(8, 24))
    result = compare_batching(lm, workload, max_num_seqs=seqs, progress=True)
    s, c = result["static"], result["continuous"]
    short = workload.short_ids
    print(f"\n2. static vs continuous batching: {len(workload.prompts)} requests, max {seqs} at once, "
          f"{len(workload.long_ids)} long outputs")
    print(f"   {'':24s}{'static':>12s}{'continuous':>12s}{'ratio':>8s}")
    for label, a, b in [
        ("total time (s)", s.total_s, c.total_s),
        ("throughput (tok/s)", s.summary()["throughput_tok_s"], c.summary()["throughput_tok_s"]),
        ("mean latency (s)", s.summary()["latency_s"]["mean"], c.summary()["latency_s"]["mean"]),
        ("short: mean latency (s)", s.summary(short)["latency_s"]["mean"], c.summary(short)["latency_s"]["mean"]),
        ("short: median latency", s.summary(short)["latency_s"]["median"], c.summary(short)["latency_s"]["median"]),
        ("mean TTFT (s)", s.summary()["ttft_s"]["mean"], c.summary()["ttft_s"]["mean"]),
        ("iterations", s.iterations, c.iterations),
        ("forward calls", s.forward_calls, c.forward_calls),
    ]:
        print(f"   {label:24s}{a:12.2f}{b:12.2f}{b / a:8.2f}")
    busy = [r for r in c.timeline if r.num_running > 0]
    paged = sum(r.fragmentation for r in busy) / len(busy)
    contiguous = sum(r.contiguous_fragmentation for r in busy) / len(busy)
    print(f"   KV slots wasted (continuous run, mean over iterations): paged {paged:.1%}, "
          f"contiguous reservation of prompt + max_tokens {contiguous:.1%}")
    return {"workload": workload.describe(), "max_num_seqs": seqs, "ratios": result["ratios"],
            "mean_fragmentation": {"paged": paged, "contiguous": contiguous},
            "static": _run_summary(s, short), "continuous": _run_summary(c, short)}


def chunked_section(lm, quick: bool) -> dict:
    demo = chunked_prefill_demo(lm, long_prompt_tokens=192 if quick else 384)
    print("\n3. chunked prefill: a long prompt joins three decoding requests")
    for name, d in demo.items():
        print(f"   {name:8s} decoders' longest stall {d['decoder_max_gap_s']:.2f} s, long prompt TTFT "
              f"{d['long_ttft_s']:.2f} s, most tokens in one iteration {d['max_tokens_per_iteration']}")
    return {name: {k: v for k, v in d.items() if k != "run"} | {"timeline": [r.to_dict() for r in d["run"].timeline]}
            for name, d in demo.items()}


def paged_section(lm) -> dict:
    ids = lm.tokenizer.encode(LONG_TEXT)
    prompts = [ids[:16], ids[:16] + ids[40:45], ids[:12], ids[20:27]]  # 16 and 12 end on block boundaries
    print("\n4. paged vs contiguous KV cache (prompts of 16, 21 (sharing 16), 12 and 7 tokens)")
    rows = []
    for block_size in (1, 4, 8, 16):
        for batched in (False, True):
            report = compare_with_contiguous(lm, prompts, block_size, n_decode=4, batched=batched)
            rows.append(report.to_dict())
            print(f"   block size {block_size:3d} {'batched' if batched else 'one by one':10s} max |Δ logit| "
                  f"{report.max_abs_error:.2e}, prefix-cached tokens {report.cached_tokens}")
    return {"prompt_lengths": [len(p) for p in prompts], "reports": rows}


def cacheblend_section(lm) -> dict:
    chunks = [lm.tokenizer.encode(d) for d in DOCUMENTS]
    suffix = lm.tokenizer.encode(QUESTION)
    rows = quality_table(lm, chunks, suffix)
    print(f"\n5. CacheBlend: {len(chunks)} chunks ({sum(map(len, chunks))} tokens) + a question ({len(suffix)} tokens)")
    print(f"   {'select':10s}{'ratio':>6s}{'compute':>9s}{'saved':>7s}{'KL':>8s}{'top-1':>7s}{'ppl':>7s}"
          f"{'max|Δ|':>8s}")
    for r in rows:
        print(f"   {r.select:10s}{r.ratio:6.2f}{r.recompute_fraction:9.2f}{r.compute_saved:7.2f}{r.kl:8.4f}"
              f"{r.top1_agreement:7.2f}{r.ppl:7.2f}{r.max_abs_logit_diff:8.2f}")
    print(f"   (perplexity of the question after a full prefill: {rows[0].ppl_full:.2f})")
    return {"chunk_tokens": [len(c) for c in chunks], "suffix_tokens": len(suffix), "rows": [r.to_dict() for r in rows]}


def speculative_section(lm, quick: bool) -> dict:
    prompt = lm.tokenizer.encode(lm.tokenizer.apply_chat_template([{"role": "user", "content": QUESTION_SPEC}]))
    drafts = (24, 29) if quick else (16, 24, 29, list(range(10)) + list(range(20, 30)))
    rows = acceptance_table(lm, prompt, max_tokens=12 if quick else 24, drafts=drafts, gammas=(3,))
    print("\n6. speculative decoding, the model drafting for itself (greedy, γ = 3)")
    for r in rows:
        layers = r["draft_layers"]
        name = f"first {len(layers)}" if layers == list(range(len(layers))) else f"{len(layers)} (middle skipped)"
        print(f"   draft = {name:20s} layers: acceptance {r['acceptance_rate']:.2f}, "
              f"{r['tokens_per_target_call']:.2f} tokens per target call, same as greedy: {r['same_as_greedy']}, "
              f"speed-up {r['speedup']:.2f}×")
    return {"prompt_tokens": len(prompt), "rows": rows}


def kv_int8_section(lm) -> dict:
    prompt = lm.tokenizer.encode(lm.tokenizer.apply_chat_template([{"role": "user", "content": QUESTION_SPEC}]))
    result = int8_error(lm, prompt, n_decode=24)
    print(f"\n7. int8 KV cache: {result['bytes_per_token_int8']} instead of {result['bytes_per_token_fp']} bytes per "
          f"token ({result['memory_ratio']:.0%}); max |Δ logit| {result['max_abs_logit_diff']:.3f}, mean KL "
          f"{result['mean_kl']:.4f}, top-1 agreement {result['top1_agreement']:.2f}, free-running greedy identical "
          f"for {result['greedy_tokens_identical']} of {result['n_decode']} tokens")
    return result


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m teachllm.bench.serving", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smaller workload (a smoke test)")
    parser.add_argument("--out", default="artifacts/serving/bench.json", help="where to write the JSON")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (0 = PyTorch's default)")
    args = parser.parse_args(argv)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    lm = load(device="cpu", dtype="float32")
    start = time.perf_counter()
    print(f"{lm}\ntorch threads: {torch.get_num_threads()}")
    throughput = decode_throughput(lm, batch_sizes=(1, 2, 4, 8) if args.quick else (1, 2, 4, 8, 16))
    print("\n1. batched decode (contiguous cache)")
    for row in throughput:
        print(f"   batch {row['batch']:3d}: {row['ms_per_step']:7.1f} ms per step, {row['tokens_per_s']:7.1f} tokens/s")
    result = {"model": lm.name, "device": str(lm.device), "dtype": str(lm.dtype), "threads": torch.get_num_threads(),
              "quick": args.quick, "decode_throughput": throughput,
              "batching": batching_section(lm, args.quick), "chunked_prefill": chunked_section(lm, args.quick),
              "paged_vs_contiguous": paged_section(lm), "cacheblend": cacheblend_section(lm),
              "speculative": speculative_section(lm, args.quick), "kv_int8": kv_int8_section(lm)}
    result["seconds"] = time.perf_counter() - start
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, default=float))
    print(f"\nwrote {out} ({result['seconds']:.0f} s)")
    return result


if __name__ == "__main__":
    main()
