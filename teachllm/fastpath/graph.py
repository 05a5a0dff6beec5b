"""Decode with no host synchronisation, and the same step recorded once as a CUDA graph and replayed.

Who reads it: the GPU fast path and the tests; the chapters read lm.decode_step and generate.py, which check
their inputs, sample on the host's terms and read every token back (each read waits for the device).

    prefill(model, ids, cache)        eager, once per prompt: checks at the edge, then the forward pass
    decode_step(model, ids, cache)    one token per row, greedy argmax on the device: no Python number is read
                                      from a device tensor, and no shape changes from one step to the next
    CudaGraphDecoder(model, cache)    decode_step recorded as a CUDA graph per batch size (1, 2, 4, 8, 16, 32),
                                      replayed after copying the new ids into the graph's input in place; a batch
                                      is padded to the next recorded size. Where CUDA is absent: decode_step itself.
                                      `.step(ids)` gives the step's logits too (for sampling, fastpath/loop.py)

`model` is model.py's Transformer, or the same weights as a FusedStep (fused_float.py: stacked q/k/v and gate/up,
a RoPE table; what loop.py decodes with where it applies): anything called as model(ids, cache, last_only=True)
that has a `.config`.

The graph follows nano-vllm's `capture_cudagraph` (GeeeekExplorer/nano-vllm, engine/model_runner.py): static
input and output buffers of the largest batch, one graph per batch size sharing one memory pool, largest first,
each after a warm-up run; a step copies its inputs into the buffers' first rows and replays. The static cache
(static_cache.py) is what makes the replay valid: its buffers, length and positions never move or change shape.
"""

from __future__ import annotations

import torch

from ..model import Transformer
from .fused_float import FusedStep
from .static_cache import StaticKVCache

BATCH_SIZES = (1, 2, 4, 8, 16, 32)  # the batch sizes a CudaGraphDecoder records; a batch pads to the next one


def check_ids(ids: torch.Tensor, cache: StaticKVCache, n_new: int | None = None) -> torch.Tensor:
    """The checks at the edge, on shapes, dtypes and devices only (none reads a value from the device): ids as
    [B, S] on the cache's device."""
    if not isinstance(ids, torch.Tensor) or ids.dtype != torch.long:
        raise ValueError(f"token ids must be a LongTensor on the cache's device ({cache.k.device}), "
                         f"got {type(ids).__name__} {getattr(ids, 'dtype', '')}; "
                         f"make them with torch.tensor(ids, dtype=torch.long, device=...)")
    if ids.device != cache.k.device:
        raise ValueError(f"token ids are on {ids.device} and the cache on {cache.k.device}; "
                         f"move the ids with ids.to('{cache.k.device}')")
    ids = ids[:, None] if ids.dim() == 1 and n_new == 1 else ids  # [B] → [B, 1] for a decode step
    if ids.dim() != 2 or (n_new is not None and ids.shape[1] != n_new):
        want = "[B] or [B, 1]" if n_new == 1 else "[B, S]"
        raise ValueError(f"token ids of shape {list(ids.shape)}; give {want}")
    if ids.shape[0] != cache.batch_size:
        raise ValueError(f"{ids.shape[0]} rows of token ids for a cache of batch_size={cache.batch_size}; "
                         f"give {cache.batch_size} rows, or use cache.rows({ids.shape[0]})")
    cache.check_room(ids.shape[1])
    return ids


@torch.no_grad()
def prefill(model: Transformer | FusedStep, ids: torch.Tensor, cache: StaticKVCache, pad: torch.Tensor | None = None):
    """Run prompts [B, S] (left-padded: row b's first pad[b] ids are padding) into an empty `cache`; returns
    the logits after the last prompt token [B, V]. Eager: prefill runs once per prompt."""
    if cache.filled != 0:
        raise ValueError(f"prefill wants an empty cache and this one holds {cache.filled} tokens; "
                         f"call cache.reset() first")
    ids = check_ids(ids, cache)  # [B, S]
    if pad is not None:
        cache.start.copy_(pad)  # [B] row b's real tokens start after pad[b] slots of padding
    return model(ids, cache, last_only=True)[:, -1]  # [B, V]


@torch.no_grad()
def decode_step(model: Transformer | FusedStep, ids: torch.Tensor, cache: StaticKVCache) -> torch.Tensor:
    """One token per row [B] (or [B, 1]) after what `cache` holds; returns the greedy next ids [B], on the
    device. Nothing here waits for the device: the checks read shapes and the host count, the argmax stays
    on the device, and the caller decides when to read the ids back."""
    ids = check_ids(ids, cache, n_new=1)  # [B, 1]
    logits = model(ids, cache, last_only=True)[:, -1]  # [B, V]
    return logits.argmax(dim=-1)  # [B]


