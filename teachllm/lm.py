"""LanguageModel: the model, its tokenizer and the two phases of inference, prefill and decode.

    lm = tl.load()                         # bundled SmolLM2-135M-Instruct
    cache = lm.new_cache(max_len=64)
    logits = lm.prefill(lm.tokenizer.encode("The sky is"), cache)   # [1, V]: next-token logits
    token = logits.argmax(-1)                                      # [1]
    logits = lm.decode_step(token, cache)                          # [1, V]: one more token

Prefill runs the whole prompt through the decoder at once and fills the KV cache; each decode
step runs one new token per sequence and reads the cache. `forward` runs a whole sequence
without any cache, which is what the cached path must reproduce.
"""

from __future__ import annotations

import numbers
import os

import numpy as np
import torch

from .cache import KVCache
from .config import ModelConfig
from .generate import generate, stream
from .loading import (
    WEIGHTS,
    build_model,
    checkpoint,
    gguf_device_dtype,
    gguf_file,
    quantise_from_gguf,
    read_tensors,
    resolve_device,
    resolve_dtype,
)
from .model import Trace, Transformer
from .sampling import SamplingParams
from .tokenizer import Tokenizer


class LanguageModel:
    def __init__(self, model: Transformer, tokenizer: Tokenizer | None, name: str = "model"):
        self.model = model
        self.config: ModelConfig = model.config
        self._tokenizer = tokenizer
        self.name = name

    # ---- basics --------------------------------------------------------------------------------
    @property
    def tokenizer(self) -> Tokenizer:
        if self._tokenizer is None:
            raise ValueError(f"{self.name} was loaded without tokenizer files; pass token ids instead of text")
        return self._tokenizer

    @property
    def has_tokenizer(self) -> bool:
        """Whether the checkpoint came with tokenizer files (without them, pass token ids, not text)."""
        return self._tokenizer is not None

    @property
    def device(self) -> torch.device:
        return self.model.embed_tokens.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.model.embed_tokens.weight.dtype

    def __repr__(self) -> str:
        c = self.config
        return (f"LanguageModel({self.name}: {c.n_params / 1e6:.1f}M parameters, {c.n_layers} layers, "
                f"{c.n_heads} query / {c.n_kv_heads} KV heads, device={self.device}, dtype={self.dtype})")

    def new_cache(self, max_len: int | None = None, batch_size: int = 1) -> KVCache:
        """An empty, preallocated KV cache for `batch_size` sequences of up to `max_len` tokens each
        (default: the model's whole context window)."""
        max_len = self.config.max_position_embeddings if max_len is None else max_len
        return KVCache(self.config, max_len, batch_size, dtype=self.dtype, device=self.device)

    # ---- the two phases ------------------------------------------------------------------------
    @torch.no_grad()
    def prefill(self, ids, cache: KVCache, trace: Trace | None = None) -> torch.Tensor:
        """Run the prompt through the model, storing its K and V in `cache`.

        ids: list[int] (one prompt), list[list[int]] (prompts of any lengths, left-padded here),
        or a LongTensor [B, S]. Returns the logits after the last prompt token: [B, V].
        """
        ids, pad = self._prompt_batch(ids)  # [B, S], [B]
        B, S = ids.shape
        self._check_batch(cache, B)
        self._set_padding(cache, pad)
        cache.check_room(S)
        return self.model(ids, cache, trace, last_only=True)[:, -1]  # [B, V]

    @torch.no_grad()
    def decode_step(self, token, cache: KVCache, trace: Trace | None = None) -> torch.Tensor:
        """Run one new token per sequence after what `cache` holds; returns the next logits [B, V].

        token: an int (batch 1), a list of B ints, or a LongTensor [B] or [B, 1].
        """
        self._check_cache(cache)
        if cache.length == 0:
            raise ValueError("decode_step needs a cache that prefill has filled; call lm.prefill(ids, cache) first")
        token = self._as_tensor(token)
        if token.dim() > 2 or (token.dim() == 2 and token.shape[1] != 1):
            raise ValueError(f"decode_step takes one token per sequence: an int, a list of B ints, or a tensor of "
                             f"shape [B] or [B, 1]; got shape {tuple(token.shape)}")
        token = token.reshape(-1, 1)  # [B, 1]
        self._check_batch(cache, token.shape[0])
        cache.check_room(1)
        return self.model(token, cache, trace, last_only=True)[:, -1]  # [B, V]

    @torch.no_grad()
    def forward(self, ids, trace: Trace | None = None) -> torch.Tensor:
        """Logits at every position of `ids` (list[int] or LongTensor [B, S]) with no cache: [B, S, V]."""
        ids = self._as_tensor(ids)
        if ids.dim() == 1:
            ids = ids[None]
        self._check_prompt(ids)
        return self.model(ids, None, trace)  # [B, S, V]

    @torch.no_grad()
    def step_through(self, ids, cache: KVCache | None = None, trace: Trace | None = None):
        """The forward pass one stage at a time, to look between layers:

            for stage in lm.step_through(ids):
                print(stage.name, stage.output.shape)

        Yields the embedding, the output of each layer, the final norm and the logits (all positions).
        With a cache, it is filled as prefill would fill it.
        """
        ids, pad = self._prompt_batch(ids)
        if cache is not None:
            self._check_batch(cache, ids.shape[0])
            self._set_padding(cache, pad)
            cache.check_room(ids.shape[1])
        yield from self.model.stages(ids, cache, trace)

    # ---- text in, text out ---------------------------------------------------------------------
    def generate(self, prompt, params: SamplingParams | None = None):
        """Generate a continuation.

        prompt: a string, a list of token ids, or a list of either (a batch).
        Returns one `GenerationOutput` (text, token_ids, finish_reason, logprobs, metrics), or a list
        of them for a list of prompts.
        """
        prompts, single = self._prompts(prompt)
        outputs = generate(self, prompts, self._check_params(params))
        return outputs[0] if single else outputs

    def stream(self, prompt, params: SamplingParams | None = None):
        """Yield text pieces as tokens arrive (one prompt: a string or a list of ids)."""
        prompts, single = self._prompts(prompt)
        params = self._check_params(params)
        if not single:
            raise ValueError("stream takes one prompt; use generate for a batch")
        yield from stream(self, prompts[0], self._check_params(params))

    def _prompts(self, prompt) -> tuple[list[list[int]], bool]:
        """Prompt(s) as lists of ids, and whether a single prompt was given: a string, a list of ids or a 1-D
        tensor is one prompt; a list of those or a 2-D tensor is a batch."""
        if isinstance(prompt, str):
            return [self.tokenizer.encode(prompt)], True
        if isinstance(prompt, torch.Tensor):
            if prompt.dim() not in (1, 2):
                raise ValueError(f"a tensor of token ids must have shape [seq] (one prompt) or [batch, seq], "
                                 f"got shape {tuple(prompt.shape)}")
            tensor = self._as_tensor(prompt)  # checks the dtype and the vocabulary
            return (tensor[None] if tensor.dim() == 1 else tensor).tolist(), tensor.dim() == 1
        if isinstance(prompt, (list, tuple)) and prompt:
            prompt = [p.item() if isinstance(p, torch.Tensor) and p.dim() == 0 and not p.is_floating_point()
                      and p.dtype != torch.bool else p for p in prompt]  # one-element tensors count as ints
            if all(_is_id(i) for i in prompt):
                self._as_tensor(list(prompt))  # checks the vocabulary
                return [[int(i) for i in prompt]], True
            if all(isinstance(p, (str, list, tuple, torch.Tensor)) for p in prompt):
                rows = []
                for p in prompt:
                    if isinstance(p, (list, tuple)) and not p:
                        raise ValueError("empty prompt: every prompt needs at least one token")
                    ids, single = self._prompts(p)
                    if not single:
                        raise ValueError("a batch of prompts is a list of strings or of lists of token ids; "
                                         "got a prompt that is itself a batch (nested too deep)")
                    rows.append(ids[0])
                return rows, False
            bad = next(i for i in prompt if not _is_id(i) and not isinstance(i, (str, list, tuple, torch.Tensor)))
            raise TypeError(f"a prompt must be a string or a list of token ids (ints); got an element {bad!r} "
                            f"({type(bad).__name__})")
        if isinstance(prompt, (list, tuple)):
            raise ValueError(f"a prompt must be a non-empty string, list of token ids, or list of those; "
                             f"got {prompt!r}")
        raise TypeError(f"a prompt must be a string, a list of token ids, or a list of those; "
                        f"got {type(prompt).__name__}")

    # ---- checking what comes in ----------------------------------------------------------------
    def _check_params(self, params) -> SamplingParams:
        """params as a SamplingParams (None → the defaults), checked against this model's vocabulary."""
        if params is None:
            return SamplingParams()
        if not isinstance(params, SamplingParams):
            hint = ("an instance, e.g. SamplingParams()" if params is SamplingParams
                    else "SamplingParams(**your_dict)" if isinstance(params, dict) else "a SamplingParams")
            raise TypeError(f"params must be a SamplingParams instance or None; got {params!r:.80}: use {hint}")
        params.check_for_model(self.config.vocab_size)
        return params

    def _check_cache(self, cache) -> None:
        if not isinstance(cache, KVCache):
            raise TypeError(f"cache must be a KVCache made by lm.new_cache(max_len=..., batch_size=...), "
                            f"got {type(cache).__name__}")

    def _as_tensor(self, ids) -> torch.Tensor:
        """Token ids (an int, nested lists of ints, a numpy array or an integer tensor) as a LongTensor on
        the model's device, every id checked against the vocabulary."""
        if isinstance(ids, torch.Tensor):
            if ids.dtype == torch.bool or ids.is_floating_point() or ids.is_complex():
                raise TypeError(f"token ids must be an integer tensor, got dtype {ids.dtype}")
            ids = ids.to(self.device, torch.long)
        else:
            ids = torch.tensor(_id_lists(ids), dtype=torch.long, device=self.device)
        if ids.numel() == 0:
            raise ValueError("empty prompt: at least one token id is needed")
        bad = (ids < 0) | (ids >= self.config.vocab_size)
        if bool(bad.any()):
            raise ValueError(f"token id {int(ids[bad][0])} is outside the vocabulary: token ids must be in "
                             f"0 .. {self.config.vocab_size - 1}")
        return ids

    def _check_prompt(self, ids: torch.Tensor) -> None:
        if ids.dim() != 2:
            raise ValueError(f"token ids must have shape [batch, seq], got {tuple(ids.shape)}")
        if ids.shape[1] > self.config.max_position_embeddings:
            raise ValueError(f"a sequence of {ids.shape[1]} tokens is longer than the model's context window "
                             f"of {self.config.max_position_embeddings}")

    def _prompt_batch(self, ids) -> tuple[torch.Tensor, torch.Tensor]:
        """Prompts as one [B, S] tensor, left-padded, and each row's padding length [B]."""
        if isinstance(ids, (list, tuple)) and ids and all(isinstance(p, (list, tuple)) for p in ids):
            if any(len(p) == 0 for p in ids):
                raise ValueError("empty prompt: every prompt needs at least one token id")
            width = max(len(p) for p in ids)
            pad_id = 0
            rows = [[pad_id] * (width - len(p)) + list(p) for p in ids]
            pad = torch.tensor([width - len(p) for p in ids], device=self.device)
            tensor = self._as_tensor(rows)
        else:
            tensor = self._as_tensor(ids)
            if tensor.dim() == 1:
                tensor = tensor[None]
            pad = torch.zeros(tensor.shape[0], dtype=torch.long, device=self.device)
        self._check_prompt(tensor)
        return tensor, pad

    @staticmethod
    def _set_padding(cache: KVCache, pad: torch.Tensor) -> None:
        if cache.length == 0:
            cache.start.copy_(pad)
        elif bool(pad.any()):
            raise ValueError("prompts of different lengths can only be prefilled into an empty cache")

    def _check_batch(self, cache: KVCache, batch: int) -> None:
        self._check_cache(cache)
        if cache.batch_size != batch:
            raise ValueError(f"{batch} sequence(s) given, but the cache was made for batch_size={cache.batch_size}")
        if cache.k.device != self.device or cache.k.dtype != self.dtype:
            raise ValueError(f"the cache is {cache.k.dtype} on {cache.k.device}, the model {self.dtype} on "
                             f"{self.device}; make it with lm.new_cache(...)")


