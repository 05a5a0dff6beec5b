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

import os
from dataclasses import dataclass

import torch

from .cache import KVCache
from .config import ModelConfig
from .loading import build_model, checkpoint_folder, read_safetensors, resolve_device, resolve_dtype
from .model import Trace, Transformer
from .sampling import SamplingParams
from .tokenizer import Tokenizer


@dataclass
class Stage:
    """One stop of `step_through`: the hidden state after a named stage of the forward pass."""
    name: str  # "embedding", "layer 0" … "layer L-1", "final norm", "logits"
    output: torch.Tensor  # [B, S, h] hidden states, or [B, S, V] logits for the last stage
    index: int | None = None  # layer index for the layer stages


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
        if cache.length == 0:
            raise ValueError("decode_step needs a cache that prefill has filled; call lm.prefill(ids, cache) first")
        token = self._as_tensor(token).reshape(-1, 1)  # [B, 1]
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
        return self.model(ids, None, trace)

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
        m = self.model
        _, rope, mask = m.prepare(ids, cache)
        h = m.embed_tokens(ids)  # [B, S, h]
        yield Stage("embedding", h)
        for i, layer in enumerate(m.layers):
            h = layer(h, rope, mask, cache, trace)  # [B, S, h]
            yield Stage(f"layer {i}", h, i)
        h = m.norm(h)
        yield Stage("final norm", h)
        if cache is not None:
            cache.advance(ids.shape[1])
        yield Stage("logits", m.lm_head(h))  # [B, S, V]

    # ---- text in, text out ---------------------------------------------------------------------
    def generate(self, prompt, params: SamplingParams | None = None):
        """Generate a continuation.

        prompt: a string, a list of token ids, or a list of either (a batch).
        Returns one `GenerationOutput` (text, token_ids, finish_reason, logprobs, metrics), or a list
        of them for a list of prompts.
        """
        from .generate import generate

        prompts, single = self._prompts(prompt)
        outputs = generate(self, prompts, params or SamplingParams())
        return outputs[0] if single else outputs

    def stream(self, prompt, params: SamplingParams | None = None):
        """Yield text pieces as tokens arrive (one prompt: a string or a list of ids)."""
        from .generate import stream

        prompts, single = self._prompts(prompt)
        if not single:
            raise ValueError("stream takes one prompt; use generate for a batch")
        yield from stream(self, prompts[0], params or SamplingParams())

    def _prompts(self, prompt) -> tuple[list[list[int]], bool]:
        """Prompt(s) as lists of ids, and whether a single prompt was given."""
        if isinstance(prompt, str):
            return [self.tokenizer.encode(prompt)], True
        if isinstance(prompt, torch.Tensor):
            prompt = prompt.tolist()
        if isinstance(prompt, (list, tuple)) and prompt and all(isinstance(i, int) for i in prompt):
            return [list(prompt)], True
        if isinstance(prompt, (list, tuple)) and prompt:
            return [self._prompts(p)[0][0] for p in prompt], False
        raise ValueError(f"a prompt must be a non-empty string, list of token ids, or list of those; got {prompt!r}")

    # ---- checking what comes in ----------------------------------------------------------------
    def _as_tensor(self, ids) -> torch.Tensor:
        if isinstance(ids, torch.Tensor):
            if ids.dtype not in (torch.int64, torch.int32):
                raise TypeError(f"token ids must be an integer tensor, got dtype {ids.dtype}")
            ids = ids.to(self.device, torch.long)
        else:
            if isinstance(ids, int):
                ids = [ids]
            ids = torch.tensor(ids, dtype=torch.long, device=self.device)
        if ids.numel() == 0:
            raise ValueError("empty prompt: at least one token id is needed")
        bad = (ids < 0) | (ids >= self.config.vocab_size)
        if bool(bad.any()):
            raise ValueError(f"token id {int(ids[bad][0])} is outside the vocabulary: ids must be in "
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
        if cache.batch_size != batch:
            raise ValueError(f"{batch} sequence(s) given, but the cache was made for batch_size={cache.batch_size}")
        if cache.k.device != self.device or cache.k.dtype != self.dtype:
            raise ValueError(f"the cache is {cache.k.dtype} on {cache.k.device}, the model {self.dtype} on "
                             f"{self.device}; make it with lm.new_cache(...)")


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
    from .loading import WEIGHTS, gguf_file, quantise_from_gguf

    if weights not in WEIGHTS:
        raise ValueError(f"weights must be one of {', '.join(WEIGHTS)}, got {weights!r}")
    if weights == "gguf":
        source = gguf_file(name_or_path)  # checked before any conversion starts
        device = torch.device("cpu") if str(device) == "auto" else device
    device = resolve_device(device)
    dtype = resolve_dtype(dtype, device)
    folder = checkpoint_folder(name_or_path, progress=progress)
    config = ModelConfig.from_pretrained(folder)
    model = build_model(config, read_safetensors(folder), device, dtype)
    if weights == "gguf":
        model = quantise_from_gguf(model, source, device, dtype)
    has_tokenizer = (folder / "tokenizer.json").is_file() or (folder / "tokenizer.model").is_file()
    tokenizer = Tokenizer.from_pretrained(folder) if has_tokenizer else None
    name = "SmolLM2-135M-Instruct" if name_or_path is None else str(name_or_path)
    name += " (weights=gguf)" if weights == "gguf" else ""
    return LanguageModel(model, tokenizer, name=name)
