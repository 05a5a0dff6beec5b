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

On CUDA the forward calls run the fused step (teachllm/fastpath/fused_float.py: stacked q/k/v and gate/up,
a RoPE table), which reads this engine's paged cache through the same three calls as model.py does;
`ServingEngine(lm, config, fast=False)` or TEACHLLM_PLAIN_DECODE=1 keeps model.py's forward, and
`engine.forward_path` says which ran. Not yet the rest of the GPU fast path (CUDA graphs, sampling on the
device): a decode step here builds its block tables from Python lists and gathers a different number of keys
each iteration, so it cannot be recorded as a graph; see teachllm/fastpath/loop.py for what can.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import torch
from tqdm.auto import tqdm

from .. import inputs
from ..fastpath import loop
from ..inputs import env_flag
from ..sampling import SamplingParams, process_logits, sample, top_logprobs
from ..timing import synchronize
from ..units import is_id
from .block_manager import BlockManager
from .config import ServingConfig
from .metrics import IterationRecord, ServingRun
from .paged_cache import PagedKVCache
from .request import Request
from .scheduler import ScheduledBatch, Scheduler


class ServingEngine:
    def __init__(self, lm, config: ServingConfig | None = None, fast: bool | None = None):
        """fast: None (default) runs the forward calls through the fused step on CUDA and model.py's forward
        elsewhere; True the fused step wherever the model can be fused; False model.py's forward always."""
        if not hasattr(lm, "model") or not hasattr(lm, "config"):
            raise TypeError(f"ServingEngine takes a LanguageModel (tl.load()), got {type(lm).__name__}")
        if config is not None and not isinstance(config, ServingConfig):
            hint = "ServingConfig(**your_dict)" if isinstance(config, dict) else "ServingConfig(policy=...)"
            raise TypeError(f"config must be a ServingConfig or None, got {config!r:.80}: use {hint}")
        if fast is not None and not isinstance(fast, bool):
            raise ValueError(f"fast={fast!r}: give True (the fused step), False (model.py's forward) or None (the "
                             "fused step on CUDA only)")
        self.lm = lm
        self.fast = fast
        self.forward_path = "nothing run yet"  # what the last forward call ran, and why (one line)
        self.config = config or ServingConfig()
        cfg = self.config
        inputs.kv_pool(lm, cfg.num_blocks, cfg.block_size)  # a pool too large for memory is refused here
        self.cache = PagedKVCache(lm.config, cfg.num_blocks, cfg.block_size, dtype=lm.dtype, device=lm.device)
        self.block_manager = BlockManager(cfg.num_blocks, cfg.block_size, cfg.enable_prefix_caching)
        self.scheduler = Scheduler(cfg, self.block_manager)
        self.requests: list[Request] = []  # every request ever added, by id
        self.timeline: list[IterationRecord] = []  # every iteration ever run
        self._generators: dict[int, torch.Generator] = {}  # one random generator per request that has a random seed
        self._t0: float | None = None  # the engine's clock starts at the first request
        self.closed = False  # after shutdown(): no new requests

    # ---- requests in -----------------------------------------------------------------------------
    def now(self) -> float:
        """Seconds since the clock started (it starts with the first request)."""
        if self._t0 is None:
            self._t0 = time.perf_counter()
        return time.perf_counter() - self._t0

    def add_request(self, prompt, params: SamplingParams | None = None) -> int:
        """Queue a prompt (text, a list of token ids or a 1-D tensor of them); returns its request id.
        Everything that can be checked against the model is checked here, before the request runs."""
        ids, params = self._checked(prompt, params)
        return self._add(ids, params)

    def _checked(self, prompt, params) -> tuple[list[int], SamplingParams]:
        """One request, checked at the edge (teachllm.inputs), and against the pool: nothing is added yet."""
        if self.closed:
            raise RuntimeError("this engine was shut down; make a new ServingEngine for more requests")
        if isinstance(prompt, torch.Tensor) and prompt.dim() != 1:
            raise ValueError(f"add_request takes one prompt: a 1-D tensor of token ids, got shape "
                             f"{tuple(prompt.shape)}; add each row as its own request (or pass the rows to run())")
        prompts, params, single = inputs.request(prompt, params, self.lm)
        if not single:
            raise ValueError("add_request takes one prompt (a string, a list of token ids or a 1-D tensor), got a "
                             "batch; add each prompt as its own request, or give the list to run()")
        if params.num_beams > 1:
            raise ValueError("the serving engine does not do beam search; use lm.generate for num_beams > 1")
        ids, cfg = prompts[0], self.config
        if len(ids) + params.max_tokens > cfg.num_slots:
            raise ValueError(f"a prompt of {len(ids)} tokens plus max_tokens={params.max_tokens} needs "
                             f"{len(ids) + params.max_tokens} KV slots, but the pool holds {cfg.num_slots} "
                             f"({cfg.num_blocks} blocks × {cfg.block_size}); raise ServingConfig.num_blocks")
        return ids, params

    def _add(self, ids: list[int], params: SamplingParams) -> int:
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

    def _request(self, request_id, method: str) -> Request:
        if not is_id(request_id) or not 0 <= request_id < len(self.requests):  # numpy integers too
            raise ValueError(f"{method}: there is no request {request_id!r}; request ids are the ints add_request "
                             f"returned" + (f", 0 .. {len(self.requests) - 1}" if self.requests else " (none yet)"))
        return self.requests[int(request_id)]

    def abort(self, request_id: int) -> bool:
        """Stop a request now, waiting or running: it finishes with finish_reason "abort" and its blocks are
        freed. Returns False if it had already finished."""
        request = self._request(request_id, "abort")
        if request.finished:
            return False
        self._fail(request, "abort", "aborted by the caller", len(self.timeline))
        return True

    def shutdown(self) -> None:
        """Abort every unfinished request (their blocks are freed) and refuse new ones. `with ServingEngine(...)
        as engine:` calls it on leaving the block, also when an error ends it."""
        for request in self.requests:
            if not request.finished:
                self._fail(request, "abort", "the engine was shut down", len(self.timeline))
        self.closed = True

    def __enter__(self) -> ServingEngine:
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()

    def _fail(self, request: Request, reason: str, error: str, iteration: int) -> None:
        """End one request with an error of its own; the others go on."""
        request.fail(reason, error, self.now(), iteration)
        self.scheduler.remove(request)
        self._generators.pop(request.request_id, None)

    # ---- one iteration -------------------------------------------------------------------------
    @torch.no_grad()
    def step(self) -> IterationRecord:
        """One iteration: schedule, run the model, then sample and apply the stop rules. A request whose own
        part fails (its forward pass, its sampling) ends with finish_reason "error"; the others go on."""
        if not self.has_unfinished:
            raise RuntimeError("step(): there is nothing to run, no request is waiting or running; "
                               "add one with add_request(prompt, params) first")
        start, index = self.now(), len(self.timeline)
        batch = self.scheduler.schedule()
        if batch.empty:
            raise RuntimeError("the scheduler found nothing to run: no request fits in the KV pool")
        first_positions = {r.request_id: r.num_computed_tokens for r, _ in batch.prefills}
        work = [(r, 1) for r in batch.decodes] + batch.prefills  # (request, tokens to compute)
        rows = self._run([(r, 1) for r in batch.decodes]) + self._run(batch.prefills)  # [V] per request, or error
        synchronize(self.lm.device)
        sampled, finished = [], []
        for (request, n), row in zip(work, rows, strict=True):
            token = self._isolated(request, index, self._post_process, request, n, row)
            if token is not None:
                sampled.append(request.request_id)
            if request.finished:
                finished.append(request.request_id)
        return self._record(index, start, batch, first_positions, sampled, finished)

    def _isolated(self, request: Request, index: int, work, *args):
        """work(*args), or, if it raises, `request` fails with that error and the result is None."""
        try:
            return work(*args)
        except Exception as error:  # this request's own part: it fails, the others go on
            self._fail(request, "error", _describe(error), index)
            return None

    def _run(self, work: list[tuple[Request, int]]) -> list:
        """The model on `work` in one call: one [V] row per request. If the call raises, each request runs
        alone, so that only the one at fault gets its error instead of a row."""
        if not work:
            return []
        try:
            return list(self._forward(work))
        except Exception as error:
            if len(work) == 1:
                return [error]
            return [row for item in work for row in self._run([item])]

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
        return self._model()(ids, view, last_only=True)[:, -1]  # [B, V]

    def _model(self):
        """What a forward call runs: model.py's Transformer, or the same weights fused (loop.step_for); sets
        `forward_path` to say which, and why."""
        plain = "model.py's forward"
        if self.fast is False:
            self.forward_path = f"{plain} (fast=False)"
        elif self.fast is None and env_flag(loop.PLAIN_FLAG):
            self.forward_path = f"{plain} ({loop.PLAIN_FLAG} is set)"
        elif self.fast is None and self.lm.device.type != "cuda":
            self.forward_path = (f"{plain} (the model is on {self.lm.device.type}: the fused step is the default on "
                                 "CUDA only; fast=True runs it here)")
        else:
            step, self.forward_path = loop.step_for(self.lm)
            return step
        return self.lm.model

    def _post_process(self, request: Request, n: int, row) -> int | None:
        """After the model: count the computed tokens; once the prompt is done, sample the next token and
        apply the stop rules. Returns the token, or None for a chunk in the middle of a prompt."""
        if isinstance(row, Exception):
            raise row
        request.num_computed_tokens += n
        self.block_manager.seal(request)
        if request.num_uncomputed > 0:  # a chunk in the middle of a prompt: nothing to sample yet
            return None
        params = request.params
        processed = process_logits(row[None], params, [request.prompt_ids], [request.output_ids],
                                   self.lm.config.eos_token_ids)  # [1, V]
        token = sample(processed, params, self._generators.get(request.request_id))  # [1]
        logprobs = top_logprobs(row[None], params.logprobs, token)[0] if params.logprobs is not None else None
        request.append_token(int(token[0]), self.now(), len(self.timeline), logprobs)
        if request.finished:
            self.scheduler.finish(request)
        return int(token[0])

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
        cache holds from earlier runs stays (prefix caching across requests). Every prompt is checked
        before any is added: a refused one leaves the engine as it was."""
        if self.has_unfinished:
            raise ValueError("run() needs an idle engine; step() through the requests already added first")
        if isinstance(prompts, Iterator):  # a generator, map(...), iter(...): the prompts it yields
            prompts = list(prompts)
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
        if not isinstance(params, list):
            params = [params] * len(prompts)
        if len(params) != len(prompts):
            raise ValueError(f"{len(params)} SamplingParams given for {len(prompts)} prompts")
        checked = [self._checked(p, sp) for p, sp in zip(prompts, params, strict=True)]
        self._t0 = None
        return self.drain([self._add(ids, sp) for ids, sp in checked], progress=progress)

    def drain(self, ids: list[int], progress: bool = False, first_iteration: int | None = None) -> ServingRun:
        """Step until nothing is left; return the requests `ids` and the timeline from `first_iteration`
        (default: the next iteration). For workloads where requests arrive while others run:
        add_request, step, add_request, ..., then drain."""
        if not isinstance(ids, (list, tuple)) or not ids:
            raise ValueError(f"drain takes the ids of the requests to return (a non-empty list of what add_request "
                             f"returned), got {ids!r:.60}")
        done = [self._request(i, "drain") for i in ids]
        first_iteration = len(self.timeline) if first_iteration is None else first_iteration
        bar = tqdm(total=sum(r.params.max_tokens for r in done), unit="tok", desc=f"{self.config.policy} batching",
                   disable=not progress)
        while self.has_unfinished:
            bar.update(len(self.step().sampled))
        bar.close()
        start = min(r.arrival_s for r in done)
        return ServingRun(config=self.config.to_dict(), outputs=[r.result() for r in done],
                          requests=[r.stats() for r in done], timeline=self.timeline[first_iteration:],
                          total_s=max(r.finish_s for r in done) - start)


def _describe(error: Exception) -> str:
    """An exception as one line: 'IndexError: index out of range in self'."""
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0] if lines else ''}"

