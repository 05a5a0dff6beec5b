"""The kernels' cache folder (teachllm.fastpath.kernels and native): what its manifest vouches for, and when a saved
choice of kernels is trusted.

- The manifest lists only the files teachllm wrote there, each with its SHA-256: a file someone else put in the
  folder is never listed, so never loaded and never deleted by `make clean-cache`; a library swapped for
  another is built again, not run.
- A saved choice is used only if it is what `save_choice` writes, for this machine, with a faithful kernel for
  each group, and every kernel it names runs here; otherwise the kernels are measured again (with a warning).
- A kernels folder that is a link is neither written nor read, as for the C kernels.
- A `kernel` that is not a name (a list) is refused with the allowed values.

A tiny model of two quantised matrices with random blocks stands in for the bundled one, and `measure` is
replaced by equal times (so `pick` takes the most faithful kernel), which keeps these tests fast; only the
test of a swapped library builds the C kernel (about a second).
"""

import json
import re

import pytest
import torch
from torch import nn

import teachllm as tl
from teachllm.checkpoints.convert import clear_cache
from teachllm.checkpoints.manifest import MANIFEST, read_manifest, sha256_of, write_manifest
from teachllm.fastpath import kernels, native
from teachllm.fastpath.quant import Q4_1Linear

KEY = "tiny model"  # the model's name in the cache


def q4_1_blocks(n: int, k: int, seed: int) -> torch.Tensor:
    """Random Q4_1 blocks [n, k/32, 20]: a small positive scale d, a minimum m, 32 random 4-bit integers."""
    g = torch.Generator().manual_seed(seed)
    G = k // 32
    d = (torch.rand(n, G, generator=g) * 0.01 + 0.001).half().view(torch.uint8).view(n, G, 2)
    m = (-torch.rand(n, G, generator=g) * 0.05).half().view(torch.uint8).view(n, G, 2)
    qs = torch.randint(0, 256, (n, G, 16), generator=g, dtype=torch.uint8)
    return torch.cat([d, m, qs], dim=-1)


class TinyLM:
    """What `kernels.configure` reads of a language model: `.model`, here two Q4_1 matrices of two shapes (two
    groups)."""

    def __init__(self):
        self.model = nn.Module()
        self.model.up = Q4_1Linear(q4_1_blocks(32, 64, 0), 64)
        self.model.down = Q4_1Linear(q4_1_blocks(16, 128, 1), 128)