class CudaGraphDecoder:
    """decode_step, recorded as one CUDA graph per batch size and replayed. Where CUDA is absent (or the cache
    is not on a CUDA device) it makes no graph and each call is the eager decode_step; `reason` says which.

    Make it on an empty cache, then prefill: recording the graphs runs a warm-up step and empties the cache.
    Decode a batch of n rows through the first n rows of `cache` (prefill them with cache.rows(n)); a batch is
    padded to the next recorded size, and the padding rows compute into rows of the cache no sequence uses."""

    def __init__(self, model: Transformer | FusedStep, cache: StaticKVCache, batch_sizes: tuple[int, ...] = BATCH_SIZES,
                 record: bool = True):
        if cache.filled != 0:
            raise ValueError(f"make the CudaGraphDecoder before prefill: its cache already holds {cache.filled} "
                             f"tokens, and recording the graphs empties it; call cache.reset() first")
        self.model, self.cache = model, cache
        largest = min(cache.batch_size, max(batch_sizes))  # no batch is larger than the cache's rows
        self.batch_sizes = sorted({b for b in batch_sizes if b < largest} | {largest})
        self.graphs: dict[int, torch.cuda.CUDAGraph] = {}
        if not record:
            self.reason = "recording was not asked for (record=False): each step runs eagerly (decode_step)"
        elif not torch.cuda.is_available():
            self.reason = "CUDA is not available here: each step runs eagerly (decode_step)"
        elif cache.k.device.type != "cuda":
            self.reason = f"the cache is on {cache.k.device}, not a CUDA device: each step runs eagerly (decode_step)"
        else:
            self.reason = f"CUDA graphs recorded for batch sizes {self.batch_sizes}"
            self.capture()

    @property
    def uses_graphs(self) -> bool:
        return bool(self.graphs)

    @torch.no_grad()
    def capture(self) -> None:
        """nano-vllm's capture_cudagraph: static buffers of the largest batch, a warm-up run and a recorded run
        per batch size, largest first, all graphs in one memory pool. The cache is left empty afterwards."""
        largest = self.batch_sizes[-1]
        device = self.cache.k.device
        self.input_ids = torch.zeros(largest, 1, dtype=torch.long, device=device)  # [B_max, 1]
        self.next_ids = torch.zeros(largest, dtype=torch.long, device=device)  # [B_max]
        self.logits = torch.zeros(largest, self.model.config.vocab_size, dtype=self.cache.k.dtype,
                                  device=device)  # [B_max, V]
        pool = None
        for bs in reversed(self.batch_sizes):
            rows = self.cache.rows(bs)
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):  # warm-up on a side stream, as torch.cuda.graph asks
                self._record(bs, rows)
            torch.cuda.current_stream().wait_stream(side)
            self.cache.reset()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool):
                self._record(bs, rows)
            pool = graph.pool() if pool is None else pool
            self.graphs[bs] = graph
            torch.cuda.synchronize()
            self.cache.reset()  # recording ran no kernels, but its Python counted a step on the host

    def _record(self, bs: int, rows: StaticKVCache) -> None:
        """What a graph holds: one step's logits and their argmax, written into the static output buffers."""
        ids = check_ids(self.input_ids[:bs], rows, n_new=1)  # [bs, 1]
        logits = self.model(ids, rows, last_only=True)[:, -1]  # [bs, V]
        self.logits[:bs] = logits
        self.next_ids[:bs] = logits.argmax(dim=-1)

    def padded_size(self, n: int) -> int:
        """The recorded batch size a batch of n rows runs as: the smallest one at least n."""
        for bs in self.batch_sizes:
            if bs >= n:
                return bs
        raise ValueError(f"a batch of {n} rows is larger than the largest recorded batch size, "
                         f"{self.batch_sizes[-1]}; split the batch, or make the StaticKVCache with batch_size={n} "
                         f"and give batch_sizes with a size of at least {n}")

    @torch.no_grad()
    def __call__(self, ids: torch.Tensor) -> torch.Tensor:
        """The next greedy ids [n] for the last ids [n] (or [n, 1]) of n rows; on the device."""
        return self.step(ids)[1]

    @torch.no_grad()
    def step(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One decode step for the last ids [n] (or [n, 1]) of n rows: (the logits [n, V], their argmax [n]), on
        the device. With graphs, the logits are a view of the graph's output buffer: the next step overwrites
        them, so use them (sample from them) before the next call."""
        n = ids.shape[0] if isinstance(ids, torch.Tensor) and ids.dim() >= 1 else None
        if n is None:
            raise ValueError(f"token ids must be a LongTensor [n] or [n, 1], got {ids!r}")
        bs = self.padded_size(n)
        if not self.graphs:
            ids = check_ids(ids, self.cache.rows(n), n_new=1)  # [n, 1]
            logits = self.model(ids, self.cache.rows(n), last_only=True)[:, -1]  # [n, V]
            return logits, logits.argmax(dim=-1)
        ids = check_ids(ids, self.cache.rows(n), n_new=1)  # [n, 1]
        self.input_ids[:n].copy_(ids)  # in place: the graph reads these addresses
        self.graphs[bs].replay()
        self.cache.root._filled += 1  # the replay moved the device's length; the host count follows
        return self.logits[:n], self.next_ids[:n].clone()  # [n, V], [n]
