"""teachllm.viz.serving: every serving view against the engine that produced it.

The timeline must show each request doing, in each iteration, what the iteration records say; the block
table figure the block manager's own tables, reference counts and fill; the fragmentation plot the block
manager's `usage()` read live after every step; the paged cache points what the request held.
"""

import re

import pytest

pytest.importorskip("plotly")  # before anything that imports teachllm.viz
pytest.importorskip("ipywidgets")
import torch

import teachllm as tl
from teachllm.serving import ServingConfig, ServingEngine, precompute_chunk, quality_table
from teachllm.viz import data, figures
from teachllm.viz import serving as vs

TEXTS = ["The three primary colours are", "Water boils at", "def fibonacci(n):",
         "Once upon a time, in a small village by the sea, there lived an old fisherman who"]


pytestmark = pytest.mark.usefixtures("one_thread")  # see conftest.py


@pytest.fixture(scope="module")
def chunked_run(lm):
    """Four requests, two at a time, a token budget of 8 with chunked prefill: waiting, chunks and decodes."""
    config = ServingConfig(max_num_seqs=2, block_size=4, num_blocks=64, max_num_batched_tokens=8,
                           chunked_prefill=True)
    params = [tl.SamplingParams(temperature=0, max_tokens=n, ignore_eos=True) for n in (4, 2, 3, 3)]
    return ServingEngine(lm, config).run(TEXTS, params)


def stepped(lm, config, prompts, params, arrive_after=1):
    """Run an engine step by step, the first prompt alone for `arrive_after` iterations; after every step keep
    the block manager's own usage() of the running requests and a copy of their tables."""
    engine = ServingEngine(lm, config)
    ids = [engine.add_request(prompts[0], params)]
    live = []

    def step():
        engine.step()
        running = engine.scheduler.running
        live.append((engine.block_manager.usage(running), {r.request_id: list(r.block_table) for r in running},
                     {r.request_id: r.num_computed_tokens for r in running}))

    for _ in range(arrive_after):
        step()
    ids += [engine.add_request(p, params) for p in prompts[1:]]
    while engine.has_unfinished:
        step()
    return engine, engine.drain(ids, first_iteration=0), live


def chats(lm, questions):
    return [lm.tokenizer.encode(lm.tokenizer.apply_chat_template([{"role": "user", "content": q}]))
            for q in questions]


# ---- 1. the iteration timeline --------------------------------------------------------------------
def test_timeline_cells_are_what_each_iteration_recorded(chunked_run):
    run = chunked_run
    fig = vs.iteration_timeline_figure(run)
    waiting, prefill, decode = fig.data[:3]
    cells = {kind: set(zip(trace.y, (round(b + 0.5) for b in trace.base), strict=True))
             for kind, trace in (("waiting", waiting), ("prefill", prefill), ("decode", decode))}
    for stats in run.requests:
        rid = stats.request_id
        for r in run.timeline:
            in_prefill = any(p[0] == rid for p in r.prefill)
            in_decode = rid in r.decode_ids
            alive = stats.arrival_iteration <= r.index <= stats.finish_iteration
            assert ((rid, r.index) in cells["prefill"]) == in_prefill
            assert ((rid, r.index) in cells["decode"]) == in_decode
            assert ((rid, r.index) in cells["waiting"]) == (alive and not in_prefill and not in_decode)
    assert any(start > 0 for r in run.timeline for _, start, _ in r.prefill)  # chunks were drawn
    assert cells["waiting"]  # with two at a time, the last two requests waited
    finished = fig.data[3]
    assert sorted(zip(finished.y, finished.x, strict=True)) == sorted(
        (s.request_id, s.finish_iteration + 0.5) for s in run.requests)
    decode_tokens, prefill_tokens, budget = fig.data[5], fig.data[6], fig.data[7]
    assert list(decode_tokens.y) == [len(r.decode_ids) for r in run.timeline]
    assert [d + p for d, p in zip(decode_tokens.y, prefill_tokens.y, strict=True)] == [r.num_tokens
                                                                                       for r in run.timeline]
    assert list(budget.y) == [8, 8] and max(r.num_tokens for r in run.timeline) <= 8


