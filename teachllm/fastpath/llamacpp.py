"""llama.cpp as the outside yardstick: its decode speed on the same GGUF file, when it is installed.

llama.cpp is what a practitioner runs a GGUF file with on a laptop: C and hand-written SIMD for every CPU,
its own 4-bit dot products (the activations rounded to 8 bits per block of 32, multiplied as integers).
teachllm is never built on it; `python -m teachllm.bench --weights-only` only asks it how fast it decodes
the same file on the same threads, and prints teachllm's speed as a share of it.

Where it comes from, in order: $TEACHLLM_LLAMA_BENCH (the path of a `llama-bench` binary), `llama-bench` on
the PATH, or the `llama_cpp` Python package (llama-cpp-python). Without any of them the bench says so and
goes on. `llama-bench` is built from llama.cpp's sources, e.g. those the PyPI sdist of llama-cpp-python
carries in vendor/llama.cpp:

    cmake -B build -DGGML_NATIVE=ON -DLLAMA_CURL=OFF && cmake --build build --target llama-bench
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path


def find_binary() -> str | None:
    return os.environ.get("TEACHLLM_LLAMA_BENCH") or shutil.which("llama-bench")


def decode_speed(gguf: Path, threads: int, n_tokens: int = 64, reps: int = 3) -> dict:
    """llama.cpp's decode tokens/s on `gguf` (batch 1, `n_tokens` generated, `threads` threads):
    {"tokens_per_s": float, "how": str}, or {"tokens_per_s": None, "how": why not}."""
    binary = find_binary()
    if binary:
        command = [binary, "-m", str(gguf), "-t", str(threads), "-p", "0", "-n", str(n_tokens), "-r", str(reps),
                   "-o", "json"]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=True)
            rows = json.loads(done.stdout)
            return {"tokens_per_s": float(rows[0]["avg_ts"]), "how": f"llama-bench ({binary}), tg{n_tokens}"}
        except (OSError, subprocess.SubprocessError, ValueError, KeyError, IndexError) as failure:
            return {"tokens_per_s": None, "how": f"llama-bench failed: {str(failure).splitlines()[0][:200]}"}
    try:
        from llama_cpp import Llama  # optional: only when llama-cpp-python is installed
    except ImportError:
        return {"tokens_per_s": None,
                "how": "llama.cpp not found (set TEACHLLM_LLAMA_BENCH to a llama-bench binary, or pip install "
                       "llama-cpp-python); skipped"}
    llm = Llama(model_path=str(gguf), n_threads=threads, n_ctx=256, verbose=False)
    tokens = llm.tokenize(b"The history of the printing press begins")
    speeds = []
    for _ in range(reps):
        llm.reset()
        llm.eval(tokens)
        start = time.perf_counter()
        for _ in range(n_tokens):
            llm.eval([llm.sample(temp=0.0)])
        speeds.append(n_tokens / (time.perf_counter() - start))
    return {"tokens_per_s": statistics.median(speeds), "how": f"llama-cpp-python, {n_tokens} tokens, median of {reps}"}
