"""ServingEngine: many requests, one model, a paged KV cache, iteration by iteration.

    engine = ServingEngine(lm, ServingConfig(policy="continuous", max_num_seqs=8))
    run = engine.run(["Hello", "The sky is"], SamplingParams(temperature=0, max_tokens=16))
    run.outputs[0].text, run.summary(), run.timeline[3]

Each `step()` is one iteration:

    schedule ──► decode call  [B_d, 1]    (one token per decoding request)
             ──► prefill call [B_p, S]    (prompt chunks, left-padded to the longest)
             ──► for every request whose tokens are all computed: process logits, sample, stop rules
             ──► finished requests free their blocks; the iteration goes into the timeline

Decodes and prefills run as two separate forward calls on the same weights: a decode row padded to a
prefill chunk's width would compute S tokens to use one. (vLLM instead flattens all tokens of an
iteration into one call with a custom attention kernel; the [B, S] decoder here keeps shapes plain.)

Sampling reuses teachllm.sampling (`process_logits`, `sample`) and the stop rules of
teachllm.generate.Sequence, so with temperature 0 every request gets exactly the tokens that
`lm.generate(prompt, params)` gives it alone.
"""

from __future__ import annotations

import time

import torch

from ..sampling import SamplingParams, process_logits, sample, top_logprobs
from ..timing import synchronize
from .block_manager import BlockManager
from .config import ServingConfig
from .metrics import IterationRecord, ServingRun
from .paged_cache import PagedKVCache
from .request import Request
from .scheduler import ScheduledBatch, Scheduler


