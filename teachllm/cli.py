"""The `teachllm` command line.

    teachllm step "The three primary colours are"            # watch generation step by step (make demo)
    teachllm step "Name a fruit." --chat --temperature 0.8 --top-p 0.9 --seed 0
    teachllm generate "Write a haiku about the sea." --chat  # stream the text, then the timings
"""

from __future__ import annotations

import argparse
import sys

import torch


def _mib(n_bytes: int) -> str:
    return f"{n_bytes / 2**20:.2f} MiB"


def _params(args: argparse.Namespace):
    from .sampling import SamplingParams

    return SamplingParams(
        temperature=args.temperature, top_k=args.top_k, top_p=args.top_p, min_p=args.min_p,
        repetition_penalty=args.repetition_penalty, presence_penalty=args.presence_penalty,
        frequency_penalty=args.frequency_penalty, no_repeat_ngram_size=args.no_repeat_ngram_size,
        max_tokens=args.max_tokens, min_tokens=args.min_tokens, stop=args.stop or [],
        stop_token_ids=args.stop_token_id or [], ignore_eos=args.ignore_eos,
        include_stop_str_in_output=args.include_stop_str, seed=args.seed, num_beams=args.num_beams,
        length_penalty=args.length_penalty)


def _load(args: argparse.Namespace):
    import teachllm as tl

    lm = tl.load(args.model, device=args.device, dtype=args.dtype, weights=args.weights)
    prompt = args.prompt
    if args.chat:
        prompt = lm.tokenizer.apply_chat_template([{"role": "user", "content": prompt}])
    ids = lm.tokenizer.encode(prompt)
    if not ids:
        raise ValueError("the prompt is empty; give some text to continue")
    return lm, ids


def _describe(params) -> str:
    if params.num_beams > 1:
        return f"beam search, {params.num_beams} beams, length_penalty={params.length_penalty}"
    if params.greedy:
        return "greedy: the most probable token each step"
    parts = [f"temperature={params.temperature}"]
    parts += [f"top_k={params.top_k}"] if params.top_k > 0 else []
    parts += [f"top_p={params.top_p}"] if params.top_p < 1 else []
    parts += [f"min_p={params.min_p}"] if params.min_p > 0 else []
    parts += [f"seed={params.seed}"] if params.seed is not None else []
    return "sampling: " + ", ".join(parts)


def step(args: argparse.Namespace) -> None:
    """Tokenize → prefill → decode, printing what each stage did."""
    from .generate import generation_steps

    params = _params(args)
    lm, ids = _load(args)
    tok = lm.tokenizer
    print(f"teachllm step · {lm.name} · {lm.config.n_params / 1e6:.1f}M parameters · {lm.device} · "
          f"{str(lm.dtype).removeprefix('torch.')}\n")

    print(f"1. Tokenize: {len(ids)} tokens")
    for i, (token_id, piece) in enumerate(zip(ids, tok.pieces(ids), strict=True)):
        print(f"   [{i:>3}] {token_id:>6}  {piece!r:<20} → {tok.token_text(token_id)!r}")

    if params.num_beams > 1:
        return _beam_steps(lm, ids, params)

    print(f"\n2. Prefill, then 3. decode ({_describe(params)})")
    print(f"   {'step':>4}  {'phase':<7} {'token':<14} {'p':>6} {'cache':>6} {'KV bytes':>10} {'time':>8}  "
          f"top-5 candidates (after sampling rules)")
    for s in generation_steps(lm, [ids], params):
        probs = torch.softmax(s.processed[0], dim=-1)  # the distribution the token was drawn from
        top_p, top_i = probs.topk(5)
        token = s.tokens[0]
        candidates = "  ".join(f"{tok.token_text(int(i))!r} {float(p):.2f}" for p, i in zip(top_p, top_i, strict=True))
        if s.index == 0:
            print(f"   prefill: {len(ids)} tokens in one pass → KV cache holds {s.cache.length}/{s.cache.max_len} "
                  f"slots, {_mib(s.cache.bytes_used)} of {_mib(s.cache.bytes_allocated)} allocated "
                  f"({s.cache.bytes_per_token / 1024:.1f} KiB per token)")
        print(f"   {s.index + 1:>4}  {s.phase:<7} {tok.token_text(token)!r:<14} {float(probs[token]):>6.3f} "
              f"{s.cache.length:>6} {_mib(s.cache.bytes_used):>10} {s.seconds * 1e3:>6.1f}ms  {candidates}")
    seq = s.sequences[0]
    reason = {"length": f"max_tokens={params.max_tokens} reached",
              "stop": f"stop ({seq.stop_reason!r})" if seq.stop_reason is not None else "stop (end-of-sequence)"}
    m = seq.result().metrics
    print(f"\n4. Detokenize: {seq.text!r}")
    print(f"\n   finish: {reason[seq.finish_reason]} after {m.n_output_tokens} tokens")
    print(f"   TTFT (prefill + first token): {m.ttft_s * 1e3:.1f} ms")
    if m.n_output_tokens > 1:
        print(f"   time per output token (decode steps): {m.tpot_s * 1e3:.1f} ms → {1 / m.tpot_s:.1f} tokens/s")
    print(f"   end to end: {m.e2e_s * 1e3:.0f} ms for {m.n_output_tokens} tokens → {m.tokens_per_s:.1f} tokens/s")


