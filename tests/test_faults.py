"""Faults: an interrupted conversion, damaged converted weights, an unwritable cache, a failing request.

Every test that damages a cache works in its own temporary TEACHLLM_CACHE; the shared cache
(~/.cache/teachllm) is only ever read and copied. Converting the bundled model takes about 25 s, so
the conversions are few: one after a conversion killed half-way (its result is reused by the other
tests as a good folder to copy), one after truncating the weights (the load-time check), one after
overwriting them in the middle (the check after a failed read). Zeroed weights, a missing or broken
config.json and damaged folders teachllm did not make are checked without converting.
"""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import teachllm as tl
from teachllm import loading
from teachllm.serving import ServingConfig, ServingEngine

PROBE = [1, 504, 3458, 314, 4649, 28, 30]  # a few ids to compare logits with the shared, untouched cache
ROOT = Path(__file__).resolve().parents[1]


def _work_folders(cache: Path) -> list[Path]:
    return sorted(p for p in cache.glob(f"{loading.BUNDLED_FOLDER}.*") if p.is_dir())


def _same_logits(a, b) -> bool:
    return torch.equal(a.forward(PROBE), b.forward(PROBE))


@pytest.fixture(scope="module")
def good_cache(tmp_path_factory):
    """A cache converted afresh after a first conversion was killed (SIGKILL) half-way: returns
    (cache folder, what was left before the recovering load, the recovering load's model)."""
    cache = tmp_path_factory.mktemp("killed-cache")
    env = {**os.environ, "TEACHLLM_CACHE": str(cache), "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    code = "import teachllm.loading as L; L.checkpoint_folder(progress=False)"
    child = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 180
    while not _work_folders(cache) and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(3)  # well inside the conversion (reading the GGUF takes about 20 s)
    child.send_signal(signal.SIGKILL)
    child.wait()
    left = _work_folders(cache)
    old_env = os.environ.get("TEACHLLM_CACHE")
    os.environ["TEACHLLM_CACHE"] = str(cache)
    try:
        recovered = tl.load(device="cpu", dtype="float32", progress=False)
    finally:
        if old_env is None:
            del os.environ["TEACHLLM_CACHE"]
        else:
            os.environ["TEACHLLM_CACHE"] = old_env
    return cache, left, recovered


@pytest.fixture
def cache_copy(good_cache, tmp_path, monkeypatch):
    """A copy of the good converted folder in a cache of its own (TEACHLLM_CACHE points there)."""
    cache = tmp_path / "cache"
    shutil.copytree(good_cache[0] / loading.BUNDLED_FOLDER, cache / loading.BUNDLED_FOLDER)
    monkeypatch.setenv("TEACHLLM_CACHE", str(cache))
    return cache / loading.BUNDLED_FOLDER


@pytest.fixture
def user_folder(good_cache, tmp_path):
    """A copy of the converted checkpoint outside any cache and without a manifest: a folder teachllm did not make."""
    folder = tmp_path / "my-checkpoint"
    shutil.copytree(good_cache[0] / loading.BUNDLED_FOLDER, folder)
    (folder / loading.MANIFEST).unlink()
    return folder


# ---- an interrupted conversion -----------------------------------------------------------------------
def test_killed_conversion_then_load_recovers(good_cache, lm):
    cache, left, recovered = good_cache
    assert left, "the conversion was killed before it made its temporary folder"
    assert all(".tmp-" in p.name for p in left)  # what the killed process left behind ...
    assert _work_folders(cache) == []  # ... is gone after the next load
    folder = cache / loading.BUNDLED_FOLDER
    assert loading.read_manifest(folder) is not None
    assert loading.verify(folder, full=True) is None
    assert _same_logits(recovered, lm)  # the same weights as the shared cache


def test_stale_temporary_folders_are_removed(tmp_path):
    out = tmp_path / loading.BUNDLED_FOLDER
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f"{out.name}.tmp-{dead.pid}-abc"  # its process is gone
    legacy = tmp_path / f"{out.name}.x1y2z3"  # an older teachllm's name, no process id, two hours old
    aside = tmp_path / f"{out.name}.damaged-{os.getpid()}-1"
    live = tmp_path / f"{out.name}.tmp-{os.getpid()}-def"  # a conversion still running (this process)
    for p in (stale, legacy, aside, live):
        p.mkdir()
    os.utime(legacy, (time.time() - 7200, time.time() - 7200))
    assert sorted(loading.remove_stale_temporaries(out)) == sorted([stale, legacy, aside])
    assert live.is_dir()


# ---- damaged converted weights ---------------------------------------------------------------------
def test_truncated_weights_are_converted_again(cache_copy, lm, capfd):
    weights = cache_copy / "model.safetensors"
    with open(weights, "r+b") as f:
        f.truncate(weights.stat().st_size // 2)
    assert "model.safetensors" in loading.verify(cache_copy, full=False)
    again = tl.load(device="cpu", dtype="float32", progress=False)
    notice = [line for line in capfd.readouterr().err.splitlines() if line.startswith("teachllm:")]
    assert len(notice) == 1 and "model.safetensors" in notice[0] and "converting" in notice[0]
    assert loading.verify(cache_copy, full=True) is None
    assert _same_logits(again, lm)
    assert _work_folders(cache_copy.parent) == []


def test_weights_overwritten_in_the_middle_are_found_and_converted_again(cache_copy, lm, capfd):
    weights = cache_copy / "model.safetensors"
    with open(weights, "r+b") as f:
        f.seek(weights.stat().st_size // 2)
        f.write(b"\xff" * 4096)  # 1,024 float32 NaNs inside a weight matrix; sizes and header are unchanged
    assert loading.verify(cache_copy, full=False) is None  # the cheap check cannot see it ...
    assert "SHA-256" in loading.verify(cache_copy, full=True)  # ... the hash can
    again = tl.load(device="cpu", dtype="float32", progress=False)  # reading finds NaN, then the hash decides
    notice = [line for line in capfd.readouterr().err.splitlines() if line.startswith("teachllm:")]
    assert len(notice) == 1 and "model.safetensors" in notice[0] and "SHA-256" in notice[0]
    assert loading.verify(cache_copy, full=True) is None
    assert _same_logits(again, lm)


def test_zeroed_weights_fail_the_cheap_check(cache_copy):
    weights = cache_copy / "model.safetensors"
    size = weights.stat().st_size
    with open(weights, "r+b") as f:
        f.write(bytes(1 << 20))  # the header (and the first MiB) zeroed, the size unchanged
    assert weights.stat().st_size == size
    problem = loading.verify(cache_copy, full=False)
    assert "model.safetensors has no valid safetensors header" in problem  # so a load converts again


@pytest.mark.parametrize("damage, expected", [
    ("missing", "config.json is missing"),
    ("not json", "config.json is not valid JSON"),
])
def test_a_damaged_config_fails_the_cheap_check(cache_copy, damage, expected):
    config = cache_copy / "config.json"
    if damage == "missing":
        config.unlink()
    else:
        size = config.stat().st_size
        config.write_text("{ not json".ljust(size))  # the same size: only reading it shows the damage
    assert expected in loading.verify(cache_copy, full=False)


@pytest.mark.parametrize("damage", ["truncate", "zero", "overwrite"])
def test_damaged_weights_in_a_folder_teachllm_did_not_make(user_folder, damage):
    weights = user_folder / "model.safetensors"
    size = weights.stat().st_size
    with open(weights, "r+b") as f:
        if damage == "truncate":
            f.truncate(size - 1000)
        elif damage == "zero":
            f.write(bytes(1 << 20))
        else:
            f.seek(size // 2)
            f.write(b"\xff" * 4096)
    with pytest.raises(tl.loading.DamagedCheckpointError) as error:
        tl.load(user_folder, device="cpu", dtype="float32", progress=False)
    message = str(error.value)
    assert str(weights) in message and "replace it with a good copy" in message


def test_a_config_that_is_not_json_is_named(user_folder):
    (user_folder / "config.json").write_text("model_type: llama")
    with pytest.raises(tl.loading.DamagedCheckpointError, match=r"config\.json is not valid JSON"):
        tl.load(user_folder, device="cpu", progress=False)


# ---- a cache folder that cannot be written -----------------------------------------------------------
def test_cache_under_a_regular_file(tmp_path, monkeypatch):
    """A cache path that cannot be made: its parent is a regular file (root can write anywhere else)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("TEACHLLM_CACHE", str(blocker / "cache"))
    with pytest.raises(tl.loading.CacheNotWritableError, match=r"cannot write .* set TEACHLLM_CACHE to a writable"):
        tl.load(device="cpu", progress=False)


def test_cache_folder_that_is_read_only(tmp_path, monkeypatch):
    """A real read-only folder. Root ignores permission bits, so the folder is made immutable (chattr +i),
    which binds root too; the test is skipped where the file system does not support it."""
    cache = tmp_path / "read-only"
    cache.mkdir()
    if os.geteuid() == 0:
        if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(cache)],
                                                            capture_output=True).returncode != 0:
            pytest.skip("running as root and chattr +i is not available here")
    else:
        cache.chmod(0o555)
    monkeypatch.setenv("TEACHLLM_CACHE", str(cache))
    try:
        with pytest.raises(tl.loading.CacheNotWritableError, match=rf"{cache}.*TEACHLLM_CACHE"):
            tl.load(device="cpu", progress=False)
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(cache)], check=True)
        else:
            cache.chmod(0o755)
    assert list(cache.iterdir()) == []


# ---- serving: a request that fails harms no other ----------------------------------------------------
PROMPTS = [f"Question {i}: name a colour, an animal and a number." for i in range(10)] + \
          [f"Write one short sentence about the number {i}." for i in range(10)]
PARAMS = tl.SamplingParams(temperature=0, max_tokens=6)


@pytest.fixture(scope="module")
def alone(lm):
    """What lm.generate gives each prompt on its own: the reference."""
    return [lm.generate(p, PARAMS) for p in PROMPTS]


def _poison_forward(engine, request_id):
    engine.requests[request_id].seq.prompt_ids[-1] = engine.lm.config.vocab_size + 7  # a bug past the checks


def _poison_sampling(engine, request_id):
    object.__setattr__(engine.requests[request_id].params, "logprobs", 10**6)  # past the checks, too


@pytest.mark.parametrize("poison", [_poison_forward, _poison_sampling], ids=["forward", "sampling"])
def test_one_poisoned_request_among_twenty(lm, alone, poison):
    engine = ServingEngine(lm, ServingConfig(policy="continuous", max_num_seqs=8, block_size=8, num_blocks=64))
    free_at_start = engine.block_manager.num_free_blocks
    ids = [engine.add_request(p, PARAMS) for p in PROMPTS[:10]]
    bad = engine.add_request(PROMPTS[0], PARAMS.replace())  # the 21st, with parameters of its own
    poison(engine, bad)
    ids += [engine.add_request(p, PARAMS) for p in PROMPTS[10:]]
    run = engine.drain(ids + [bad])
    outputs = run.outputs
    assert outputs[-1].finish_reason == "error" and engine.requests[bad].error
    assert engine.requests[bad].status.value == "failed"
    for out, ref in zip(outputs[:-1], alone, strict=True):
        assert (out.text, out.token_ids, out.finish_reason) == (ref.text, ref.token_ids, ref.finish_reason)
    assert engine.block_manager.num_free_blocks == free_at_start
    again = engine.run(PROMPTS[:2], PARAMS)  # the engine is not broken for the next run
    assert [o.text for o in again.outputs] == [r.text for r in alone[:2]]


def test_abort(lm, alone):
    engine = ServingEngine(lm, ServingConfig(policy="continuous", max_num_seqs=2, block_size=8, num_blocks=64))
    free_at_start = engine.block_manager.num_free_blocks
    ids = [engine.add_request(p, PARAMS) for p in PROMPTS[:4]]
    engine.step()  # requests 0 and 1 run, 2 and 3 wait
    assert engine.abort(ids[1]) is True  # running
    assert engine.abort(ids[3]) is True  # waiting
    run = engine.drain(ids)
    assert [o.finish_reason for o in (run.outputs[1], run.outputs[3])] == ["abort", "abort"]
    for i in (0, 2):
        assert run.outputs[i].text == alone[i].text
    assert engine.abort(ids[0]) is False  # already finished
    assert engine.block_manager.num_free_blocks == free_at_start
    with pytest.raises(ValueError, match=r"no request 99; request ids .* 0 \.\. 3"):
        engine.abort(99)