class ServingEngine:
    def __init__(self, lm, config: ServingConfig | None = None):
        self.lm = lm
        self.config = config or ServingConfig()
        cfg = self.config
        self.cache = PagedKVCache(lm.config, cfg.num_blocks, cfg.block_size, dtype=lm.dtype, device=lm.device)
        self.block_manager = BlockManager(cfg.num_blocks, cfg.block_size, cfg.enable_prefix_caching)
        self.scheduler = Scheduler(cfg, self.block_manager)
        self.requests: list[Request] = []  # every request ever added, by id
        self.timeline: list[IterationRecord] = []  # every iteration ever run
        self._generators: dict[int, torch.Generator] = {}  # per-request random generators (seeded requests)
        self._t0: float | None = None  # the engine's clock starts at the first request

    # ---- requests in -----------------------------------------------------------------------------
    def now(self) -> float:
        """Seconds since the clock started (it starts with the first request)."""
        if self._t0 is None:
            self._t0 = time.perf_counter()
        return time.perf_counter() - self._t0

    def add_request(self, prompt, params: SamplingParams | None = None) -> int:
        """Queue a prompt (text, a list of token ids or a 1-D tensor of them); returns its request id."""
        params = params or SamplingParams()
        if params.num_beams > 1:
            raise ValueError("the serving engine does not do beam search; use lm.generate for num_beams > 1")
        if isinstance(prompt, torch.Tensor):
            prompt = prompt.reshape(-1).tolist()
        ids = self.lm.tokenizer.encode(prompt) if isinstance(prompt, str) else list(prompt)
        if not ids:
            raise ValueError("empty prompt: a request needs at least one token")
        if not all(isinstance(i, int) and 0 <= i < self.lm.config.vocab_size for i in ids):
            raise ValueError(f"token ids must be integers in 0 .. {self.lm.config.vocab_size - 1}")
        cfg, window = self.config, self.lm.config.max_position_embeddings
        total = len(ids) + params.max_tokens
        if total > window:
            raise ValueError(f"a prompt of {len(ids)} tokens plus max_tokens={params.max_tokens} exceeds the "
                             f"model's context window of {window} tokens")
        if total > cfg.num_slots:
            raise ValueError(f"a prompt of {len(ids)} tokens plus max_tokens={params.max_tokens} needs {total} "
                             f"KV slots, but the pool holds {cfg.num_slots} ({cfg.num_blocks} blocks × "
                             f"{cfg.block_size}); raise ServingConfig.num_blocks")
        tokenizer = self.lm.tokenizer if self.lm.has_tokenizer else None
        request = Request(len(self.requests), ids, params, tokenizer, self.lm.config.eos_token_ids,
                          arrival_s=self.now(), arrival_iteration=len(self.timeline))
        if params.seed is not None:
            self._generators[request.request_id] = torch.Generator(device=self.lm.device).manual_seed(params.seed)
        self.requests.append(request)
        self.scheduler.add(request)
        return request.request_id

    @property
    def has_unfinished(self) -> bool:
        return self.scheduler.has_unfinished

    # ---- one iteration -------------------------------------------------------------------------
    @torch.no_grad()
    def step(self) -> IterationRecord:
        start = self.now()
        batch = self.scheduler.schedule()
        if batch.empty:
            raise RuntimeError("the scheduler found nothing to run: no request fits in the KV pool")
        work = [(r, 1) for r in batch.decodes] + batch.prefills  # (request, tokens to compute)
        first_positions = {r.request_id: r.num_computed_tokens for r, _ in batch.prefills}
        logits = []  # [B, V] per forward call, rows in the order of `work`
        if batch.decodes:
            logits.append(self._forward([(r, 1) for r in batch.decodes]))
        if batch.prefills:
            logits.append(self._forward(batch.prefills))
        logits = torch.cat(logits)  # [len(work), V]
        synchronize(self.lm.device)

        sampled, finished = [], []
        index = len(self.timeline)
        for (request, n), row in zip(work, logits, strict=True):
            request.num_computed_tokens += n
            self.block_manager.seal(request)
            if request.num_uncomputed > 0:  # a chunk in the middle of a prompt: nothing to sample yet
                continue
            token, logprobs = self._sample(request, row)
            request.append_token(token, self.now(), index, logprobs)
            sampled.append(request.request_id)
            if request.finished:
                self.scheduler.finish(request)
                finished.append(request.request_id)
        return self._record(index, start, batch, first_positions, sampled, finished)

    def _forward(self, work: list[tuple[Request, int]]) -> torch.Tensor:
        """One model call: request i computes its next n_i tokens. Returns the logits after each
        request's last new token, [B, V]."""
        width = max(n for _, n in work)
        rows = []
        for r, n in work:
            new = r.token_ids[r.num_computed_tokens:r.num_computed_tokens + n]
            rows.append([0] * (width - n) + new)  # left padding: the last column is each row's last token
        ids = torch.tensor(rows, dtype=torch.long, device=self.lm.device)  # [B, S]
        view = self.cache.view([r.block_table for r, _ in work], [r.num_computed_tokens for r, _ in work],
                               [n for _, n in work])
        return self.lm.model(ids, view, last_only=True)[:, -1]  # [B, V]

    def _sample(self, request: Request, logits: torch.Tensor) -> tuple[int, dict | None]:
        """Penalties, filters and the draw for one request ([V] logits), with its own parameters."""
        params = request.params
        processed = process_logits(logits[None], params, [request.prompt_ids], [request.output_ids],
                                   self.lm.config.eos_token_ids)  # [1, V]
        token = sample(processed, params, self._generators.get(request.request_id))  # [1]
        logprobs = top_logprobs(logits[None], params.logprobs, token)[0] if params.logprobs is not None else None
        return int(token[0]), logprobs

    def _record(self, index: int, start: float, batch: ScheduledBatch, first_positions: dict, sampled: list[int],
                finished: list[int]) -> IterationRecord:
        running = self.scheduler.running
        usage = self.block_manager.usage(running)
        record = IterationRecord(
            index=index, start_s=start, seconds=self.now() - start,
            decode_ids=[r.request_id for r in batch.decodes],
            prefill=[(r.request_id, first_positions[r.request_id], n) for r, n in batch.prefills],
            num_tokens=batch.num_tokens, forward_calls=bool(batch.decodes) + bool(batch.prefills),
            sampled=sampled, finished=finished, preempted=[r.request_id for r in batch.preempted],
            num_waiting=len(self.scheduler.waiting), num_running=len(running), blocks_used=usage.blocks_used,
            slots_allocated=usage.slots_allocated, slots_used=usage.slots_used, slots_reserved=usage.contiguous_slots,
            fragmentation=usage.fragmentation, contiguous_fragmentation=usage.contiguous_fragmentation,
            block_tables=self.block_manager.snapshot(running) if self.config.record_block_tables else None)
        self.timeline.append(record)
        return record

    # ---- a whole workload ----------------------------------------------------------------------
    def run(self, prompts, params: SamplingParams | list[SamplingParams] | None = None,
            progress: bool = False) -> ServingRun:
        """Add every prompt at once (they all arrive at time 0), run until all have finished, and return
        their outputs in order with the timeline of this run. The engine must be idle; what the prefix
        cache holds from earlier runs stays (prefix caching across requests)."""
        if self.has_unfinished:
            raise ValueError("run() needs an idle engine; step() through the requests already added first")
        if isinstance(prompts, str) or (prompts and isinstance(prompts[0], int)):
            prompts = [prompts]
        params = params if isinstance(params, list) else [params] * len(prompts)
        if len(params) != len(prompts):
            raise ValueError(f"{len(params)} SamplingParams given for {len(prompts)} prompts")
        self._t0 = None
        ids = [self.add_request(p, sp) for p, sp in zip(prompts, params, strict=True)]
        return self.drain(ids, progress=progress)

    def drain(self, ids: list[int], progress: bool = False, first_iteration: int | None = None) -> ServingRun:
        """Step until nothing is left; return the requests `ids` and the timeline from `first_iteration`
        (default: the next iteration). For workloads where requests arrive while others run:
        add_request, step, add_request, ..., then drain."""
        first_iteration = len(self.timeline) if first_iteration is None else first_iteration
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=sum(self.requests[i].params.max_tokens for i in ids), unit="tok",
                       desc=f"{self.config.policy} batching")
        while self.has_unfinished:
            record = self.step()
            if bar is not None:
                bar.update(len(record.sampled))
        if bar is not None:
            bar.close()
        done = [self.requests[i] for i in ids]
        start = min(r.arrival_s for r in done)
        return ServingRun(config=self.config.to_dict(), outputs=[r.result() for r in done],
                          requests=[r.stats() for r in done], timeline=self.timeline[first_iteration:],
                          total_s=max(r.finish_s for r in done) - start)