def _is_id(x) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, (bool, np.bool_))


def _id_lists(ids):
    """An int or (nested) lists of ints, checked: no text, no floats, no booleans, no ragged rows."""
    if isinstance(ids, np.ndarray):
        if ids.dtype.kind not in "iu":
            raise TypeError(f"token ids must be integers, got a numpy array of dtype {ids.dtype}")
        ids = ids.tolist()
    if _is_id(ids):
        return [int(ids)]
    if isinstance(ids, str):
        raise TypeError(f"text was given where token ids are expected ({ids!r:.40}); turn it into ids with "
                        "lm.tokenizer.encode(text), or use lm.generate, which takes text")
    if not isinstance(ids, (list, tuple)):
        raise TypeError(f"token ids must be an int, a list of ints, a list of lists of ints or an integer tensor; "
                        f"got {type(ids).__name__}")

    def rows(x, depth):
        if isinstance(x, torch.Tensor) and x.dim() == 0 and not x.is_floating_point() and x.dtype != torch.bool:
            x = x.item()  # a one-element integer tensor counts as an int
        if _is_id(x):
            return int(x)
        if isinstance(x, (list, tuple)) and depth < 2:
            return [rows(i, depth + 1) for i in x]
        if isinstance(x, (list, tuple)):
            raise ValueError("token ids nest at most two deep: [batch][seq]")
        raise TypeError(f"token ids must be integers, got {x!r} ({type(x).__name__})")

    out = rows(ids, 0)
    if out and isinstance(out[0], list):
        if not all(isinstance(r, list) for r in out):
            raise TypeError("token ids mix ints and lists: give one list of ids, or one list per sequence")
        lengths = sorted({len(r) for r in out})
        if len(lengths) > 1:
            raise ValueError(f"ragged batch: rows of {lengths[0]} and {lengths[-1]} tokens; forward needs rows of "
                             "one length (prefill and generate pad prompts of different lengths themselves)")
    elif any(isinstance(r, list) for r in out):
        raise TypeError("token ids mix ints and lists: give one list of ids, or one list per sequence")
    return out


