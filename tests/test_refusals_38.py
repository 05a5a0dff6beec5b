"""Still open from the earlier hostile-input suites (issue 38, part 3): each case once raised a raw error, or did
something wrong in silence, and now gets a clear error (naming the file or argument, the value and the fix) or
is handled correctly.

- a checkpoint's config.json that is a JSON array or says 0 attention heads, a generation_config.json that is
  not JSON, an end-of-sequence id outside the vocabulary (IndexError at generation) or negative (-1 masked the
  vocabulary's last token);
- beam search where every id is a stop id (torch.topk: "selected index k out of range");
- a serving pool too large for memory (the allocator's error), numpy request ids, prompts from a generator;
- `teachllm step --model` on a folder without tokenizer files (the advice was to pass token ids, which the
  command cannot take).

Most cases run on a tiny random model or on a checkpoint folder that never gets as far as its weights.
"""

import json

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

import teachllm as tl
from teachllm import sampling
from teachllm.checkpoints.loading import DamagedCheckpointError, checkpoint_folder
from teachllm.cli import main as cli
from teachllm.model import Transformer
from teachllm.serving import ServingConfig, ServingEngine

SP = tl.SamplingParams
V = 16  # the tiny model's vocabulary
TINY = dict(vocab_size=V, hidden_size=32, intermediate_size=48, n_layers=2, n_heads=4, n_kv_heads=2, head_dim=16,
            max_position_embeddings=64)
GREEDY = SP(temperature=0, max_tokens=4)


def assert_names(error, *facts):
    """The message (an exception's, or the line the CLI exits with) holds every fact."""
    message = str(error.code) if isinstance(error, SystemExit) else str(error)
    missing = [fact for fact in facts if fact not in message]
    assert not missing, f"the message does not name {missing}: {message}"


@pytest.fixture(scope="module")
def tiny():
    """A tiny random decoder without a tokenizer (prompts are token ids)."""
    torch.manual_seed(0)
    model = Transformer(tl.ModelConfig(**TINY)).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" not in name:
                p.normal_(0, 0.3)  # large enough that greedy choices differ from step to step
    return tl.LanguageModel(model, None, "tiny")


@pytest.fixture
def folder(tmp_path):
    """A copy of the bundled checkpoint's JSON files (the weights linked, not copied); `folder(**files)` replaces
    files by name, a dict written as JSON, a str as it is."""
    source = checkpoint_folder(progress=False)

    def make(**files):
        path = tmp_path / "checkpoint"
        path.mkdir()
        for name in ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"):
            (path / name).write_bytes((source / name).read_bytes())
        (path / "model.safetensors").symlink_to(source / "model.safetensors")
        for name, content in files.items():
            name = name.replace("_json", ".json")
            (path / name).write_text(content if isinstance(content, str) else json.dumps(content))
        return path

    make.config = json.loads((source / "config.json").read_text())
    return make


# ---- 1. a malformed config.json or generation_config.json ------------------------------------------------------
def test_a_config_json_that_is_a_list_is_named_with_the_fix(folder):
    """The finding: tl.load raised AttributeError: 'list' object has no attribute 'get'."""
    path = folder(config_json=[folder.config])
    with pytest.raises(DamagedCheckpointError) as raised:
        tl.load(path)
    assert_names(raised.value, str(path / "config.json"), "array", "JSON object", "restore")
    with pytest.raises(ValueError) as raised:  # read directly, as the benchmark does
        tl.ModelConfig.from_pretrained(path)
    assert_names(raised.value, str(path / "config.json"), "array", "restore")


@pytest.mark.parametrize(("key", "value"), [("num_attention_heads", 0), ("num_key_value_heads", 0),
                                            ("hidden_size", -576), ("num_hidden_layers", 2.5)])
def test_a_config_json_with_a_size_that_is_not_positive_is_named_with_the_fix(folder, key, value):
    """The finding: 0 attention heads ended in ZeroDivisionError: integer modulo by zero, inside transformers."""
    path = folder(config_json={**folder.config, key: value})
    with pytest.raises(ValueError) as raised:
        tl.load(path)
    assert_names(raised.value, str(path / "config.json"), f"{key}={value}", "≥ 1", "correct")


