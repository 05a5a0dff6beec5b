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

import torch

from . import inputs
from .cache import KVCache
from .checkpoints.loading import (
    WEIGHTS,
    ModelNotFoundError,
    build_model,
    checkpoint,
    gguf_device_dtype,
    gguf_file,
    quantise_from_gguf,
    read_tensors,
    resolve_device,
    resolve_dtype,
)
from .config import ModelConfig
from .fastpath import fused, kernels
from .generate import generate, stream
from .model import Stage, Trace, Transformer
from .sampling import SamplingParams
from .tokenizer import Tokenizer
from .words import english

# a checkpoint folder (or .gguf file, or Hub id) that tl.load() loads instead of the bundled model: how a class
# runs the chapters on a model of its own, e.g. a Chinese-capable Qwen2.5-0.5B-Instruct (book: lecturer's guide)
MODEL_ENV = "TEACHLLM_MODEL"


class LanguageModel:
    def __init__(self, model: Transformer, tokenizer: Tokenizer | None, name: str = "model"):
        self.model = model
        self.config: ModelConfig = model.config
        self._tokenizer = tokenizer
        self.name = name
        self.kernels: kernels.Choice | None = None  # weights="gguf": which kernel multiplies each matrix, and why
        self.fast: fused.FastPath | None = None  # weights="gguf": the same forward pass in fewer operations
        self._kernel_key: str | None = None  # weights="gguf": names the model in the kernels' cache
        self.decode_path = "nothing generated yet"  # which loop the last generate / stream ran, and why (one line)

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

    def describe(self, tr=english) -> str:
        """What multiplies the weights: for weights="gguf", the kernel of each group of matrices and why it was
        chosen (teachllm.fastpath.kernels); otherwise the dtype every matrix is kept in. `tr`: the words'
        language (teachllm.words; teachllm.viz.tr for the reader's)."""
        if self.kernels is None:
            return tr("{name}: every matrix in {dtype}, multiplied by F.linear", name=self.name,
                      dtype=str(self.dtype).removeprefix("torch."))
        return f"{self.name}\n{self.kernels.describe(tr)}"

    def set_kernel(self, kernel: str = kernels.AUTO) -> None:
        """weights="gguf": put every matrix on `kernel` ("auto": the fastest faithful one per group, measured
        once per machine), and rebuild the fast path's stacked matrices on it. `print(lm.describe())` shows it."""
        if self._kernel_key is None:
            raise ValueError(f"{self.name} keeps no GGUF blocks: load it with tl.load(weights='gguf') to choose "
                             "kernels")
        self.kernels = kernels.configure(self, kernel, model_key=self._kernel_key)
        self.fast = fused.FastPath(self.model)

    def new_cache(self, max_len: int | None = None, batch_size: int = 1) -> KVCache:
        """An empty, preallocated KV cache for `batch_size` sequences of up to `max_len` tokens each
        (default: the model's whole context window)."""
        max_len = self.config.max_position_embeddings if max_len is None else max_len
        inputs.cache_size(self, max_len, batch_size)
        return KVCache(self.config, max_len, batch_size, dtype=self.dtype, device=self.device)

    # ---- the two phases ------------------------------------------------------------------------
    @torch.no_grad()
    def prefill(self, ids, cache: KVCache, trace: Trace | None = None) -> torch.Tensor:
        """Run the prompt through the model, storing its K and V in `cache`.

        ids: list[int] (one prompt), list[list[int]] (prompts of any lengths, left-padded here),
        or a LongTensor [B, S]. Returns the logits after the last prompt token: [B, V].
        """
        ids, pad = inputs.prefill_batch(ids, self, cache)  # [B, S], [B]
        if cache.length == 0:
            cache.start.copy_(pad)  # row b's real tokens start after pad[b] slots of padding
        if self.fast is not None and trace is None:
            return self.fast(ids, cache)[:, -1]  # [B, V]: the same pass, fewer operations (teachllm.fastpath.fused)
        return self.model(ids, cache, trace, last_only=True)[:, -1]  # [B, V]

    @torch.no_grad()
    def decode_step(self, token, cache: KVCache, trace: Trace | None = None) -> torch.Tensor:
        """Run one new token per sequence after what `cache` holds; returns the next logits [B, V].

        token: an int (batch 1), a list of B ints, or a LongTensor [B] or [B, 1].
        """
        token = inputs.decode_tokens(token, self, cache)  # [B, 1]
        if self.fast is not None and trace is None:
            return self.fast(token, cache)[:, -1]  # [B, V]: the same pass, fewer operations (teachllm.fastpath.fused)
        return self.model(token, cache, trace, last_only=True)[:, -1]  # [B, V]

    @torch.no_grad()
    def forward(self, ids, trace: Trace | None = None) -> torch.Tensor:
        """Logits at every position of `ids` (list[int] or LongTensor [B, S]) with no cache: [B, S, V]."""
        return self.model(inputs.sequences(ids, self), None, trace)  # [B, S, V]

    @torch.no_grad()
    def step_through(self, ids, cache: KVCache | None = None, trace: Trace | None = None):
        """The forward pass one stage at a time, to look between layers:

            for stage in lm.step_through(ids):
                print(stage.name, stage.output.shape)

        Yields the embedding, the output of each layer, the final norm and the logits (all positions).
        With a cache, it is filled as prefill would fill it. A walk stopped early leaves the cache as it
        was: the layers write K and V after its last slot, and the cache counts them only after the logits.
        """
        if cache is None:
            ids = inputs.sequences(ids, self)
        else:
            ids, pad = inputs.prefill_batch(ids, self, cache)
            if cache.length == 0:
                cache.start.copy_(pad)
        m = self.model  # the steps of Transformer.forward, with a stop after each
        B, S = ids.shape
        positions, rope, mask = m.prepare(S, B, cache)
        x = m.embed_tokens(ids)  # [B, S, h]
        if trace is not None:
            trace.positions, trace.mask, trace.embeddings = positions, mask, x
        yield Stage("embedding", x)
        for i, layer in enumerate(m.layers):
            x = layer(x, rope, mask, cache, trace)  # [B, S, h]
            yield Stage(f"layer {i}", x, i)
        x = m.norm(x)  # [B, S, h]
        yield Stage("final norm", x)
        logits = m.lm_head(x)  # [B, S, V]
        if cache is not None:
            cache.advance(S)
        if trace is not None:
            trace.final_hidden, trace.logits = x, logits
        yield Stage("logits", logits)

    # ---- text in, text out ---------------------------------------------------------------------
    def generate(self, prompt, params: SamplingParams | None = None, fast: bool | None = None):
        """Generate a continuation.

        prompt: a string, a list of token ids, or a list of either (a batch).
        Returns one `GenerationOutput` (text, token_ids, finish_reason, logprobs, metrics), or a list
        of them for a list of prompts.
        fast: None (default) takes the GPU's fast path on CUDA (teachllm/fastpath/loop.py: the same stop rules,
        fewer waits for the device) and generate.py's loop elsewhere; False always the loop; True the fast path
        wherever it supports `params`. `lm.decode_path` says which ran and why.
        """
        prompts, params, single = inputs.request(prompt, params, self)
        outputs = generate(self, prompts, params, fast=fast)
        return outputs[0] if single else outputs

    def stream(self, prompt, params: SamplingParams | None = None, fast: bool | None = None):
        """Yield text pieces as tokens arrive (one prompt: a string or a list of ids). fast: as in `generate`."""
        prompts, params, single = inputs.request(prompt, params, self)
        if not single:
            raise ValueError("stream takes one prompt; use generate for a batch")
        yield from stream(self, prompts[0], params, fast=fast)