def _beam_steps(lm, ids, params) -> None:
    from .beam import beam_search_steps

    tok = lm.tokenizer
    print(f"\n2. Prefill, then 3. decode ({_describe(params)}); scores are summed log-probabilities")
    for s in beam_search_steps(lm, ids, params):
        print(f"   step {s.index + 1}  ({s.seconds * 1e3:.1f} ms)")
        for b, h in enumerate(s.running):
            print(f"      beam {b}  {h.score:>8.3f}  {tok.decode(h.token_ids)!r}")
    print("\n4. Finished hypotheses (score = sum of log-probs / length ** length_penalty)")
    for h in s.finished:
        print(f"      {h.score:>8.3f}  {tok.decode(h.token_ids, skip_special_tokens=True)!r}")


def generate(args: argparse.Namespace) -> None:
    """Stream the generated text, then print the timings."""
    params = _params(args)
    lm, ids = _load(args)
    if params.num_beams > 1:
        out = lm.generate(ids, params)
        print(out.text)
    else:
        from .generate import generation_steps

        for s in generation_steps(lm, [ids], params):
            seq = s.sequences[0]
            print(seq.detok.release(final=seq.finished), end="", flush=True)
        print()
        out = seq.result()
    m = out.metrics
    print(f"\n[{out.finish_reason}] {m.n_prompt_tokens} prompt + {m.n_output_tokens} output tokens · "
          f"TTFT {m.ttft_s * 1e3:.0f} ms · {m.tokens_per_s:.1f} tokens/s · {m.e2e_s:.2f} s", file=sys.stderr)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="teachllm", description="Step through LLM text generation.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, func, help_text, temperature in (
            ("step", step, "tokenize, prefill and decode a prompt, printing every step", 0.0),
            ("generate", generate, "stream a continuation of a prompt", 0.7)):
        p = sub.add_parser(name, help=help_text)
        p.set_defaults(func=func)
        p.add_argument("prompt", nargs="?", default="The three primary colours are")
        p.add_argument("--chat", action="store_true", help="wrap the prompt in the model's chat template")
        p.add_argument("--model", default=None, help="checkpoint folder, .gguf file or Hub id (default: bundled)")
        p.add_argument("--device", default="auto", help="auto (CUDA if present), cpu or cuda")
        p.add_argument("--dtype", default=None, help="float32, bfloat16 or float16 (default: bf16 GPU, fp32 CPU)")
        p.add_argument("--weights", choices=("float", "gguf"), default="float",
                       help="float: de-quantised (default); gguf: the GGUF file's own 4/8-bit blocks (CPU)")
        g = p.add_argument_group("sampling (see teachllm.SamplingParams)")
        g.add_argument("--temperature", type=float, default=temperature, help=f"0 = greedy (default {temperature})")
        g.add_argument("--top-k", type=int, default=0)
        g.add_argument("--top-p", type=float, default=1.0)
        g.add_argument("--min-p", type=float, default=0.0)
        g.add_argument("--repetition-penalty", type=float, default=1.0)
        g.add_argument("--presence-penalty", type=float, default=0.0)
        g.add_argument("--frequency-penalty", type=float, default=0.0)
        g.add_argument("--no-repeat-ngram-size", type=int, default=0)
        g.add_argument("--max-tokens", type=int, default=16 if name == "step" else 128)
        g.add_argument("--min-tokens", type=int, default=0)
        g.add_argument("--stop", action="append", help="stop string (repeatable)")
        g.add_argument("--stop-token-id", type=int, action="append", help="stop token id (repeatable)")
        g.add_argument("--ignore-eos", action="store_true")
        g.add_argument("--include-stop-str", action="store_true", help="keep the stop string in the output")
        g.add_argument("--seed", type=int, default=None)
        g.add_argument("--num-beams", type=int, default=1)
        g.add_argument("--length-penalty", type=float, default=1.0)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    try:
        args.func(args)
    except (ValueError, FileNotFoundError) as error:
        sys.exit(f"error: {error}")


if __name__ == "__main__":
    main()