def test_a_generation_config_that_is_not_json_is_named_with_the_fix(folder):
    """The finding: tl.load raised json's own JSONDecodeError, naming no file."""
    path = folder(generation_config_json="{oops")
    with pytest.raises(DamagedCheckpointError) as raised:
        tl.load(path)
    assert_names(raised.value, str(path / "generation_config.json"), "not valid JSON", "restore")
    with pytest.raises(ValueError) as raised:
        tl.ModelConfig.from_pretrained(path)
    assert_names(raised.value, str(path / "generation_config.json"), "not valid JSON", "restore")


# ---- 2 and 3. end-of-sequence ids outside the vocabulary ---------------------------------------------------
def test_an_eos_id_outside_the_vocabulary_is_refused_where_it_is_read(folder):
    """The finding: generation_config.json's eos_token_id of 10**9 loaded, then generation with min_tokens raised
    IndexError: index 1000000000 is out of bounds."""
    path = folder(generation_config_json={"eos_token_id": 10**9})
    with pytest.raises(ValueError) as raised:
        tl.load(path)
    assert_names(raised.value, str(path / "generation_config.json"), "eos_token_id", "1000000000", "0 .. 49151",
                 "correct")
    path = path.rename(path.with_name("second"))
    (path / "generation_config.json").write_text(json.dumps({"eos_token_id": [2, -1]}))  # a negative one too
    with pytest.raises(ValueError) as raised:
        tl.ModelConfig.from_pretrained(path)
    assert_names(raised.value, "generation_config.json", "eos_token_id", "-1", "0 .. 49151")


@pytest.mark.parametrize("eos", [10**9, -1, V])
def test_a_model_config_refuses_an_eos_id_outside_the_vocabulary(eos):
    with pytest.raises(ValueError) as raised:
        tl.ModelConfig(**TINY, eos_token_ids=(2, eos))
    assert_names(raised.value, "eos_token_ids", str(eos), f"0 .. {V - 1}")


@pytest.mark.parametrize("call", [sampling.process_logits, sampling.apply_penalties])
@pytest.mark.parametrize("eos", [10**9, -1, V, 2.0])
def test_the_sampling_pipeline_refuses_eos_ids_outside_the_vocabulary(call, eos):
    """The finding: eos_token_ids=[10**9] raised IndexError; [-1] silently masked the last token of the
    vocabulary (negative indexing) while min_tokens held."""
    x = torch.zeros(1, V)
    with pytest.raises(ValueError) as raised:
        call(x, SP(min_tokens=2, temperature=0), [[1, 2]], [[]], eos_token_ids=[3, eos])
    assert_names(raised.value, "eos_token_ids", repr(eos), f"0 .. {V - 1}")


def test_min_tokens_masks_exactly_the_eos_and_stop_ids():
    """The reference for what min_tokens does with good ids: those ids get -inf until min_tokens tokens exist."""
    x = torch.randn(2, V, generator=torch.Generator().manual_seed(0))
    params = SP(min_tokens=2, temperature=0, stop_token_ids=[5])
    got = sampling.process_logits(x, params, [[1], [1]], [[4], [4, 6]], eos_token_ids=(V - 1,))
    want = x.clone()
    want[0, [5, V - 1]] = float("-inf")  # row 0 has 1 token of 2: masked; row 1 has 2: untouched
    torch.testing.assert_close(got, want, rtol=0, atol=0)


# ---- 4. beam search where every id stops --------------------------------------------------------------------
def test_beam_search_where_every_id_is_a_stop_id_ends_after_one_token(tiny):
    """The finding: torch.topk raised "selected index k out of range" (it asked for (1 + V) · k candidates of k · V).
    Every continuation ends, so the best hypothesis is the single most likely token: greedy's first token."""
    prompt = [1, 2, 3]
    every = list(range(V))
    greedy = tiny.generate(prompt, SP(temperature=0, max_tokens=4, stop_token_ids=every))
    assert len(greedy.token_ids) == 1 and greedy.finish_reason == "stop"
    for k in (2, 3):
        out = tiny.generate(prompt, SP(num_beams=k, max_tokens=4, stop_token_ids=every))
        assert (out.token_ids, out.finish_reason, out.stop_reason) == (greedy.token_ids, "stop", greedy.token_ids[0])