def load(name_or_path: str | os.PathLike | None = None, device: str | torch.device = "auto", dtype=None,
         progress: bool = True, weights: str = "float", kernel: str = "auto") -> LanguageModel:
    """Load a Llama-family checkpoint into teachllm's decoder.

    name_or_path: None for the bundled SmolLM2-135M-Instruct (or what TEACHLLM_MODEL names, when it is set); a
    local checkpoint folder; a .gguf file; or a Hugging Face Hub id.
    device: "auto" (CUDA if present, else CPU), "cpu", "cuda", ...
    dtype: None (bfloat16 on a GPU, float32 on the CPU), or "float32" / "bfloat16" / "float16".
    weights: "float" (every matrix de-quantised to `dtype`: the reference) or "gguf" (a GGUF file's
    matrices kept in their shipped 4- and 8-bit blocks, multiplied on the CPU by the kernel chosen for it;
    see teachllm.fastpath.quant and teachllm.fastpath.kernels). With "gguf", "auto" means the CPU.
    kernel (weights="gguf" only): "auto" (the fastest faithful kernel for each group of matrices on this machine,
    measured at the first load, a few seconds, then read from the cache) or one of teachllm.fastpath.kernels.KERNELS
    for every matrix ("int4", "avx2", "avx512", "float16", "bfloat16", "float32"; "int8" and "dynamic-int8" to compare).
    """
    if weights not in WEIGHTS:
        raise ValueError(f"weights must be one of {', '.join(WEIGHTS)}, got {weights!r}")
    if name_or_path is None and os.environ.get(MODEL_ENV, "").strip():
        name_or_path = os.environ[MODEL_ENV].strip()
    if kernel != kernels.AUTO and (weights != "gguf" or kernel not in kernels.KERNELS):
        raise ValueError(f"kernel={kernel!r}: kernel is 'auto' or one of {', '.join(kernels.KERNELS)}, and only "
                         "with weights='gguf'")
    if weights == "gguf":
        source = gguf_file(name_or_path)  # checked before any conversion starts
        device, dtype = gguf_device_dtype(device, dtype)
    device = resolve_device(device)
    dtype = resolve_dtype(dtype, device)
    try:
        ckpt = checkpoint(name_or_path, progress=progress)
    except ModelNotFoundError as error:
        if name_or_path != os.environ.get(MODEL_ENV, "").strip():
            raise
        raise ModelNotFoundError(f"{MODEL_ENV}={name_or_path!r} is set in the environment and tl.load() cannot read "
                                 f"it (unset {MODEL_ENV} to load the bundled model): {error}") from None
    config = ModelConfig.from_pretrained(ckpt.folder)
    model = build_model(config, read_tensors(ckpt, progress=progress), device, dtype)
    if weights == "gguf":
        model = quantise_from_gguf(model, source)
    has_tokenizer = (ckpt.folder / "tokenizer.json").is_file() or (ckpt.folder / "tokenizer.model").is_file()
    tokenizer = Tokenizer.from_pretrained(ckpt.folder) if has_tokenizer else None
    name = "SmolLM2-135M-Instruct" if name_or_path is None else str(name_or_path)
    name += " (weights=gguf)" if weights == "gguf" else ""
    lm = LanguageModel(model, tokenizer, name=name)
    if weights == "gguf":
        lm._kernel_key = f"{name} {source.name} {source.stat().st_size}"
        lm.set_kernel(kernel)
    return lm
