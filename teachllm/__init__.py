"""teachllm: step through how a large language model generates text, on a real model.

    import teachllm as tl
    lm = tl.load()                      # the bundled SmolLM2-135M-Instruct
    cache = lm.new_cache(max_len=128)
    logits = lm.prefill(lm.tokenizer.encode("The sky is"), cache)
"""

from . import bpe, cost, sampling, texts  # tl.bpe toy tokenizer, tl.cost FLOPs and bytes, tl.texts sample paragraphs
from .beam import beam_search_steps
from .cache import KVCache
from .checkpoints.loading import ModelNotFoundError
from .config import ModelConfig, UnsupportedModelError
from .generate import GenerationOutput, Metrics, generation_steps
from .lm import LanguageModel, load
from .model import LayerTrace, Stage, Trace
from .sampling import SamplingParams
from .tokenizer import Tokenizer
from .tolerances import Tolerance, tolerance

__version__ = "0.1.0"


def __getattr__(name: str):
    """`tl.serving` and `tl.roofline` are imported on first use: `import teachllm` stays light."""
    if name in ("serving", "roofline"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'teachllm' has no attribute {name!r}")

__all__ = [
    "GenerationOutput", "KVCache", "LanguageModel", "LayerTrace", "Metrics", "ModelConfig", "ModelNotFoundError",
    "SamplingParams", "Stage", "Tokenizer", "Tolerance", "Trace", "UnsupportedModelError", "beam_search_steps",
    "bpe", "cost", "generation_steps", "load", "roofline", "sampling", "serving", "texts", "tolerance",
]
