"""Scheduler: which requests run in the next iteration, and how many tokens each computes.

One iteration = one step of every running request: a decode computes one token (the one sampled last
time), a prefill computes its prompt, or a chunk of it. The scheduler decides, in this order:

1. decodes: every running request that has finished its prompt computes one token. Oldest first; if
   the pool has no block for it, the newest running request is preempted (its blocks are freed and it
   goes back to the front of the queue, to be recomputed later; vLLM's "recompute" preemption).
2. unfinished prefills (chunked prefill only): the next chunk of a prompt, as large as the token budget
   left over after the decodes allows.
3. admissions: waiting requests join, first come first served, while fewer than `max_num_seqs` run,
   the budget lasts and the pool has blocks. With prefix caching their first full blocks may already
   be in the pool; only the rest is computed. The policy decides when this step may run:

   - continuous batching: every iteration — a finished request's place is taken at once;
   - static batching: only when nothing is running — a batch is formed, runs until its last request
     finishes, and only then is the next batch formed.

Token budget (`max_num_batched_tokens`): decodes count 1 each, prefills their chunk length. Without
chunked prefill a prompt is prefilled whole, so a long prompt waits until the budget has room for it
(or runs alone in an otherwise empty iteration); with chunked prefill it takes what is left each
iteration, so decodes are never held up by a long prompt (Sarathi-Serve, vLLM's chunked prefill).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from .block_manager import BlockManager
from .config import ServingConfig
from .request import Request, RequestStatus


@dataclass
class ScheduledBatch:
    """What one iteration computes."""
    decodes: list[Request] = field(default_factory=list)  # one token each: the one sampled last iteration
    prefills: list[tuple[Request, int]] = field(default_factory=list)  # (request, tokens of its prompt to compute)
    preempted: list[Request] = field(default_factory=list)  # sent back to the queue to free blocks

    @property
    def num_tokens(self) -> int:
        """Tokens this iteration computes (what the token budget limits)."""
        return len(self.decodes) + sum(n for _, n in self.prefills)

    @property
    def empty(self) -> bool:
        return not self.decodes and not self.prefills


class Scheduler:
    def __init__(self, config: ServingConfig, block_manager: BlockManager):
        self.config = config
        self.block_manager = block_manager
        self.waiting: deque[Request] = deque()  # first come, first served; preempted requests go to the front
        self.running: list[Request] = []  # in order of admission (oldest first)

    def add(self, request: Request) -> None:
        self.waiting.append(request)

    @property
    def has_unfinished(self) -> bool:
        return bool(self.waiting or self.running)

    def schedule(self) -> ScheduledBatch:
        cfg, bm = self.config, self.block_manager
        budget = cfg.max_num_batched_tokens if cfg.max_num_batched_tokens is not None else math.inf  # tokens this step
        admitting = cfg.policy == "continuous" or not self.running  # static: only an idle engine forms a batch
        batch = ScheduledBatch()
        scheduled: set[int] = set()

        # 1. decodes, oldest first
        for request in list(self.running):
            if request.is_prefill or request.status is not RequestStatus.RUNNING:
                continue
            if self._make_room(request, 1, scheduled, batch):
                bm.allocate(request, 1)
                batch.decodes.append(request)
                scheduled.add(request.request_id)
                budget -= 1

        # 2. prompts already started in chunks
        for request in list(self.running):
            if not request.is_prefill or request.status is not RequestStatus.RUNNING or budget <= 0:
                continue
            n = min(request.num_uncomputed, budget)
            if self._make_room(request, n, scheduled, batch):
                bm.allocate(request, n)
                batch.prefills.append((request, n))
                scheduled.add(request.request_id)
                budget -= n

        # 3. admissions (not in an iteration that had to preempt: the pool is full)
        admitting = admitting and not batch.preempted
        while admitting and self.waiting and len(self.running) < cfg.max_num_seqs and budget > 0:
            request = self.waiting[0]
            cached = bm.cached_prefix(request)
            n = request.num_tokens - len(cached) * bm.block_size
            if n > budget:
                if cfg.chunked_prefill:
                    n = budget
                elif not batch.empty:
                    break  # a whole prompt must fit; alone in an iteration it may exceed the budget
            if not bm.can_allocate(request, n, cached):
                break
            bm.allocate(request, n, cached)
            self.waiting.popleft()
            request.status = RequestStatus.RUNNING
            self.running.append(request)
            batch.prefills.append((request, n))
            scheduled.add(request.request_id)
            budget -= n
        return batch

    def _make_room(self, request: Request, n: int, scheduled: set[int], batch: ScheduledBatch) -> bool:
        """Preempt the newest running requests not yet scheduled this iteration until `request` has room
        for n tokens; if there is no one left to preempt, preempt `request` itself and return False."""
        bm = self.block_manager
        while not bm.can_allocate(request, n):
            victims = [r for r in self.running if r is not request and r.request_id not in scheduled]
            victim = victims[-1] if victims else request
            self.preempt(victim)
            batch.preempted.append(victim)
            if victim is request:
                return False
        return True

    def preempt(self, request: Request) -> None:
        """Free its blocks and put it back at the front of the queue (it will be recomputed)."""
        self.block_manager.free(request)
        self.running.remove(request)
        request.preempt()
        self.waiting.appendleft(request)

    def finish(self, request: Request) -> None:
        """A stop rule fired: free its blocks at once, so waiting requests can use them."""
        self.block_manager.free(request)
        self.running.remove(request)
        request.status = RequestStatus.FINISHED

    def remove(self, request: Request) -> None:
        """Take out a request that failed or was aborted: free its blocks, drop it from the queue or the batch."""
        self.block_manager.free(request)
        if request in self.running:
            self.running.remove(request)
        elif request in self.waiting:
            self.waiting.remove(request)
