"""teachllm: step through how a large language model generates text, on a real model.

    import teachllm as tl
    lm = tl.load()                      # the bundled SmolLM2-135M-Instruct
    cache = lm.new_cache(max_len=128)
    logits = lm.prefill(lm.tokenizer.encode("The sky is"), cache)
"""

from .cache import KVCache
from .config import ModelConfig, UnsupportedModelError
from .lm import LanguageModel, Stage, load
from .loading import ModelNotFoundError
from .model import LayerTrace, Trace
from .tokenizer import Tokenizer

__version__ = "0.1.0"

__all__ = [
    "KVCache", "LanguageModel", "LayerTrace", "ModelConfig", "ModelNotFoundError", "Stage", "Tokenizer",
    "Trace", "UnsupportedModelError", "load",
]
