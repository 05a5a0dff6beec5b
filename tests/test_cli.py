"""The terminal demo (`teachllm step`, run by `make demo`) and `teachllm generate`."""

import re

import pytest

from teachllm import SamplingParams
from teachllm.cli import main

CPU = ["--device", "cpu", "--dtype", "float32"]


def test_step_prints_every_stage(lm, greedy, capsys):
    prompt = "The capital of France is"
    main(["step", prompt, "--max-tokens", "5", *CPU])
    out = capsys.readouterr().out
    ids = lm.tokenizer.encode(prompt)
    assert f"1. Tokenize: {len(ids)} tokens" in out
    for token_id in ids:
        assert re.search(rf"\]\s+{token_id}\s", out)
    assert f"KV cache holds {len(ids)}/{len(ids) + 5} slots" in out
    rows = re.findall(r"^\s+(\d+)\s+(prefill|decode)\s+('.*?')\s+([\d.]+)\s", out, flags=re.M)
    assert [phase for _, phase, _, _ in rows] == ["prefill"] + ["decode"] * (len(rows) - 1)
    expected = greedy(lm, ids, 5)
    assert [tok for _, _, tok, _ in rows] == [repr(lm.tokenizer.token_text(t)) for t in expected]
    first_p = float(rows[0][3])
    true_p = lm.forward(ids)[0, -1].softmax(-1).max().item()
    assert abs(first_p - true_p) < 1e-3  # the printed probability is the model's
    assert repr(lm.tokenizer.decode(expected, skip_special_tokens=True)) in out
    for label in ("TTFT", "time per output token", "tokens/s"):
        assert label in out


def test_step_with_chat_and_sampling_flags(lm, capsys):
    question = "Name a fruit."
    main(["step", question, "--chat", "--temperature", "0.8", "--top-p", "0.9", "--seed", "3",
          "--max-tokens", "6", "--repetition-penalty", "1.1", *CPU])
    out = capsys.readouterr().out
    prompt = lm.tokenizer.apply_chat_template([{"role": "user", "content": question}])
    assert f"1. Tokenize: {len(lm.tokenizer.encode(prompt))} tokens" in out
    assert "temperature=0.8, top_p=0.9, seed=3" in out
    want = lm.generate(prompt, SamplingParams(temperature=0.8, top_p=0.9, seed=3, max_tokens=6,
                                              repetition_penalty=1.1))
    assert f"4. Detokenize: {want.text!r}" in out  # the same seed gives the same text as the API


def test_generate_streams_the_text(lm, capsys):
    main(["generate", "The three primary colours are", "--temperature", "0", "--max-tokens", "8", *CPU])
    captured = capsys.readouterr()
    want = lm.generate("The three primary colours are", SamplingParams(temperature=0, max_tokens=8))
    assert captured.out.startswith(want.text)
    assert "tokens/s" in captured.err


def test_beam_search_view(capsys):
    main(["step", "--num-beams", "2", "--max-tokens", "3", *CPU])
    out = capsys.readouterr().out
    assert "beam search, 2 beams" in out and "Finished hypotheses" in out


def test_bad_flag_values_exit_with_the_reason(capsys):
    with pytest.raises(SystemExit, match=r"top_p=2.0 is out of range: must be in \(0, 1\]"):
        main(["step", "--top-p", "2", *CPU])