def test_timeline_up_to_an_iteration_shows_only_the_past(chunked_run):
    upto = 3
    fig = vs.iteration_timeline_figure(chunked_run, upto=upto)
    for trace in fig.data[:3]:
        assert all(b + 0.5 <= upto for b in trace.base)
    assert list(fig.data[5].x) == list(range(upto + 1))
    assert len(fig.data) == len(vs.iteration_timeline_figure(chunked_run).data)  # a widget can update in place


def test_describe_iteration_says_what_the_scheduler_chose(chunked_run):
    record = next(r for r in chunked_run.timeline if r.decode_ids and r.prefill)
    text = vs.describe_iteration(record)
    assert f"{record.num_tokens} tokens computed in 2 forward calls" in text
    for rid, start, n in record.prefill:
        assert f"request {rid}, tokens {start}–{start + n - 1} ({n} tokens)" in text


def test_iteration_timeline_widget_steps_in_place(chunked_run):
    view = vs.IterationTimeline(chunked_run)
    bars = view.figure.data[2]
    view.next()
    view.next()
    assert view.figure.data[2] is bars  # the same trace, new values
    expected = vs.iteration_timeline_figure(chunked_run, upto=view.slider.value)
    assert [list(t.x) for t in view.figure.data] == [list(t.x) for t in expected.data]
    assert vs.describe_iteration(chunked_run.timeline[2]) in view.info.value.replace("&gt;", ">")
    view.last()
    assert view.slider.value == chunked_run.timeline[-1].index
    # what nbval compares: the text repr, the same for the same run once trace uids are blanked
    uid = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
    one, two = (uid.sub("U", repr(vs.IterationTimeline(chunked_run))) for _ in range(2))
    assert one == two


# ---- 2. block tables -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def shared_run(lm):
    """Three chat questions (a 24-token common template), the second and third arriving after the first
    was prefilled, so they share its full blocks."""
    config = ServingConfig(max_num_seqs=3, block_size=4, num_blocks=40)
    prompts = chats(lm, ["What is the capital of France?", "What is 2 + 2?", "Name a colour."])
    return stepped(lm, config, prompts, tl.SamplingParams(temperature=0, max_tokens=6))


def test_block_table_figure_is_the_block_managers_state(shared_run):
    engine, run, live = shared_run
    assert any(usage.blocks_shared for usage, _, _ in live)
    for record, (usage, tables, computed) in zip(run.timeline, live, strict=True):
        snapshot = record.block_tables
        assert snapshot["tables"] == tables and snapshot["computed"] == computed
        fig = vs.block_table_figure(snapshot)
        own, shared, free, pool_own, pool_shared = fig.data
        rids = sorted(tables)
        for trace, is_shared in ((own, False), (shared, True)):
            for row, rid in enumerate(rids):
                for i, block in enumerate(tables[rid]):
                    drawn = trace.text[row][i] == str(block)
                    assert drawn == ((snapshot["ref_counts"][block] > 1) == is_shared)
        shared_ids = {int(t) for row in pool_shared.text for t in row if t}
        assert shared_ids == {b for b, n in snapshot["ref_counts"].items() if n > 1}
        assert len(shared_ids) == usage.blocks_shared
        used_ids = {int(t) for trace in (pool_own, pool_shared) for row in trace.text for t in row if t}
        assert len(used_ids) == usage.blocks_used
        assert len({int(t) for row in free.text for t in row if t}) == usage.blocks_free
        filled = sum(round(z * 4) for trace in (pool_own, pool_shared) for row in trace.z for z in row
                     if z is not None)
        assert filled == usage.slots_used  # a shared slot counted once
        assert f"{usage.slots_used} of {usage.slots_allocated} allocated slots" in fig.layout.title.text


def test_block_table_view_shows_the_chosen_iteration(shared_run):
    _, run, _ = shared_run
    view = vs.BlockTableView(run, start=0)
    view.next()
    expected = vs.block_table_figure(run.timeline[1].block_tables, "after iteration 1")
    assert [t.text for t in view.figure.data] == [t.text for t in expected.data]
    assert view.figure.layout.title.text == expected.layout.title.text


