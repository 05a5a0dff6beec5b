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
        """Queue a prompt (text, a list of token ids or a 1-D tensor of them); returns its request id.
        Everything that can be checked against the model is checked here, before the request runs."""
        params = self.lm._check_params(params)
        if params.num_beams > 1:
            raise ValueError("the serving engine does not do beam search; use lm.generate for num_beams > 1")
        if isinstance(prompt, torch.Tensor) and prompt.dim() != 1:
            raise ValueError(f"add_request takes one prompt: a 1-D tensor of token ids, got shape "
                             f"{tuple(prompt.shape)}; add each row as its own request (or pass the rows to run())")
        prompts, single = self.lm._prompts(prompt)
        if not single:
            raise ValueError("add_request takes one prompt (a string, a list of token ids or a 1-D tensor), got a "
                             "batch; add each prompt as its own request, or give the list to run()")
        ids = prompts[0]
        if not ids:
            raise ValueError("empty prompt: a request needs at least one token")
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

    def abort(self, request_id: int) -> bool:
        """Stop a request now, waiting or running: it finishes with finish_reason "abort" and its blocks are
        freed. Returns False if it had already finished."""
        if isinstance(request_id, bool) or not isinstance(request_id, int) or not 0 <= request_id < len(self.requests):
            raise ValueError(f"abort: there is no request {request_id!r}; request ids are the ints add_request "
                             f"returned, 0 .. {len(self.requests) - 1}")
        request = self.requests[request_id]
        if request.finished:
            return False
        self._fail(request, "abort", "aborted by the caller", len(self.timeline))
        return True

    def _fail(self, request: Request, reason: str, error: str, iteration: int) -> None:
        """End one request with an error of its own; the others go on."""
        request.fail(reason, error, self.now(), iteration)
        self.scheduler.remove(request)
        self._generators.pop(request.request_id, None)

    # ---- one iteration -------------------------------------------------------------------------
    @torch.no_grad()
    def step(self) -> IterationRecord:
        if not self.has_unfinished:
            raise RuntimeError("step(): there is nothing to run, no request is waiting or running; "
                               "add one with add_request(prompt, params) first")
        start = self.now()
        batch = self.scheduler.schedule()
        if batch.empty:
            raise RuntimeError("the scheduler found nothing to run: no request fits in the KV pool")
        work = [(r, 1) for r in batch.decodes] + batch.prefills  # (request, tokens to compute)
        first_positions = {r.request_id: r.num_computed_tokens for r, _ in batch.prefills}
        errors: dict[int, str] = {}  # request id → why its forward pass failed
        rows = []  # one [V] row (None: its forward pass failed) per request, in the order of `work`
        if batch.decodes:
            rows += self._forward_rows([(r, 1) for r in batch.decodes], errors)
        if batch.prefills:
            rows += self._forward_rows(batch.prefills, errors)
        synchronize(self.lm.device)

        sampled, finished = [], []
        index = len(self.timeline)
        for (request, n), row in zip(work, rows, strict=True):
            if row is None:
                self._fail(request, "error", errors[request.request_id], index)
                finished.append(request.request_id)
                continue
            request.num_computed_tokens += n
            self.block_manager.seal(request)
            if request.num_uncomputed > 0:  # a chunk in the middle of a prompt: nothing to sample yet
                continue
            try:
                token, logprobs = self._sample(request, row)
            except Exception as error:  # this request's own parameters: it fails, the others go on
                self._fail(request, "error", _describe(error), index)
                finished.append(request.request_id)
                continue
            request.append_token(token, self.now(), index, logprobs)
            sampled.append(request.request_id)
            if request.finished:
                self.scheduler.finish(request)
                finished.append(request.request_id)
        return self._record(index, start, batch, first_positions, sampled, finished)

    def _forward_rows(self, work: list[tuple[Request, int]], errors: dict[int, str]) -> list[torch.Tensor | None]:
        """`_forward` for `work`, as one [V] row per request. If the call raises, each request is run alone,
        so that only the one at fault fails: its row is None and `errors` says why."""
        try:
            return list(self._forward(work))
        except Exception as error:
            if len(work) == 1:
                errors[work[0][0].request_id] = _describe(error)
                return [None]
            return [row for item in work for row in self._forward_rows([item], errors)]

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
        if isinstance(prompts, torch.Tensor):
            if prompts.dim() not in (1, 2):
                raise ValueError(f"run() takes prompts as a tensor of shape [seq] or [batch, seq], "
                                 f"got shape {tuple(prompts.shape)}")
            prompts = [prompts] if prompts.dim() == 1 else list(prompts)
        elif isinstance(prompts, str) or (isinstance(prompts, (list, tuple)) and prompts
                                          and not isinstance(prompts[0], (str, list, tuple, torch.Tensor))):
            prompts = [prompts]
        if not isinstance(prompts, (list, tuple)) or not prompts:
            raise ValueError(f"run() needs at least one prompt: a string, a list of token ids, or a list of those; "
                             f"got {prompts!r:.60}")
        if params is not None and not isinstance(params, (list, SamplingParams)):
            self.lm._check_params(params)  # raises, naming what was given
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


def _describe(error: Exception) -> str:
    """An exception as one line: 'IndexError: index out of range in self'."""
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0] if lines else ''}"