# ---- 5 to 7. the serving engine -----------------------------------------------------------------------------
def test_a_pool_too_large_for_memory_is_refused_with_the_memory_it_needs(tiny):
    """The finding: ServingConfig(num_blocks=10**9) reached the allocator ("can't allocate memory")."""
    with pytest.raises(ValueError) as raised:
        ServingEngine(tiny, ServingConfig(num_blocks=10**9, block_size=16))
    needed = 2 * TINY["n_layers"] * TINY["n_kv_heads"] * TINY["head_dim"] * 10**9 * 16 * 4  # K and V, float32
    assert_names(raised.value, "ServingConfig.num_blocks", "1000000000", f"{needed / 2**30:,.1f} GiB",
                 "lower ServingConfig.num_blocks")


def test_a_numpy_integer_is_a_request_id(tiny):
    """The finding: abort(np.int64(0)) was refused ("there is no request 0") though 0 is what add_request returned."""
    engine = ServingEngine(tiny, ServingConfig(block_size=4, num_blocks=8, max_num_seqs=2))
    first, second = engine.add_request([1, 2, 3], GREEDY), engine.add_request([4, 5], GREEDY)
    assert engine.abort(np.int64(first)) is True
    run = engine.drain([np.int32(first), np.int64(second)])
    assert [o.finish_reason for o in run.outputs] == ["abort", "length"]
    assert run.outputs[1].token_ids == tiny.generate([4, 5], GREEDY).token_ids
    assert engine.block_manager.num_free_blocks == 8
    with pytest.raises(ValueError, match=r"no request \S*True"):
        engine.abort(np.True_)


def test_run_takes_prompts_from_a_generator(tiny):
    """The finding: run(<generator>) said "run() needs at least one prompt"."""
    prompts = [[1, 2, 3], [4, 5], [6, 7, 8, 9]]
    engine = ServingEngine(tiny, ServingConfig(block_size=4, num_blocks=16, max_num_seqs=2))
    run = engine.run((p for p in prompts), GREEDY)
    assert [o.token_ids for o in run.outputs] == [tiny.generate(p, GREEDY).token_ids for p in prompts]
    assert engine.run(map(list, [(1, 2, 3)]), GREEDY).outputs[0].token_ids == run.outputs[0].token_ids
    with pytest.raises(ValueError, match="at least one prompt"):
        engine.run(iter([]), GREEDY)


# ---- 8. the command line without a tokenizer ------------------------------------------------------------------
def test_the_cli_on_a_checkpoint_without_tokenizer_gives_advice_it_can_follow(tiny, tmp_path):
    """The finding: `teachllm step --model <folder>` said "pass token ids instead of text", which the command
    cannot take. The folder here holds the tiny model's weights and config.json, and no tokenizer files."""
    path = tmp_path / "no-tokenizer"
    path.mkdir()
    c = tiny.config
    (path / "config.json").write_text(json.dumps({
        "model_type": "llama", "vocab_size": c.vocab_size, "hidden_size": c.hidden_size,
        "intermediate_size": c.intermediate_size, "num_hidden_layers": c.n_layers, "num_attention_heads": c.n_heads,
        "num_key_value_heads": c.n_kv_heads, "head_dim": c.head_dim,
        "max_position_embeddings": c.max_position_embeddings, "rope_theta": c.rope_theta,
        "rms_norm_eps": c.rms_norm_eps, "tie_word_embeddings": False}))
    save_file({name: t.contiguous() for name, t in tiny.model.state_dict().items()}, str(path / "model.safetensors"))
    assert tl.load(path, device="cpu").generate([1, 2, 3], GREEDY).token_ids == tiny.generate([1, 2, 3],
                                                                                              GREEDY).token_ids
    for command in ("step", "generate"):
        with pytest.raises(SystemExit) as raised:
            cli([command, "hello", "--model", str(path), "--device", "cpu"])
        assert_names(raised.value, f"--model {path}", "tokenizer.json", "copy", "leave out --model")
        assert "token ids" not in str(raised.value.code) and "\n" not in str(raised.value.code)