def layer_kernels(lm) -> set[str]:
    return {m.kernel for m in lm.model.modules() if hasattr(m, "use_kernel")}


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    """A cache folder of the test's own (nothing touches the real one), and no C library loaded from elsewhere."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("TEACHLLM_CACHE", str(cache))
    native.library.cache_clear()
    yield cache
    native.library.cache_clear()


@pytest.fixture
def equal_times(monkeypatch):
    """Every candidate takes the same time: no timing noise, and `pick` keeps the most faithful (float32)."""
    monkeypatch.setattr(kernels, "measure", lambda model, groups, group, impls, **k: {n: 1.0 for n in impls})


@pytest.fixture
def no_compiler(monkeypatch):
    """No C compiler on this machine: the C kernels are left out at once, without building anything."""
    monkeypatch.setattr(native, "compiler", lambda: None)


def saved_file(cache):
    [path] = [p for p in (cache / "kernels").glob("*.json") if p.name != MANIFEST]
    return path


def save(lm, facts: dict, kernel: str) -> None:
    """A saved choice for `lm` on the machine `facts`: every group on `kernel`."""
    groups = kernels.groups_of(lm.model)
    for g in groups:
        g.kernel, g.why, g.step_ms = kernel, "fastest", {kernel: 1.0}
    kernels.save_choice(kernels.cache_file(KEY, facts), kernels.Choice(groups, facts, "measured", 1.0, "2026-01-01"))


# ---- 1. the manifest vouches only for teachllm's own files -------------------------------------------------
def test_files_teachllm_did_not_write_are_never_listed_nor_deleted(own_cache, no_compiler, equal_times):
    folder = own_cache / "kernels"
    folder.mkdir(parents=True)
    planted = folder / "gemv_avx2-0123456789abcdef.so"
    planted.write_bytes(b"a library teachllm did not build")
    notes = folder / "notes.txt"
    notes.write_text("the user's own file")
    assert kernels.configure(TinyLM(), model_key=KEY).how == "measured"
    saved = saved_file(own_cache)
    files = read_manifest(folder)["files"]
    assert set(files) == {saved.name} and files[saved.name]["sha256"] == sha256_of(saved)
    assert clear_cache() == []  # the folder stays: it holds files that are not teachllm's
    assert not saved.exists() and not (folder / MANIFEST).exists()
    assert planted.read_bytes() == b"a library teachllm did not build" and notes.read_text() == "the user's own file"


@pytest.mark.skipif(native.why_not() is not None, reason=f"avx2 kernel: {native.why_not()}")
def test_a_swapped_library_is_built_again_not_run(own_cache):
    """A library swapped after it was built: saving a choice must not vouch for it, nor may a manifest that lists
    every file of the folder (as teachllm's manifests did) vouch for it; either way it is built again."""
    native.library()
    folder = own_cache / "kernels"
    [built] = folder.glob("gemv_avx2-*.so")
    original = sha256_of(built)

    def swap():
        planted = folder / "planted"
        planted.write_bytes(b"not what teachllm built")
        planted.replace(built)  # a rename: this process keeps its mapping of the old file
        native.library.cache_clear()

    swap()
    save(TinyLM(), kernels.machine(), "int4")
    assert read_manifest(folder)["files"][built.name]["sha256"] == original  # not the planted file's
    native.library()  # loads only a library it built: not the planted bytes (dlopen would refuse them)
    assert sha256_of(built) == original
    swap()
    write_manifest(folder)  # every file of the folder, the planted one too
    native.library()
    assert sha256_of(built) == original


# ---- 2, 5, 6. a saved choice is trusted only when it fits ---------------------------------------------------
@pytest.mark.parametrize("tamper, why", [
    ("an unfaithful kernel", "kernel 'dynamic-int8' is not one of the faithful kernels"),
    ("another CPU", "measured on another machine"),
    ("no seconds", "not a saved choice"),
    ("seconds as text", "not a saved choice"),
    ("step_ms a list", "is not what save_choice writes"),
])
def test_a_saved_choice_that_does_not_fit_is_measured_again(own_cache, no_compiler, equal_times, tamper, why):
    lm = TinyLM()
    first = kernels.configure(lm, model_key=KEY)
    assert first.how == "measured" and kernels.configure(lm, model_key=KEY).how == "cached"
    path = saved_file(own_cache)
    saved = json.loads(path.read_text())
    if tamper == "an unfaithful kernel":
        for g in saved["groups"]:
            g["kernel"] = "dynamic-int8"
    elif tamper == "another CPU":
        saved["machine"]["cpu"] = "Another CPU @ 1.0GHz"
    elif tamper == "no seconds":
        del saved["seconds"]
    elif tamper == "seconds as text":
        saved["seconds"] = "fast"
    else:
        saved["groups"][0]["step_ms"] = [1.0]
    path.write_text(json.dumps(saved))
    with pytest.warns(UserWarning, match=f"saved kernel choice {re.escape(str(path))} is not used .*{why}"):
        choice = kernels.configure(lm, model_key=KEY)
    assert choice.how == "measured" and "measured" in choice.describe()
    assert {g.kernel for g in choice.groups} <= set(kernels.FAITHFUL) and layer_kernels(lm) <= set(kernels.FAITHFUL)
    assert kernels.configure(lm, model_key=KEY).how == "cached"  # measured again, and saved again


def test_a_saved_c_kernel_without_a_compiler_is_measured_again(own_cache, equal_times, monkeypatch):
    """An avx2 choice saved where a compiler was, read where there is none: the kernels that run here are
    measured, instead of "no C compiler found"."""
    lm = TinyLM()
    save(lm, kernels.machine(), "avx2")  # measured with the compiler this machine has (or had)
    monkeypatch.setattr(native, "compiler", lambda: None)
    choice = kernels.configure(lm, model_key=KEY)
    assert choice.how == "measured" and "avx2" not in layer_kernels(lm)
    save(lm, kernels.machine(), "avx2")  # the same, saved for this very machine (say, copied by hand)
    with pytest.warns(UserWarning, match="cannot be used here .*no C compiler"):
        choice = kernels.configure(lm, model_key=KEY)
    assert choice.how == "measured" and "avx2" not in layer_kernels(lm)
    assert all("no C compiler" in g.refused["avx2"] for g in choice.groups)


# ---- 3. a linked kernels folder ------------------------------------------------------------------------------
def test_a_linked_kernels_folder_is_neither_written_nor_read(own_cache, no_compiler, equal_times, tmp_path_factory):
    lm = TinyLM()
    kernels.configure(lm, model_key=KEY)  # a real choice, in a real folder
    elsewhere = tmp_path_factory.mktemp("not-teachllms")
    saved = saved_file(own_cache).replace(elsewhere / saved_file(own_cache).name)
    (own_cache / "kernels" / MANIFEST).unlink()
    (own_cache / "kernels").rmdir()
    (own_cache / "kernels").symlink_to(elsewhere, target_is_directory=True)
    with pytest.warns(UserWarning, match="is a link; teachllm writes only into folders of its own"):
        choice = kernels.configure(lm, model_key=KEY)
    assert choice.how == "measured"  # the choice behind the link is not read
    assert list(elsewhere.iterdir()) == [saved]  # and nothing is written through it
    with pytest.raises(RuntimeError, match="is a link; teachllm writes only into folders of its own"):
        save(lm, kernels.machine(), "int4")
    assert list(elsewhere.iterdir()) == [saved]


# ---- 4. a kernel that is not a name --------------------------------------------------------------------------
@pytest.mark.parametrize("kernel", [["int4"], {"int4"}])
def test_a_kernel_that_is_not_a_name_is_refused_with_the_allowed_values(kernel):
    allowed = re.escape(f"kernel={kernel!r}: kernel ") + "(is|must be) 'auto' or one of int4, avx2, avx512, float16"
    with pytest.raises(ValueError, match=allowed):
        tl.load(weights="gguf", kernel=kernel, progress=False)
    with pytest.raises(ValueError, match=allowed):
        kernels.configure(TinyLM(), kernel)
