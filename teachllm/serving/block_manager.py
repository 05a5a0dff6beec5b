"""BlockManager: who owns which block of the paged KV cache (bookkeeping only; the tensors live in PagedKVCache).

PagedAttention's idea (vLLM, Kwon et al. 2023) is the operating system's: instead of reserving
`prompt + max_tokens` slots for every request in one contiguous piece, cut the cache into fixed
blocks of `block_size` tokens and hand them out one at a time as a request grows. Each request keeps a
block table, logical block i → physical block id, like a page table:

    request 7: tokens 0..15 → block 3, tokens 16..31 → block 9, tokens 32..37 → block 4 (6 of 16 used)

- Allocation on demand: a request holds ceil(tokens / block_size) blocks. Only its last block can be
  partly empty, so the waste is under one block per request (internal fragmentation):

      fragmentation = 1 − used slots / allocated slots

  A contiguous cache reserves prompt + max_tokens slots up front, and the unused part of that
  reservation is wasted for the request's whole life (`BlockUsage.contiguous_fragmentation`).
- Freeing at finish: the blocks go back to the free queue at once and serve the next request.
- Sharing (prefix caching): a full block is named by a chained hash of its tokens and of every token
  before it, h_i = hash(h_{i−1}, tokens of block i); the prefix is part of the name because a token's K
  and V depend on all the tokens before it. A new request whose first full blocks have known hashes
  reuses those blocks (ref_count += 1) instead of computing them. Freed blocks keep their contents and
  hash until the block is handed out again, so a prefix stays reusable after its request finished.
- Append-only sharing, so no copy-on-write: only full, computed blocks are shared, and a request writes
  only positions ≥ num_computed_tokens, which lie after its shared blocks. At least one prompt token is
  always computed (its logits give the first token), so at most (tokens − 1) // block_size blocks are
  taken from the cache.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import asdict, dataclass

from ..units import ceil_div
from .request import Request


@dataclass
class Block:
    block_id: int  # index into the KV pool
    ref_count: int = 0  # requests whose block table holds this block; 0 = free
    hash: int | None = None  # chained hash of its tokens once full and computed (prefix caching)
    token_ids: tuple[int, ...] = ()  # the tokens behind the hash (checked on a hit: hashes can collide)


@dataclass
class BlockUsage:
    """How full the pool is, as plain numbers (what the viz layer and the chapter read)."""
    num_blocks: int  # blocks in the pool
    block_size: int  # slots per block
    blocks_used: int  # blocks held by at least one request
    blocks_free: int  # blocks in the free queue
    blocks_cached_free: int  # free blocks that still hold a reusable prefix
    blocks_shared: int  # blocks held by more than one request
    slots_allocated: int  # blocks_used · block_size
    slots_used: int  # slots that hold a computed token (a shared slot counts once)
    fragmentation: float  # 1 − slots_used / slots_allocated (0 when nothing is allocated)
    contiguous_slots: int  # what contiguous caches would reserve: Σ (prompt + max_tokens) per request
    contiguous_fragmentation: float  # 1 − Σ computed tokens / contiguous_slots

    def to_dict(self) -> dict:
        return asdict(self)


def block_hash(parent: int | None, token_ids) -> int:
    """Name of a full block: hash of the previous block's name and this block's tokens (a chain).
    The first block's parent is -1, not None: hash(None) changes from process to process on Python 3.11."""
    return hash((-1 if parent is None else parent, tuple(token_ids)))


