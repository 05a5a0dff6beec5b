"""teachllm: step through how a large language model generates text, on a real model.

    import teachllm as tl
    lm = tl.load()                      # the bundled SmolLM2-135M-Instruct
    cache = lm.new_cache(max_len=128)
    logits = lm.prefill(lm.tokenizer.encode("The sky is"), cache)
"""

from . import bpe, cost, sampling, serving  # tl.bpe toy tokenizer, tl.cost FLOPs/bytes/roofline, tl.serving
from .beam import beam_search_steps
from .cache import KVCache
from .config import ModelConfig, UnsupportedModelError
from .generate import GenerationOutput, Metrics, generation_steps
from .lm import LanguageModel, Stage, load
from .loading import ModelNotFoundError
from .model import LayerTrace, Trace
from .sampling import SamplingParams
from .tokenizer import Tokenizer

__version__ = "0.1.0"

__all__ = [
    "GenerationOutput", "KVCache", "LanguageModel", "LayerTrace", "Metrics", "ModelConfig", "ModelNotFoundError",
    "SamplingParams", "Stage", "Tokenizer", "Trace", "UnsupportedModelError", "beam_search_steps",
    "bpe", "cost", "generation_steps", "load", "sampling", "serving",
]
