"""Faults: an interrupted conversion, damaged converted weights, an unwritable cache, a failing request.

Every test that damages a cache works in its own temporary TEACHLLM_CACHE; the shared cache
(~/.cache/teachllm) is only ever read and copied. Converting the bundled model takes about 10 s, so
the real conversions are two: one after a conversion killed half-way (its result is reused by the other
tests as a good folder to copy), and one in a fresh process whose manifest names another source. The
tests of what a damaged folder sets off (truncated weights: the load-time check; weights overwritten in
the middle: the check after a failed read; a user's file beside them) run the real detection, notice,
discarding and loading, with `converted_by_copy` standing in for the conversion itself: it writes what a
conversion writes (the same files, into a work folder renamed into place) by copying the good folder, and
counts its calls. Zeroed weights, a missing or broken config.json and damaged folders teachllm did not make
are checked without converting.
"""

import json
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
from teachllm.checkpoints import convert
from teachllm.checkpoints.manifest import write_manifest
from teachllm.serving import ServingConfig, ServingEngine

PROBE = [1, 504, 3458, 314, 4649, 28, 30]  # a few ids to compare logits with the shared, untouched cache
ROOT = Path(__file__).resolve().parents[1]


def _work_folders(cache: Path) -> list[Path]:
    return sorted(p for p in cache.glob(f"{convert.BUNDLED_FOLDER}.*") if p.is_dir())


def _same_logits(a, b) -> bool:
    """Whether two models (or a model and logits it is to give) give the same logits on PROBE."""
    a, b = (x if isinstance(x, torch.Tensor) else x.forward(PROBE) for x in (a, b))
    return torch.equal(a, b)


