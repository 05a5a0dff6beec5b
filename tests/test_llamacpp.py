"""teachllm.fastpath.llamacpp: llama.cpp's speed is read from `llama-bench`'s JSON when a binary is there, and the bench
goes on with a note when none is (llama.cpp is never a dependency)."""

import json
import stat

from teachllm.fastpath import llamacpp


def fake_binary(tmp_path, payload: str, code: int = 0):
    path = tmp_path / "llama-bench"
    path.write_text(f"#!/bin/sh\necho \"$@\" > {tmp_path / 'args'}\ncat <<'JSON'\n{payload}\nJSON\nexit {code}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def test_reads_llama_bench_json(tmp_path, monkeypatch):
    rows = [{"avg_ts": 97.7, "n_gen": 64, "n_threads": 1}]
    monkeypatch.setenv("TEACHLLM_LLAMA_BENCH", str(fake_binary(tmp_path, json.dumps(rows))))
    got = llamacpp.decode_speed(tmp_path / "model.gguf", threads=1, n_tokens=64)
    assert got["tokens_per_s"] == 97.7 and "llama-bench" in got["how"]
    args = (tmp_path / "args").read_text().split()
    assert args[args.index("-t") + 1] == "1" and args[args.index("-n") + 1] == "64" and "-o" in args


def test_a_failing_binary_is_a_note_not_a_crash(tmp_path, monkeypatch):
    monkeypatch.setenv("TEACHLLM_LLAMA_BENCH", str(fake_binary(tmp_path, "not json", code=1)))
    got = llamacpp.decode_speed(tmp_path / "model.gguf", threads=1)
    assert got["tokens_per_s"] is None and "failed" in got["how"]


def test_without_llama_cpp_the_bench_says_so(monkeypatch):
    monkeypatch.delenv("TEACHLLM_LLAMA_BENCH", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setitem(__import__("sys").modules, "llama_cpp", None)  # not importable
    got = llamacpp.decode_speed("model.gguf", threads=1)
    assert got["tokens_per_s"] is None and "skipped" in got["how"]
