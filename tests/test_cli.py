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


def test_every_sampling_field_is_a_flag():
    import dataclasses

    from teachllm.cli import _params, _parser

    parser = _parser()
    args = parser.parse_args(["generate", "--logprobs", "3", "--top-k", "5", "--stop", "a", "--stop", "b",
                              "--stop-token-id", "7", "--stop-token-ids", "8", "--ignore-eos", "--include-stop-str",
                              "--seed", "11", "--min-tokens", "2", "--presence-penalty", "0.5"])
    options = {opt for action in parser._subparsers._group_actions[0].choices["generate"]._actions
               for opt in action.option_strings}
    for f in dataclasses.fields(SamplingParams):
        assert "--" + f.name.replace("_", "-") in options, f.name
    assert _params(args) == SamplingParams(temperature=0.7, max_tokens=128, logprobs=3, top_k=5, stop=["a", "b"],
                                           stop_token_ids=[7, 8], ignore_eos=True, include_stop_str_in_output=True,
                                           seed=11, min_tokens=2, presence_penalty=0.5)
    beams = _params(parser.parse_args(["generate", "--num-beams", "3"]))  # no sampling temperature with beams
    assert beams.num_beams == 3 and beams.temperature == 1.0


@pytest.mark.parametrize("argv, message", [
    (["--top-p", "2"], r"top_p=2.0 is out of range"),
    (["--device", "tpu"], r"device='tpu' is not a device"),
    (["--dtype", "float8"], r"dtype 'float8' is not one of"),
    (["--model", "./no/such/folder"], r"no such folder"),
    (["--logprobs", "1000000"], r"logprobs=1000000 is larger than the model's vocabulary"),
    (["--stop-token-id", "999999"], r"stop_token_ids holds 999999, outside the model's vocabulary"),
    (["--num-beams", "3", "--temperature", "0.7"], r"beam search .* does not take temperature"),
    (["\udcff\udcfe not utf-8"], r"not valid UTF-8"),
])
def test_expected_failures_print_one_line(argv, message):
    with pytest.raises(SystemExit) as exit_:
        main(["step", *argv, "--max-tokens", "2"])
    text = str(exit_.value.code)
    assert re.search(message, text) and text.startswith("error: ") and "\n" not in text


def test_a_damaged_checkpoint_and_an_unwritable_cache_print_one_line(tmp_path, monkeypatch):
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "config.json").write_text("{not json")
    with pytest.raises(SystemExit, match=r"^error: .*config\.json is not valid JSON[^\n]*$"):
        main(["step", "--model", str(folder)])
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("TEACHLLM_CACHE", str(tmp_path / "file" / "cache"))
    with pytest.raises(SystemExit, match=r"^error: teachllm cannot write .*TEACHLLM_CACHE[^\n]*$"):
        main(["step"])


def test_the_command_exits_non_zero_without_a_traceback():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "teachllm", "step", "--device", "tpu"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode != 0
    assert done.stderr.strip().splitlines() == [
        "error: device='tpu' is not a device torch knows; use 'auto' (the default), 'cpu', 'cuda', 'cuda:N' or 'mps'"]


def test_logprobs_are_printed(lm, capsys):
    """The finding: --logprobs was accepted and ignored. `step` prints each step's top log-probabilities
    (the model's own, before the sampling rules) and `generate` lists them after the text."""
    prompt = "The capital of France is"
    main(["step", prompt, "--max-tokens", "2", "--logprobs", "3", *CPU])
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if "log-probabilities (before the rules)" in line]
    assert len(lines) == 2
    logp = lm.forward(lm.tokenizer.encode(prompt))[0, -1].log_softmax(-1)
    best = logp.topk(3)
    expected = "  ".join(f"{lm.tokenizer.token_text(int(i))!r} {float(v):.2f}" for v, i in zip(*best, strict=True))
    assert lines[0].endswith(expected)
    main(["generate", prompt, "--max-tokens", "2", "--temperature", "0", "--logprobs", "1", *CPU])
    err = capsys.readouterr().err
    assert "log-probabilities at each step" in err and f"{float(best.values[0]):.3f}" in err


@pytest.mark.parametrize(("value", "traceback"), [("0", False), ("", False), ("no", False), ("1", True),
                                                  ("true", True)])
def test_teachllm_debug_is_an_on_off_switch(monkeypatch, value, traceback):
    """The finding: TEACHLLM_DEBUG=0 still printed tracebacks (any non-empty value meant on)."""
    monkeypatch.setenv("TEACHLLM_DEBUG", value)
    if traceback:
        with pytest.raises(ValueError, match="top_p"):
            main(["step", "--top-p", "2"])
    else:
        with pytest.raises(SystemExit) as stop:
            main(["step", "--top-p", "2"])
        assert str(stop.value.code).startswith("error: ") and "top_p" in str(stop.value.code)