@pytest.fixture(scope="module")
def good_cache(tmp_path_factory):
    """A cache converted afresh after a first conversion was killed (SIGKILL) half-way: returns
    (cache folder, what was left before the recovering load, the recovering load's logits on PROBE). The module
    keeps the logits, not the model: another 540 MB held through every test here would raise the run's peak."""
    cache = tmp_path_factory.mktemp("killed-cache")
    env = {**os.environ, "TEACHLLM_CACHE": str(cache), "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    code = "import teachllm.checkpoints.loading as L; L.checkpoint_folder(progress=False)"
    child = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    # Kill it at a known point: the weights are being written into the work folder. What is left to do then
    # (config, tokenizer, hashing 540 MB for the manifest, the rename) takes seconds on any machine.
    deadline = time.monotonic() + 300
    while child.poll() is None and time.monotonic() < deadline:
        if any((work / "model.safetensors").exists() for work in _work_folders(cache)):
            break
        time.sleep(0.005)
    assert child.poll() is None, "the conversion ended before it wrote its weights; nothing was interrupted"
    child.send_signal(signal.SIGKILL)
    child.wait()
    left = _work_folders(cache)
    old_env = os.environ.get("TEACHLLM_CACHE")
    os.environ["TEACHLLM_CACHE"] = str(cache)
    try:
        recovered = tl.load(device="cpu", dtype="float32", progress=False).forward(PROBE)
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
    shutil.copytree(good_cache[0] / convert.BUNDLED_FOLDER, cache / convert.BUNDLED_FOLDER)
    monkeypatch.setenv("TEACHLLM_CACHE", str(cache))
    return cache / convert.BUNDLED_FOLDER


@pytest.fixture
def converted_by_copy(good_cache, monkeypatch):
    """convert.convert_gguf replaced by a copy of the good folder made as a conversion makes its result (a work
    folder beside `out`, renamed into place): the list it returns gets one entry per call. The real conversion
    is tested by `good_cache` and by test_the_manifests_source_is_never_followed."""
    calls = []
    good = good_cache[0] / convert.BUNDLED_FOLDER

    def copy(gguf_path, out, progress=True):
        assert gguf_path == convert.bundled_gguf()  # what a repair converts from: the bundled file, never elsewhere
        work = convert._make_work_folder(out)
        for f in good.iterdir():
            shutil.copyfile(f, work / f.name)
        work.rename(out)
        calls.append(out)
        return out

    monkeypatch.setattr(convert, "convert_gguf", copy)
    return calls


@pytest.fixture
def user_folder(good_cache, tmp_path):
    """A copy of the converted checkpoint outside any cache and without a manifest: a folder teachllm did not make."""
    folder = tmp_path / "my-checkpoint"
    shutil.copytree(good_cache[0] / convert.BUNDLED_FOLDER, folder)
    (folder / convert.MANIFEST).unlink()
    return folder


# ---- an interrupted conversion -----------------------------------------------------------------------
def test_killed_conversion_then_load_recovers(good_cache, lm):
    cache, left, recovered = good_cache
    assert left, "the conversion was killed before it made its temporary folder"
    assert all(".tmp-" in p.name for p in left)  # what the killed process left behind ...
    assert _work_folders(cache) == []  # ... is gone after the next load
    folder = cache / convert.BUNDLED_FOLDER
    assert convert.read_manifest(folder) is not None
    assert convert.verify(folder, full=True) is None
    assert _same_logits(recovered, lm)  # the same weights as the shared cache


def test_stale_temporary_folders_are_removed(tmp_path):
    out = tmp_path / convert.BUNDLED_FOLDER
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f"{out.name}.tmp-{dead.pid}-abc"  # a conversion cut short: its process is gone
    live = tmp_path / f"{out.name}.tmp-{os.getpid()}-def"  # a conversion still running (this process)
    aside = tmp_path / f"{out.name}.damaged-{os.getpid()}-1"  # set aside, its listed files not yet deleted
    mixed = tmp_path / f"{out.name}.damaged-{os.getpid()}-2"  # ... holding a file of the user's too
    legacy = tmp_path / f"{out.name}.backup"  # no manifest, no process id: not teachllm's, whatever its age
    for folder in (stale, live, aside, mixed, legacy):
        folder.mkdir()
        (folder / "model.safetensors").write_bytes(b"weights")
    for folder in (aside, mixed):
        write_manifest(folder)
    (mixed / "notes.txt").write_text("mine")  # written after the manifest: not listed
    os.utime(legacy, (time.time() - 7200, time.time() - 7200))
    assert sorted(convert.remove_stale_temporaries(out)) == sorted([stale, aside])
    assert live.is_dir() and legacy.is_dir() and [p.name for p in mixed.iterdir()] == ["notes.txt"]


def test_a_conversion_parses_the_gguf_file_once_and_leaves_gguf_as_it_was():
    """convert._gguf_read_once memoises gguf's reader (transformers parses the file three times in a conversion);
    outside the block, even after an error inside it, gguf is the library it was. The reader maps the file
    read-only, so the memoised one cannot be changed by whoever reads it."""
    import gguf

    before = gguf.GGUFReader, gguf.get_tensor_name_map
    path = str(convert.bundled_gguf())
    with convert._gguf_read_once():
        first = gguf.GGUFReader(path)
        assert gguf.GGUFReader(path) is first and not first.data.flags.writeable
    assert (gguf.GGUFReader, gguf.get_tensor_name_map) == before
    with pytest.raises(RuntimeError, match="inside"), convert._gguf_read_once():
        raise RuntimeError("inside")
    assert (gguf.GGUFReader, gguf.get_tensor_name_map) == before


# ---- damaged converted weights ---------------------------------------------------------------------
def test_truncated_weights_are_converted_again(cache_copy, converted_by_copy, lm, capfd):
    weights = cache_copy / "model.safetensors"
    with open(weights, "r+b") as f:
        f.truncate(weights.stat().st_size // 2)
    assert "model.safetensors" in convert.verify(cache_copy, full=False)
    again = tl.load(device="cpu", dtype="float32", progress=False)
    notice = [line for line in capfd.readouterr().err.splitlines() if line.startswith("teachllm:")]
    assert len(notice) == 1 and "model.safetensors" in notice[0] and "converting" in notice[0]
    assert converted_by_copy == [cache_copy]
    assert convert.verify(cache_copy, full=True) is None
    assert _same_logits(again, lm)
    assert _work_folders(cache_copy.parent) == []


def test_weights_overwritten_in_the_middle_are_found_and_converted_again(cache_copy, converted_by_copy, lm, capfd):
    weights = cache_copy / "model.safetensors"
    with open(weights, "r+b") as f:
        f.seek(weights.stat().st_size // 2)
        f.write(b"\xff" * 4096)  # 1,024 float32 NaNs inside a weight matrix; sizes and header are unchanged
    assert convert.verify(cache_copy, full=False) is None  # the cheap check cannot see it ...
    assert "SHA-256" in convert.verify(cache_copy, full=True)  # ... the hash can
    again = tl.load(device="cpu", dtype="float32", progress=False)  # reading finds NaN, then the hash decides
    notice = [line for line in capfd.readouterr().err.splitlines() if line.startswith("teachllm:")]
    assert len(notice) == 1 and "model.safetensors" in notice[0] and "SHA-256" in notice[0]
    assert converted_by_copy == [cache_copy]
    assert convert.verify(cache_copy, full=True) is None
    assert _same_logits(again, lm)


def test_zeroed_weights_fail_the_cheap_check(cache_copy):
    weights = cache_copy / "model.safetensors"
    size = weights.stat().st_size
    with open(weights, "r+b") as f:
        f.write(bytes(1 << 20))  # the header (and the first MiB) zeroed, the size unchanged
    assert weights.stat().st_size == size
    problem = convert.verify(cache_copy, full=False)
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
    assert expected in convert.verify(cache_copy, full=False)


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
    with pytest.raises(convert.DamagedCheckpointError) as error:
        tl.load(user_folder, device="cpu", dtype="float32", progress=False)
    message = str(error.value)
    assert str(weights) in message and "replace it with a good copy" in message


def test_a_config_that_is_not_json_is_named(user_folder):
    (user_folder / "config.json").write_text("model_type: llama")
    with pytest.raises(convert.DamagedCheckpointError, match=r"config\.json is not valid JSON"):
        tl.load(user_folder, device="cpu", progress=False)


# ---- teachllm deletes and reads only what is its own ------------------------------------------------------
def _damage(weights: Path) -> None:
    with open(weights, "r+b") as f:
        f.seek(weights.stat().st_size // 2)
        f.write(b"\xff" * 4096)  # NaNs inside a matrix: the read fails, the sizes and the header still agree


def _load_in_child(args: str, cache: Path, timeout: float = 120, stdin: str = "") -> subprocess.CompletedProcess:
    """tl.load(<args>) in a fresh process, with TEACHLLM_CACHE=cache. A child that blocks on a FIFO (opened
    by mistake) or on a question is killed at `timeout` and the test fails."""
    env = {**os.environ, "TEACHLLM_CACHE": str(cache), "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    code = f"import teachllm as tl; tl.load({args}, device='cpu', dtype='float32', progress=False); print('loaded')"
    return subprocess.run([sys.executable, "-c", code], env=env, input=stdin, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture
def opened(monkeypatch):
    """Every path this process opens or stats from Python from now on (an audit hook and a wrapped os.stat)."""
    seen: list[str] = []
    stat = os.stat

    def recording_stat(path, *args, follow_symlinks=True, **kwargs):
        path = os.fspath(path) if isinstance(path, (str, os.PathLike)) else str(path)
        seen.append(os.path.realpath(path) if follow_symlinks else path)  # where a followed stat lands
        return stat(path, *args, follow_symlinks=follow_symlinks, **kwargs)

    monkeypatch.setattr(os, "stat", recording_stat)
    _AUDIT["on"] = seen
    yield seen
    _AUDIT["on"] = None


_AUDIT: dict = {"on": None}
sys.addaudithook(lambda event, args: _AUDIT["on"].append(os.fspath(args[0])) if (
    _AUDIT["on"] is not None and event == "open" and isinstance(args[0], (str, os.PathLike))) else None)


def test_a_users_folder_with_a_manifest_and_damaged_weights_is_never_deleted(good_cache, tmp_path):
    """The finding: a folder of the user's holding a teachllm manifest (its `source` a real GGUF) and damaged
    weights was deleted whole by tl.load(folder), a file of the user's with it. A folder the user passes is
    only read: the load fails, naming the file and the fix, and every file stays."""
    folder = tmp_path / "my-checkpoint"
    shutil.copytree(good_cache[0] / convert.BUNDLED_FOLDER, folder)  # manifest included
    manifest = json.loads((folder / convert.MANIFEST).read_text())
    manifest["source"] = str(convert.bundled_gguf())  # as older teachllm wrote it: a path that exists
    (folder / convert.MANIFEST).write_text(json.dumps(manifest))
    (folder / "notes.txt").write_text("my notes")
    _damage(folder / "model.safetensors")
    before = sorted(p.name for p in folder.iterdir())
    with pytest.raises(convert.DamagedCheckpointError) as error:
        tl.load(folder, device="cpu", dtype="float32", progress=False)
    assert str(folder / "model.safetensors") in str(error.value) and "replace it with a good copy" in str(error.value)
    assert sorted(p.name for p in folder.iterdir()) == before
    assert (folder / "notes.txt").read_text() == "my notes"


def test_a_users_file_in_the_cache_folder_survives_a_repair(cache_copy, converted_by_copy, lm, capfd):
    """In teachllm's own cache a damaged folder is converted again; only the files its manifest lists go."""
    (cache_copy / "notes.txt").write_text("my notes")
    _damage(cache_copy / "model.safetensors")
    again = tl.load(device="cpu", dtype="float32", progress=False)
    assert converted_by_copy == [cache_copy]
    assert _same_logits(again, lm) and convert.verify(cache_copy, full=True) is None
    kept = [p for p in cache_copy.parent.glob(f"{cache_copy.name}.damaged-*") if p.is_dir()]
    assert [sorted(p.name for p in k.iterdir()) for k in kept] == [["notes.txt"]]
    assert (kept[0] / "notes.txt").read_text() == "my notes"
    assert f"kept {kept[0]}" in capfd.readouterr().err
    assert convert.remove_stale_temporaries(cache_copy) == [] and (kept[0] / "notes.txt").is_file()  # and later


def test_the_manifests_source_is_never_followed(cache_copy, tmp_path):
    """The finding: a cache manifest's `source` pointing elsewhere made teachllm convert that file. The source
    to convert from is the one the caller names (here the bundled file); the manifest's is never opened: it is
    a FIFO, which would block the load."""
    elsewhere = tmp_path / "elsewhere.gguf"
    os.mkfifo(elsewhere)
    manifest = json.loads((cache_copy / convert.MANIFEST).read_text())
    manifest["source"] = str(elsewhere)
    (cache_copy / convert.MANIFEST).write_text(json.dumps(manifest))
    _damage(cache_copy / "model.safetensors")
    run = _load_in_child("None", cache_copy.parent, timeout=240)
    assert run.returncode == 0 and "loaded" in run.stdout, run.stderr[-2000:]
    assert "converting SmolLM2-135M-Instruct.Q4_1.gguf again" in run.stderr
    assert convert.verify(cache_copy, full=True) is None


@pytest.mark.parametrize("bad", ["../outside.txt", "/etc/hostname", "sub/../../outside.txt", "link.json"])
def test_a_manifest_naming_files_outside_its_folder_reads_nothing_there(cache_copy, tmp_path, opened, bad):
    """The finding: manifest entries with `../` paths were stat'ed and hashed. Now the manifest fails its schema
    before any file it names is looked at, so the folder counts as damaged and nothing outside is opened."""
    outside = tmp_path / "outside.txt"
    outside.write_text("not teachllm's")
    (cache_copy / "link.json").symlink_to(outside)  # a name inside that leads out
    manifest = json.loads((cache_copy / convert.MANIFEST).read_text())
    manifest["files"][bad] = {"size": 14, "sha256": "0" * 64}
    (cache_copy / convert.MANIFEST).write_text(json.dumps(manifest))
    opened.clear()  # from here on, nothing under tmp_path but the cache may be opened or stat'ed
    problem = convert.verify(cache_copy, full=True)
    seen = list(opened)
    assert problem and convert.MANIFEST in problem and repr(bad) in problem
    assert seen and all(Path(p).is_relative_to(cache_copy) for p in seen), [p for p in seen if str(cache_copy) not in p]
    assert outside.read_text() == "not teachllm's"


def test_an_index_naming_a_shard_outside_the_folder_is_refused(user_folder, tmp_path):
    """The finding: a safetensors index whose weight_map named `../elsewhere/x.safetensors` was opened. The
    shard is a FIFO: opening it would block the child until the test's timeout."""
    (tmp_path / "elsewhere").mkdir()
    os.mkfifo(tmp_path / "elsewhere" / "x.safetensors")
    index = {"metadata": {}, "weight_map": {"embed_tokens.weight": "../elsewhere/x.safetensors"}}
    (user_folder / "model.safetensors.index.json").write_text(json.dumps(index))
    run = _load_in_child(repr(str(user_folder)), tmp_path / "cache", timeout=60)
    assert run.returncode != 0
    assert "DamagedCheckpointError" in run.stderr and "'../elsewhere/x.safetensors'" in run.stderr
    assert "is not a valid shard index" in run.stderr


@pytest.mark.parametrize("manifest", [[], 7, {"version": 1, "files": []},
                                      {"version": 1, "files": {"config.json": {"size": "817", "sha256": "0" * 64}}},
                                      {"version": 1, "files": {"config.json": 817}}, {"files": {}}])
def test_a_wrongly_typed_manifest_counts_as_damaged(cache_copy, manifest):
    """The finding: a manifest of the wrong types made every later load fail until the folder was deleted by
    hand. Each of these fails the schema, so the cheap check reports the folder damaged (and the load converts
    it again: test_a_damaged_manifest_is_converted_again)."""
    (cache_copy / convert.MANIFEST).write_text(json.dumps(manifest))
    assert convert.MANIFEST in convert.verify(cache_copy, full=False)


def test_a_damaged_manifest_is_converted_again(cache_copy, lm, capfd):
    (cache_copy / convert.MANIFEST).write_text("[1, 2, 3]")
    again = tl.load(device="cpu", dtype="float32", progress=False)
    assert _same_logits(again, lm) and convert.verify(cache_copy, full=True) is None
    assert "is not a teachllm manifest" in capfd.readouterr().err


def test_a_damaged_manifest_in_a_users_folder_is_an_error(user_folder):
    (user_folder / convert.MANIFEST).write_text('{"version": 1, "files": {"../x": {}}}')
    with pytest.raises(convert.DamagedCheckpointError, match=r"never changes it: restore or delete"):
        tl.load(user_folder, device="cpu", dtype="float32", progress=False)
    assert (user_folder / convert.MANIFEST).is_file()


def test_a_folder_in_the_cache_that_teachllm_did_not_make_is_left_alone(cache_copy):
    """A user who points TEACHLLM_CACHE at a folder of their own models, one of which has the bundled model's
    folder name and no manifest: teachllm uses it if it is sound, and never deletes it when it is not."""
    (cache_copy / convert.MANIFEST).unlink()
    (cache_copy / "model.safetensors").write_bytes(b"not weights")
    with pytest.raises(convert.DamagedCheckpointError, match=r"teachllm did not make .* leaves it alone"):
        tl.load(device="cpu", dtype="float32", progress=False)
    assert (cache_copy / "model.safetensors").read_bytes() == b"not weights"


def test_stale_temporaries_never_follow_links(tmp_path):
    """The finding: remove_stale_temporaries reported links as removed while leaving them. A link is not
    teachllm's: it is neither followed, nor removed, nor reported."""
    out = tmp_path / convert.BUNDLED_FOLDER
    target = tmp_path / "somewhere"
    target.mkdir()
    (target / "keep.txt").write_text("keep")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    link = tmp_path / f"{out.name}.tmp-{dead.pid}-abc"
    link.symlink_to(target, target_is_directory=True)
    assert convert.remove_stale_temporaries(out) == []
    assert link.is_symlink() and (target / "keep.txt").read_text() == "keep"


def test_clear_cache_removes_only_listed_files(cache_copy, tmp_path):
    (cache_copy / "notes.txt").write_text("mine")
    other = cache_copy.parent / "my-own-model"  # no manifest: not teachllm's
    other.mkdir()
    (other / "model.safetensors").write_bytes(b"x")
    assert convert.clear_cache() == []  # the folder stays: it holds notes.txt
    assert sorted(p.name for p in cache_copy.iterdir()) == ["notes.txt"]
    assert (other / "model.safetensors").read_bytes() == b"x"


def test_a_checkpoints_own_code_never_runs(user_folder, tmp_path):
    """The finding: for a folder with a custom tokenizer class, transformers asked "run the custom code? [y/N]"
    and answering y ran the folder's Python file. teachllm passes trust_remote_code=False: the file never
    runs, even when stdin answers y, and the error says why."""
    marker = tmp_path / "the-code-ran"
    (user_folder / "tokenization_evil.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n"
                                                      "from transformers import PreTrainedTokenizerFast as Evil\n")
    config = json.loads((user_folder / "tokenizer_config.json").read_text())
    config.update(tokenizer_class="Evil", auto_map={"AutoTokenizer": [None, "tokenization_evil.Evil"]})
    (user_folder / "tokenizer_config.json").write_text(json.dumps(config))
    run = _load_in_child(repr(str(user_folder)), tmp_path / "cache", stdin="y\ny\ny\n")
    assert not marker.exists()
    assert run.returncode != 0 and "never runs a checkpoint's code" in run.stderr, run.stderr[-2000:]


# ---- a cache folder that cannot be written -----------------------------------------------------------
def test_cache_under_a_regular_file(tmp_path, monkeypatch):
    """A cache path that cannot be made: its parent is a regular file (root can write anywhere else)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("TEACHLLM_CACHE", str(blocker / "cache"))
    with pytest.raises(convert.CacheNotWritableError, match=r"cannot write .* set TEACHLLM_CACHE to a writable"):
        tl.load(device="cpu", progress=False)


def test_cache_folder_that_is_read_only(tmp_path, monkeypatch):
    """A real read-only folder. Root ignores permission bits, so the folder is made immutable (chattr +i),
    which binds root too; the test is skipped where the file system does not support it."""
    cache = tmp_path / "read-only"
    cache.mkdir()
    if os.geteuid() == 0:
        if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(cache)],
                                                            capture_output=True).returncode != 0:
            message = "running as root and chattr +i is not available here, so no folder is read-only for root"
            if os.environ.get("CI") == "true":
                pytest.fail(message)  # no test may skip under CI: run CI where chattr works (ext4, xfs, tmpfs…)
            pytest.skip(message)
    else:
        cache.chmod(0o555)
    monkeypatch.setenv("TEACHLLM_CACHE", str(cache))
    try:
        with pytest.raises(convert.CacheNotWritableError, match=rf"{cache}.*TEACHLLM_CACHE"):
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
