"""The terminal demo (`teachllm step`, run by `make demo`)."""

import re

from teachllm.cli import main


def test_step_prints_every_stage(lm, greedy, capsys):
    prompt = "The capital of France is"
    main(["step", prompt, "--max-tokens", "5", "--device", "cpu", "--dtype", "float32"])
    out = capsys.readouterr().out
    ids = lm.tokenizer.encode(prompt)
    assert f"1. Tokenize: {len(ids)} tokens" in out
    for token_id in ids:
        assert re.search(rf"\]\s+{token_id}\s", out)
    assert f"KV cache holds {len(ids)}/{len(ids) + 5} slots" in out
    rows = re.findall(r"^\s+(\d+)\s+(prefill|decode)\s", out, flags=re.M)
    assert [phase for _, phase in rows] == ["prefill"] + ["decode"] * (len(rows) - 1)
    expected = greedy(lm, ids, 5)
    assert len(rows) == len(expected)
    assert repr(lm.tokenizer.decode(ids + expected, skip_special_tokens=True)) in out
    for label in ("TTFT", "time per output token", "tokens/s"):
        assert label in out