class BlockManager:
    def __init__(self, num_blocks: int, block_size: int, enable_prefix_caching: bool = True):
        if num_blocks < 1 or block_size < 1:
            raise ValueError(f"num_blocks and block_size must be ≥ 1, got {num_blocks} and {block_size}")
        self.block_size = block_size
        self.enable_prefix_caching = enable_prefix_caching
        self.blocks = [Block(i) for i in range(num_blocks)]
        # free blocks in eviction order: the front is handed out first (least recently freed)
        self.free_ids: OrderedDict[int, None] = OrderedDict((i, None) for i in range(num_blocks))
        self.hash_to_block: dict[int, int] = {}  # prefix cache: block hash → block id
        self.num_queried_tokens = 0  # tokens of admitted requests looked up in the prefix cache
        self.num_hit_tokens = 0  # of those, tokens found

    @property
    def num_blocks(self) -> int:
        return len(self.blocks)

    @property
    def num_free_blocks(self) -> int:
        return len(self.free_ids)

    def blocks_for(self, n_tokens: int) -> int:
        """Blocks needed to hold n_tokens: ceil(n_tokens / block_size)."""
        return ceil_div(n_tokens, self.block_size)

    # ---- prefix caching ------------------------------------------------------------------------
    def cached_prefix(self, request: Request) -> list[int]:
        """Ids of the blocks that already hold this request's first full blocks (looked up, not taken).
        For a request with nothing computed yet; at most (tokens − 1) // block_size blocks."""
        if not self.enable_prefix_caching or request.block_table:
            return []
        ids, bs = request.token_ids, self.block_size
        found, parent = [], None
        for i in range((len(ids) - 1) // bs):
            tokens = tuple(ids[i * bs:(i + 1) * bs])
            parent = block_hash(parent, tokens)
            block_id = self.hash_to_block.get(parent)
            if block_id is None or self.blocks[block_id].token_ids != tokens:
                break
            found.append(block_id)
        return found

    def seal(self, request: Request) -> None:
        """After a forward pass: name every block of `request` that is now full and computed, so later
        requests can find it. A name already taken by another block keeps pointing there."""
        if not self.enable_prefix_caching:
            return
        bs, ids = self.block_size, None
        for i in range(request.num_computed_tokens // bs):
            block = self.blocks[request.block_table[i]]
            if block.hash is not None:
                continue
            ids = request.token_ids if ids is None else ids
            parent = self.blocks[request.block_table[i - 1]].hash if i > 0 else None
            block.token_ids = tuple(ids[i * bs:(i + 1) * bs])
            block.hash = block_hash(parent, block.token_ids)
            self.hash_to_block.setdefault(block.hash, block.block_id)

    # ---- allocation ----------------------------------------------------------------------------
    def can_allocate(self, request: Request, n_new: int, cached: list[int] = ()) -> bool:
        """Whether the pool has room for `n_new` more tokens of `request` (after taking the `cached` blocks)."""
        total = request.num_computed_tokens + len(cached) * self.block_size + n_new
        fresh = self.blocks_for(total) - len(request.block_table) - len(cached)
        cached_now_free = sum(self.blocks[b].ref_count == 0 for b in cached)  # taking these empties the queue too
        return fresh + cached_now_free <= self.num_free_blocks

    def allocate(self, request: Request, n_new: int, cached: list[int] = ()) -> None:
        """Give `request` blocks for `n_new` more tokens: first the `cached` prefix blocks (shared: their
        tokens count as computed), then fresh blocks from the front of the free queue."""
        if not self.can_allocate(request, n_new, cached):
            raise RuntimeError(f"no room for {n_new} tokens of request {request.request_id}; "
                               "the scheduler should have checked can_allocate")
        first_admission = not request.block_table
        for block_id in cached:
            block = self.blocks[block_id]
            if block.ref_count == 0:
                del self.free_ids[block_id]
            block.ref_count += 1
            request.block_table.append(block_id)
        hit = len(cached) * self.block_size
        request.num_computed_tokens += hit
        request.num_cached_tokens += hit
        if self.enable_prefix_caching and first_admission:
            self.num_queried_tokens += request.num_tokens
            self.num_hit_tokens += hit
        total = request.num_computed_tokens + n_new
        while len(request.block_table) < self.blocks_for(total):
            request.block_table.append(self._take_free_block())

    def _take_free_block(self) -> int:
        block_id, _ = self.free_ids.popitem(last=False)
        block = self.blocks[block_id]
        if block.hash is not None:  # evict the prefix it held
            if self.hash_to_block.get(block.hash) == block_id:
                del self.hash_to_block[block.hash]
            block.hash, block.token_ids = None, ()
        block.ref_count = 1
        return block_id

    def free(self, request: Request) -> None:
        """Return the request's blocks (last block first, so a prefix's head stays cached longest)."""
        for block_id in reversed(request.block_table):
            block = self.blocks[block_id]
            block.ref_count -= 1
            if block.ref_count == 0:
                if block.hash is None:
                    self.free_ids[block_id] = None
                    self.free_ids.move_to_end(block_id, last=False)  # nothing worth keeping: reuse first
                else:
                    self.free_ids[block_id] = None  # keeps its prefix until evicted
        request.block_table.clear()

    # ---- looking at it -------------------------------------------------------------------------
    def usage(self, requests: list[Request]) -> BlockUsage:
        """Allocated against used slots for the requests holding blocks (the running ones)."""
        bs = self.block_size
        filled: dict[int, int] = {}  # block id → slots holding a computed token
        for r in requests:
            for i, block_id in enumerate(r.block_table):
                n = min(max(r.num_computed_tokens - i * bs, 0), bs)
                filled[block_id] = max(filled.get(block_id, 0), n)
        used_blocks = [b for b in self.blocks if b.ref_count > 0]
        allocated = len(used_blocks) * bs
        used = sum(filled.values())
        reserved = sum(len(r.prompt_ids) + r.params.max_tokens for r in requests)
        computed = sum(r.num_computed_tokens for r in requests)
        return BlockUsage(
            num_blocks=self.num_blocks, block_size=bs, blocks_used=len(used_blocks), blocks_free=self.num_free_blocks,
            blocks_cached_free=sum(self.blocks[i].hash is not None for i in self.free_ids),
            blocks_shared=sum(b.ref_count > 1 for b in used_blocks), slots_allocated=allocated, slots_used=used,
            fragmentation=1 - used / allocated if allocated else 0.0, contiguous_slots=reserved,
            contiguous_fragmentation=1 - computed / reserved if reserved else 0.0)

    def snapshot(self, requests: list[Request]) -> dict:
        """Block tables and reference counts as plain data: {"tables": {request id: [block ids]}, ...}."""
        return {"block_size": self.block_size,
                "tables": {r.request_id: list(r.block_table) for r in requests},
                "computed": {r.request_id: r.num_computed_tokens for r in requests},
                "ref_counts": {b.block_id: b.ref_count for b in self.blocks if b.ref_count > 0},
                "cached_free": [i for i in self.free_ids if self.blocks[i].hash is not None],  # reusable prefixes
                "num_free": self.num_free_blocks}

    @property
    def prefix_hit_rate(self) -> float:
        """Share of the tokens looked up at admission that were found in the prefix cache."""
        return self.num_hit_tokens / self.num_queried_tokens if self.num_queried_tokens else 0.0