# ---- 3. fragmentation ------------------------------------------------------------------------------
def test_slot_usage_is_the_block_managers_usage_after_every_step(shared_run):
    _, run, live = shared_run
    rows = vs.slot_usage(run)
    assert [(u.slots_used, u.slots_allocated, u.slots_reserved) for u in rows] == [
        (usage.slots_used, usage.slots_allocated, usage.contiguous_slots) for usage, _, _ in live]
    fig = vs.fragmentation_figure(rows)
    reserved, allocated, used = fig.data
    assert list(used.y) == [usage.slots_used for usage, _, _ in live]
    assert list(allocated.y) == [usage.blocks_used * 4 for usage, _, _ in live]
    assert list(reserved.y) == [usage.contiguous_slots for usage, _, _ in live]


# ---- 4. a paged cache beside the contiguous one ------------------------------------------------------
def test_paged_cache_points_are_the_blocks_the_request_held(lm):
    prompt = chats(lm, ["What is 2 + 2?"])[0]
    params = tl.SamplingParams(temperature=0, max_tokens=48)  # it stops after 12: the reservation is mostly empty
    engine = ServingEngine(lm, ServingConfig(block_size=16, num_blocks=8))
    engine.add_request(prompt, params)
    request = engine.requests[0]
    held = []
    while engine.has_unfinished:
        engine.step()
        tokens = request.num_computed_tokens
        blocks = len(request.block_table) if not request.finished else -(-tokens // 16)  # freed: what it needed
        held.append((tokens, blocks))
    points = vs.paged_cache_points(engine, 0)
    per_token = engine.cache.bytes_per_token
    assert [(p.length, p.capacity // 16) for p in points] == held
    assert [p.bytes_allocated for p in points] == [b * 16 * per_token for _, b in held]
    assert [p.bytes_used for p in points] == [t * per_token for t, _ in held]
    assert [p.bytes_used for p in points] == [p.formula_bytes for p in points]
    contiguous = [data.cache_point(s.index, s.phase, s.cache) for s in tl.generation_steps(lm, [prompt], params)]
    assert [p.length for p in points] == [p.length for p in contiguous]  # step k: the same tokens stored
    assert [p.bytes_used for p in points] == [p.bytes_used for p in contiguous]
    fig = figures.cache_growth_figure(contiguous, paged=points)
    by_name = {t.name: t for t in fig.data}
    assert list(by_name["paged: allocated"].y) == [p.bytes_allocated for p in points]
    assert all(p <= c for p, c in zip(by_name["paged: allocated"].y, by_name["contiguous: allocated"].y, strict=True))


# ---- 5. CacheBlend -----------------------------------------------------------------------------------
def test_blend_quality_figure_draws_the_quality_table(lm):
    torch.manual_seed(0)
    chunk_ids = [torch.randint(4, 500, (n,)).tolist() for n in (7, 9, 8)]
    suffix = torch.randint(4, 500, (6,)).tolist()
    rows = quality_table(lm, chunk_ids, suffix, ratios=(0.0, 0.25, 0.5, 1.0))
    fig = vs.blend_quality_figure(rows)
    names = [t.name for t in fig.data]
    assert names.count(vs.SELECT_NAMES["deviation"]) == 2 and names.count(vs.SELECT_NAMES["random"]) == 2
    for trace in fig.data[:4]:
        select = "deviation" if trace.name == vs.SELECT_NAMES["deviation"] else "random"
        mine = sorted([r for r in rows if r.select == select or r.ratio in (0.0, 1.0)],
                      key=lambda r: r.recompute_fraction)
        key = "kl" if trace.yaxis == "y" else "ppl"
        assert list(trace.x) == pytest.approx([r.recompute_fraction for r in mine], abs=1e-4)
        assert list(trace.y) == pytest.approx([getattr(r, key) for r in mine], abs=1e-4)
        assert trace.x[0] == 0 and trace.x[-1] == 1  # full reuse and full recompute end both lines
    assert precompute_chunk(lm, chunk_ids[0]).k.shape[2] == 7
