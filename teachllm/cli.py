"""The `teachllm` command line.

    teachllm step "The three primary colours are"            # watch generation step by step (make demo)
    teachllm step "Name a fruit." --chat --temperature 0.8 --top-p 0.9 --seed 0
    teachllm generate "Write a haiku about the sea." --chat  # stream the text, then the timings
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import re
import sys

import torch

from .beam import beam_search_steps
from .generate import generation_steps
from .inputs import env_flag
from .lm import load
from .sampling import SamplingParams


def _mib(n_bytes: int) -> str:
    return f"{n_bytes / 2**20:.2f} MiB"


def _sampling_fields() -> list[tuple[dataclasses.Field, str]]:
    """SamplingParams' fields with the comment written beside each in sampling.py (the flags' help)."""
    comments = dict(re.findall(r"^    (\w+): [^=]+=.*?#\s*(.+)$", inspect.getsource(SamplingParams), flags=re.M))
    return [(f, comments.get(f.name, "")) for f in dataclasses.fields(SamplingParams)]


FLAG_ALIASES = {"stop_token_ids": ["--stop-token-id"], "include_stop_str_in_output": ["--include-stop-str"]}
COMMAND_DEFAULTS = {"step": {"temperature": 0.0, "max_tokens": 16}, "generate": {"temperature": 0.7, "max_tokens": 128}}


def _add_sampling_flags(group, command: str) -> None:
    """One flag per SamplingParams field: --top-k for top_k, and so on; lists repeat (--stop a --stop b)."""
    for f, comment in _sampling_fields():
        names = ["--" + f.name.replace("_", "-"), *FLAG_ALIASES.get(f.name, [])]
        help_text = comment.replace("%", "%%")
        if f.name == "temperature":  # default: the command's, or 1 (off) with beam search
            default = COMMAND_DEFAULTS[command]["temperature"]
            group.add_argument(*names, type=float, default=None,
                               help=f"{help_text} (default {default}; 1 with --num-beams > 1)")
            continue
        default = COMMAND_DEFAULTS[command].get(f.name, f.default)
        if f.default is dataclasses.MISSING:  # a list: the flag repeats
            group.add_argument(*names, type=int if "int" in str(f.type) else str, action="append", default=None,
                               help=f"{help_text} (repeatable)")
        elif isinstance(f.default, bool):
            group.add_argument(*names, action="store_true", help=help_text)
        else:
            kind = int if (f.default is None or isinstance(f.default, int)) else float
            group.add_argument(*names, type=kind, default=default, help=f"{help_text} (default {default})")


def _params(args: argparse.Namespace):
    values = {f.name: getattr(args, f.name) for f, _ in _sampling_fields()}
    if values["temperature"] is None:
        values["temperature"] = 1.0 if values["num_beams"] > 1 else COMMAND_DEFAULTS[args.command]["temperature"]
    for name in ("stop", "stop_token_ids"):
        values[name] = values[name] or []
    return SamplingParams(**values)


def _load(args: argparse.Namespace):
    prompt = args.prompt
    try:
        prompt.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("the prompt is not valid UTF-8 text; check the terminal's encoding") from None
    lm = load(args.model, device=args.device, dtype=args.dtype, weights=args.weights)
    if not lm.has_tokenizer:  # the command takes text only: lm.tokenizer's advice (pass token ids) does not apply
        raise ValueError(f"--model {args.model}: this checkpoint has no tokenizer files (tokenizer.json or "
                         "tokenizer.model), and the teachllm command turns text into tokens; copy the tokenizer "
                         "files that came with these weights into the folder, or leave out --model for the bundled "
                         "model")
    if args.chat:
        prompt = lm.tokenizer.apply_chat_template([{"role": "user", "content": prompt}])
    ids = lm.tokenizer.encode(prompt)
    if not ids:
        raise ValueError("the prompt is empty; give some text to continue")
    return lm, ids


def _logprobs(tok, entry: dict[int, float]) -> str:
    """One step's log-probabilities, most likely first: "'Paris' -0.21  ' the' -2.30"."""
    return "  ".join(f"{tok.token_text(i)!r} {lp:.2f}" for i, lp in sorted(entry.items(), key=lambda e: -e[1]))


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
        if params.logprobs is not None:
            print(f"         log-probabilities (before the rules): {_logprobs(tok, s.sequences[0].logprobs[-1])}")
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
        for s in generation_steps(lm, [ids], params):
            seq = s.sequences[0]
            print(seq.detok.release(final=seq.finished), end="", flush=True)
        print()
        out = seq.result()
    if params.logprobs is not None:
        print("\nlog-probabilities at each step (before the rules), the chosen token first:", file=sys.stderr)
        for token, entry in zip(out.token_ids, out.logprobs, strict=True):
            print(f"  {lm.tokenizer.token_text(token)!r} {entry[token]:.3f} · {_logprobs(lm.tokenizer, entry)}",
                  file=sys.stderr)
    m = out.metrics
    print(f"\n[{out.finish_reason}] {m.n_prompt_tokens} prompt + {m.n_output_tokens} output tokens · "
          f"TTFT {m.ttft_s * 1e3:.0f} ms · {m.tokens_per_s:.1f} tokens/s · {m.e2e_s:.2f} s", file=sys.stderr)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="teachllm", description="Step through LLM text generation.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, func, help_text in (
            ("step", step, "tokenize, prefill and decode a prompt, printing every step"),
            ("generate", generate, "stream a continuation of a prompt")):
        p = sub.add_parser(name, help=help_text)
        p.set_defaults(func=func)
        p.add_argument("prompt", nargs="?", default="The three primary colours are")
        p.add_argument("--chat", action="store_true", help="wrap the prompt in the model's chat template")
        p.add_argument("--model", default=None, help="checkpoint folder, .gguf file or Hub id (default: bundled)")
        p.add_argument("--device", default="auto",
                       help="auto (TEACHLLM_DEVICE if set, else CUDA if present), cpu or cuda")
        p.add_argument("--dtype", default=None,
                       help="float32, bfloat16 or float16 (default: TEACHLLM_DTYPE if set, else bf16 GPU, fp32 CPU)")
        p.add_argument("--weights", choices=("float", "gguf"), default="float",
                       help="float: de-quantised (default); gguf: the GGUF file's own 4/8-bit blocks (CPU)")
        _add_sampling_flags(p.add_argument_group("sampling (every field of teachllm.SamplingParams)"), name)
    return parser


# What a user can cause: bad values, missing or damaged files, an unwritable cache, a device that is not
# there. Each ends the program with one line (TEACHLLM_DEBUG=1 shows the traceback); anything else is a bug.
EXPECTED_ERRORS = (ValueError, TypeError, OSError, RuntimeError, ImportError)


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    try:
        args.func(args)
    except KeyboardInterrupt:
        sys.exit("interrupted")
    except EXPECTED_ERRORS as error:
        if env_flag("TEACHLLM_DEBUG"):  # 1, true, yes or on; 0, false, no, off or nothing: one line
            raise
        lines = str(error).strip().splitlines()
        sys.exit(f"error: {lines[0] if lines else type(error).__name__}")


if __name__ == "__main__":
    main()
