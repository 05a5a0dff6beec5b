"""The `teachllm` command line.

    teachllm step "The three primary colours are"     # watch generation step by step (make demo)
"""

from __future__ import annotations

import argparse
import sys
import time

import torch


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def _mib(n_bytes: int) -> str:
    return f"{n_bytes / 2**20:.2f} MiB"


def step(args: argparse.Namespace) -> None:
    """Tokenize → prefill → decode, printing what each stage did."""
    import teachllm as tl

    lm = tl.load(args.model, device=args.device, dtype=args.dtype)
    tok = lm.tokenizer
    print(f"teachllm step · {lm.name} · {lm.config.n_params / 1e6:.1f}M parameters · {lm.device} · "
          f"{str(lm.dtype).removeprefix('torch.')}\n")

    ids = tok.encode(args.prompt)
    if not ids:
        sys.exit("error: the prompt is empty; give some text to continue")
    print(f"1. Tokenize: {len(ids)} tokens")
    for i, (token_id, piece) in enumerate(zip(ids, tok.pieces(ids), strict=True)):
        print(f"   [{i:>3}] {token_id:>6}  {piece!r:<20} → {tok.token_text(token_id)!r}")

    cache = lm.new_cache(max_len=len(ids) + args.max_tokens)
    _sync(lm.device)
    t0 = time.perf_counter()
    logits = lm.prefill(ids, cache)
    _sync(lm.device)
    prefill_s = time.perf_counter() - t0
    print(f"\n2. Prefill: {len(ids)} tokens in one pass, {prefill_s * 1e3:.1f} ms → KV cache holds "
          f"{cache.length}/{cache.max_len} slots, {_mib(cache.bytes_used)} used of {_mib(cache.bytes_allocated)} "
          f"allocated ({cache.bytes_per_token / 1024:.1f} KiB per token)")

    print("\n3. Decode (greedy: the most probable token each step)")
    print(f"   {'step':>4}  {'phase':<7} {'token':<16} {'p':>6}  {'top-5 candidates':<62} {'cache':>5} "
          f"{'KV bytes':>10} {'time':>8}")
    out: list[int] = []
    step_times = [prefill_s]
    finish = "length"
    eos = set(lm.config.eos_token_ids)
    while True:
        probs = torch.softmax(logits[0].float(), dim=-1)  # [V]
        top_p, top_i = probs.topk(5)
        token = int(top_i[0])
        out.append(token)
        phase = "prefill" if len(out) == 1 else "decode"
        candidates = "  ".join(f"{tok.token_text(int(i))!r} {float(p):.3f}" for p, i in zip(top_p, top_i, strict=True))
        print(f"   {len(out):>4}  {phase:<7} {tok.token_text(token)!r:<16} {float(top_p[0]):>6.3f}  "
              f"{candidates[:62]:<62} {cache.length:>5} {_mib(cache.bytes_used):>10} "
              f"{step_times[-1] * 1e3:>6.1f}ms")
        if token in eos:
            finish = "stop (end-of-sequence token)"
            break
        if len(out) >= args.max_tokens:
            break
        t0 = time.perf_counter()
        logits = lm.decode_step(token, cache)
        _sync(lm.device)
        step_times.append(time.perf_counter() - t0)

    total = sum(step_times)
    decode_times = step_times[1:]
    tpot = sum(decode_times) / len(decode_times) if decode_times else float("nan")
    print(f"\n4. Detokenize: {tok.decode(ids + out, skip_special_tokens=True)!r}")
    print(f"\n   finish: {finish} after {len(out)} tokens")
    print(f"   TTFT (prefill + first token): {step_times[0] * 1e3:.1f} ms")
    print(f"   time per output token (decode steps): {tpot * 1e3:.1f} ms → {1 / tpot:.1f} tokens/s")
    print(f"   end to end: {total * 1e3:.0f} ms for {len(out)} tokens → {len(out) / total:.1f} tokens/s")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="teachllm", description="Step through LLM text generation.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("step", help="tokenize, prefill and decode a prompt, printing every step")
    p.add_argument("prompt", nargs="?", default="The three primary colours are")
    p.add_argument("--max-tokens", type=int, default=16, help="tokens to generate (default 16)")
    p.add_argument("--model", default=None, help="checkpoint folder, .gguf file or Hub id (default: bundled)")
    p.add_argument("--device", default="auto", help="auto (CUDA if present), cpu or cuda")
    p.add_argument("--dtype", default=None, help="float32, bfloat16 or float16 (default: bf16 on GPU, fp32 on CPU)")
    p.set_defaults(func=step)
    args = parser.parse_args(argv)
    if getattr(args, "max_tokens", 1) < 1:
        parser.error("--max-tokens must be at least 1")
    try:
        args.func(args)
    except (ValueError, FileNotFoundError) as error:
        sys.exit(f"error: {error}")


if __name__ == "__main__":
    main()