def load(name_or_path: str | os.PathLike | None = None, device: str | torch.device = "auto", dtype=None,
         progress: bool = True, weights: str = "float") -> LanguageModel:
    """Load a Llama-family checkpoint into teachllm's decoder.

    name_or_path: None for the bundled SmolLM2-135M-Instruct; a local checkpoint folder; a .gguf file;
    or a Hugging Face Hub id. device: "auto" (CUDA if present, else CPU), "cpu", "cuda", ...
    dtype: None (bfloat16 on a GPU, float32 on the CPU), or "float32" / "bfloat16" / "float16".
    weights: "float" (every matrix de-quantised to `dtype`: the reference) or "gguf" (a GGUF file's
    matrices kept in their shipped 4- and 8-bit blocks, multiplied by PyTorch's packed int4 kernel on
    the CPU; see teachllm.quant). With "gguf", "auto" means the CPU.
    """
    if weights not in WEIGHTS:
        raise ValueError(f"weights must be one of {', '.join(WEIGHTS)}, got {weights!r}")
    if weights == "gguf":
        source = gguf_file(name_or_path)  # checked before any conversion starts
        device, dtype = gguf_device_dtype(device, dtype)
    device = resolve_device(device)
    dtype = resolve_dtype(dtype, device)
    ckpt = checkpoint(name_or_path, progress=progress)
    config = ModelConfig.from_pretrained(ckpt.folder)
    model = build_model(config, read_tensors(ckpt, progress=progress), device, dtype)
    if weights == "gguf":
        model = quantise_from_gguf(model, source)
    has_tokenizer = (ckpt.folder / "tokenizer.json").is_file() or (ckpt.folder / "tokenizer.model").is_file()
    tokenizer = Tokenizer.from_pretrained(ckpt.folder) if has_tokenizer else None
    name = "SmolLM2-135M-Instruct" if name_or_path is None else str(name_or_path)
    name += " (weights=gguf)" if weights == "gguf" else ""
    return LanguageModel(model, tokenizer, name=name)
