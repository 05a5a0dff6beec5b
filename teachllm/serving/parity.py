"""The paged cache against the contiguous one: the same tokens must give the same logits.

`compare_with_contiguous` runs a few prompts through the paged path the way the engine does —
blocks from the BlockManager (prefix caching on), one batched prefill call with left padding, then
batched decode calls — and each prompt alone through `lm.prefill` / `lm.decode_step` with the
contiguous `KVCache`. Both paths are fed the same tokens (the contiguous run's greedy choices), so
the logits can be compared step by step. The first prompt is prefilled on its own first, so prompts
that share its prefix find its full blocks in the prefix cache and compute only the rest.

With `batched=False` every forward call holds one sequence, as the contiguous reference does: what
is left is the paging alone (on a CPU it is bit-exact for a prompt without a cached prefix). Batched
calls add the small differences of a matrix product computed at another shape (≈ 1e-5 on logits of
magnitude ≈ 20), which the contiguous cache shows too when it batches.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from ..generate import greedy
from ..sampling import SamplingParams
from ..units import ceil_div
from .block_manager import BlockManager
from .paged_cache import PagedKVCache
from .request import Request


@dataclass
class ParityReport:
    block_size: int  # tokens per block
    batched: bool  # several sequences per forward call (as the engine runs them)
    max_abs_error: float  # max |paged − contiguous| over every logit compared
    errors: list[float]  # the same, per prompt
    cached_tokens: list[int]  # per prompt: tokens taken from the prefix cache instead of computed
    block_tables: list[list[int]]  # per prompt, after the last step

    def to_dict(self) -> dict:
        return asdict(self)


def contiguous_logits(lm, prompt: list[int], n_decode: int) -> tuple[list[torch.Tensor], list[int]]:
    """Greedy prefill + n_decode steps with the contiguous cache: logits [V] of each step, and the tokens."""
    tokens, logits = greedy(lm, prompt, n_decode + 1)  # n_decode + 1 logits; the last token is not fed back
    return logits, tokens[:n_decode]


@torch.no_grad()
def compare_with_contiguous(lm, prompts: list[list[int]], block_size: int, n_decode: int = 4,
                            batched: bool = True, reference: list | None = None) -> ParityReport:
    """Max |paged − contiguous| over the logits of each prompt's prefill and n_decode greedy steps.
    `reference`: the contiguous runs, [contiguous_logits(lm, p, n_decode) for p in prompts], if already made."""
    reference = reference or [contiguous_logits(lm, p, n_decode) for p in prompts]
    longest = max(len(p) for p in prompts) + n_decode
    num_blocks = len(prompts) * ceil_div(longest, block_size) + 1
    pool = PagedKVCache(lm.config, num_blocks, block_size, dtype=lm.dtype, device=lm.device)
    manager = BlockManager(num_blocks, block_size, enable_prefix_caching=True)
    manager.free_ids.move_to_end(0)  # hand out block 1 first: block tables need not start at 0 or be in order
    requests = [Request(i, p, SamplingParams(max_tokens=n_decode + 1)) for i, p in enumerate(prompts)]
    got: list[list[torch.Tensor]] = [[] for _ in prompts]

    def forward(batch: list[Request], new: list[list[int]]) -> None:
        if not batched and len(batch) > 1:
            for r, t in zip(batch, new, strict=True):
                forward([r], [t])
            return
        width = max(len(t) for t in new)
        ids = torch.tensor([[0] * (width - len(t)) + t for t in new], device=lm.device)  # [B, S] left-padded
        view = pool.view([r.block_table for r in batch], [r.num_computed_tokens for r in batch],
                         [len(t) for t in new])
        logits = lm.model(ids, view, last_only=True)[:, -1]  # [B, V]
        for r, t, row in zip(batch, new, logits, strict=True):
            r.num_computed_tokens += len(t)
            manager.seal(r)
            got[r.request_id].append(row)

    # prefill: the first prompt alone, then the others together (finding its full blocks if they share them)
    for group in (requests[:1], requests[1:]):
        if not group:
            continue
        new = []
        for r in group:
            cached = manager.cached_prefix(r)
            n = r.num_tokens - len(cached) * block_size
            manager.allocate(r, n, cached)
            new.append(r.prompt_ids[r.num_computed_tokens:])
        forward(group, new)
    # decode: everybody together, fed the contiguous run's tokens
    for step in range(n_decode):
        for r, (_, tokens) in zip(requests, reference, strict=True):
            r.seq.append(tokens[step], 0.0)
            manager.allocate(r, 1)
        forward(requests, [[tokens[step]] for _, tokens in reference])

    errors = [max(float((a - b).abs().max()) for a, b in zip(mine, ref, strict=True))
              for mine, (ref, _) in zip(got, reference, strict=True)]
    return ParityReport(block_size=block_size, batched=batched, max_abs_error=max(errors), errors=errors,
                        cached_tokens=[r.num_cached_tokens for r in requests],
                        block_tables=[list(r.block_table) for r in requests])
