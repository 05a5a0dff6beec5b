"""The engine, viz, serving, cost and bench paths on a second device, where a device bug raises as it does on a GPU.

CI has no GPU. On the CPU alone a CPU tensor meeting a CUDA one, `.numpy()` on a model tensor and a CPU random
generator drawing for CUDA logits are all invisible. Here the same model runs twice, on the CPU and on a second
device (tests/second_device.py: it computes on the CPU but refuses what CUDA refuses), and each path must run there
and give the CPU's answer. The model is a small random one (2 layers) with the bundled tokenizer, so that text goes
in and out as in the chapters and each step takes milliseconds.

`scripts/run_chapters.py --device second` runs every chapter the same way.
"""

import shutil

import pytest
import torch

import teachllm as tl

pytest.importorskip("plotly")
pytest.importorskip("ipywidgets")
import second_device  # noqa: E402  (tests/ is on the path under pytest)

from teachllm import bench, cost, roofline  # noqa: E402
from teachllm.serving import (  # noqa: E402
    ServingConfig,
    ServingEngine,
    compare_with_contiguous,
    int8_error,
    precompute_chunk,
    quality_table,
    shift_keys,
    speculative_generate,
)
from teachllm.viz import data, lecture, static  # noqa: E402
from teachllm.viz import serving as vs  # noqa: E402

PROMPT = "The capital of France is Paris. The capital of Italy is"
pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    """A 2-layer random Llama with the bundled model's tokenizer, saved as a checkpoint folder."""
    import transformers

    bundled = tl.checkpoints.loading.checkpoint_folder(progress=False)
    config = transformers.LlamaConfig(vocab_size=49152, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                                      tie_word_embeddings=True, bos_token_id=1, eos_token_id=2)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(1 + 0.2 * torch.randn_like(p) if "norm" in name else 0.3 * torch.randn_like(p))  # peaked
    folder = tmp_path_factory.mktemp("tiny")
    model.save_pretrained(folder)
    for f in bundled.iterdir():
        if f.name.startswith(("tokenizer", "special_tokens", "vocab", "merges", "generation_config")):
            shutil.copy(f, folder / f.name)
    return folder


@pytest.fixture(scope="module")
def cpu(tiny_folder):
    return tl.load(tiny_folder, device="cpu", dtype="float32", progress=False)


@pytest.fixture(scope="module")
def dev(tiny_folder):
    """The same model on the second device."""
    why = second_device.available()
    if why is not None:
        pytest.skip(why)
    with second_device.emulated():
        return second_device.move(tl.load(tiny_folder, device="cpu", dtype="float32", progress=False))


@pytest.fixture(autouse=True)
def emulated():
    """Every test runs with the second device's factories and generators on."""
    with second_device.emulated():
        yield


def same(a: torch.Tensor, b: torch.Tensor, kind: str = "logits") -> bool:
    return float((a.cpu().float() - b.cpu().float()).abs().max()) <= getattr(tl.tolerance(a.dtype), kind)


# ---- the harness itself ----------------------------------------------------------------------------------
def test_the_second_device_refuses_what_cuda_refuses(dev):
    x = torch.ones(3, device=dev.device)
    assert dev.device.type == "second"
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        x.gather(0, torch.tensor([0, 1]))  # a CPU index gathered from a device tensor
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.cat([x, torch.ones(3)])  # a CPU tensor meeting a device one
    assert float((x + torch.tensor(2.0)).sum()) == 9  # a 0-dimensional CPU tensor is a scalar, as on CUDA
    assert x[torch.tensor([0, 2])].tolist() == [1, 1]  # and a CPU index may index a device tensor
    with pytest.raises(RuntimeError, match="indices should be either on cpu or on the same device"):
        torch.ones(3)[torch.tensor([0, 2], device=dev.device)]  # but not the other way round
    with pytest.raises(TypeError, match="numpy"):
        x.numpy()
    with pytest.raises(RuntimeError, match="Expected a .second. device type for generator but found .cpu."):
        torch.multinomial(x, 1, generator=torch.Generator().manual_seed(0))
    drawn = torch.multinomial(x, 1, generator=torch.Generator(device=x.device).manual_seed(0))
    assert drawn.device.type == "second"


# ---- the engine ---------------------------------------------------------------------------------------
def test_prefill_and_decode_give_the_cpu_logits(cpu, dev):
    prompts = [cpu.tokenizer.encode(PROMPT), cpu.tokenizer.encode("Water boils at")]
    caches = [m.new_cache(max_len=32, batch_size=2) for m in (cpu, dev)]
    logits = [m.prefill(prompts, c) for m, c in zip((cpu, dev), caches, strict=True)]
    assert logits[1].device.type == "second" and same(logits[0], logits[1])
    for _ in range(3):
        token = logits[0].argmax(-1)  # [2]
        logits = [cpu.decode_step(token, caches[0]), dev.decode_step(token.to(dev.device), caches[1])]
        assert same(logits[0], logits[1], "steps")
    trace = tl.Trace()
    assert same(cpu.forward(prompts[0]), dev.forward(prompts[0], trace=trace))
    assert trace.layers[0].probs.device.type == "second"
    stages = [s.name for s in dev.step_through(prompts[0])]
    assert stages[0] == "embedding" and stages[-1] == "logits"


@pytest.mark.parametrize("settings", [
    dict(temperature=0),
    dict(temperature=0.9, top_k=50, top_p=0.9, min_p=0.02, seed=3),
    dict(temperature=1.0, repetition_penalty=1.3, presence_penalty=0.5, frequency_penalty=0.5, no_repeat_ngram_size=2,
         min_tokens=3, seed=1, logprobs=3),
    dict(temperature=0.7, seed=5, stop=["the"], n_prompts=2),
], ids=["greedy", "filters", "penalties", "batch-stop"])
def test_generate_gives_the_cpu_text(cpu, dev, settings):
    settings = dict(settings)
    prompts = [PROMPT, "Water boils at"][:settings.pop("n_prompts", 1)]
    params = tl.SamplingParams(max_tokens=8, **settings)
    ours = [cpu.generate(prompts, params), dev.generate(prompts, params)]
    assert [o.token_ids for o in ours[0]] == [o.token_ids for o in ours[1]]
    if params.logprobs:
        assert ours[1][0].logprobs[0].keys() == ours[0][0].logprobs[0].keys()
    assert "".join(dev.stream(prompts[0], params)) == ours[1][0].text


@pytest.mark.parametrize("settings", [dict(temperature=0), dict(temperature=0.9, top_p=0.9, seed=3)],
                         ids=["greedy", "sampled"])
def test_the_fast_path_and_its_fused_step_give_the_cpu_text(cpu, dev, settings):
    """The GPU fast path (a StaticKVCache, the fused step, choosing on the device) on the second device: its RoPE
    table, stacked matrices, positions and mask all live there, or a CPU tensor would meet a device one."""
    params = tl.SamplingParams(max_tokens=10, **settings)
    prompts = [PROMPT, "Water boils at"]
    want = cpu.generate(prompts, params, fast=False)
    got = dev.generate(prompts, params, fast=True)
    assert "the fused step" in dev.decode_path, dev.decode_path
    assert dev._fused_step.rope.device.type == "second"
    assert [o.token_ids for o in got] == [o.token_ids for o in want]


def test_beam_search_gives_the_cpu_beams(cpu, dev):
    params = tl.SamplingParams(num_beams=3, max_tokens=6, length_penalty=1.0)
    assert cpu.generate(PROMPT, params).token_ids == dev.generate(PROMPT, params).token_ids
    steps = list(tl.beam_search_steps(dev, PROMPT, params))
    nodes = lecture.beam_tree(steps, data.labeller(dev.tokenizer))
    assert nodes and lecture.beam_tree_figure(nodes).data


# ---- viz: what the figures and widgets compute, their kernel-free forms ----------------------------------
def test_distribution_and_sampling(cpu, dev):
    ids = cpu.tokenizer.encode(PROMPT)
    logits = [data.next_token_logits(m, ids) for m in (cpu, dev)]
    params = tl.SamplingParams(temperature=1.2, top_k=40, top_p=0.9, repetition_penalty=1.2)
    d = [data.distribution(x, params, ids, ids[:3], cpu.config.eos_token_ids) for x in logits]
    assert d[0].token_ids == d[1].token_ids and d[0].n_kept == d[1].n_kept
    token, rank = data.sample_token(logits[1], params, seed=4, prompt_ids=ids)
    assert 0 <= rank < d[1].n_kept and 0 <= token < cpu.config.vocab_size
    stages = lecture.penalty_stages(logits[1], params, ids, ids[:3], data.labeller(dev.tokenizer))
    assert lecture.penalty_stages_figure(stages).data
    assert lecture.pipeline_figure(lecture.pipeline_stages(dev, PROMPT, params)).layout.annotations


def test_the_distribution_explorer_samples_on_the_device(dev):
    view = tl.viz.DistributionExplorer(dev, PROMPT)
    view.temperature.value = 0.8
    view.sample_button.click()  # a failure inside the callback would leave `chosen` unset
    assert view.chosen is not None
    form = view.static_form()
    assert static.float32_from_base64(form["logits"]).shape == (dev.config.vocab_size,)


def test_attention_cache_and_step_views(cpu, dev):
    ids = cpu.tokenizer.encode(PROMPT)
    captures = [data.capture_attention(m, ids, n_decode=3) for m in (cpu, dev)]
    assert all(torch.allclose(a, b, atol=1e-5, equal_nan=True)
               for a, b in zip(captures[0].probs, captures[1].probs, strict=True))
    params = tl.SamplingParams(temperature=0, max_tokens=4, ignore_eos=True)
    views = [tl.viz.AttentionExplorer(dev, PROMPT, n_decode=2), tl.viz.CacheGrowthView(dev, PROMPT, params),
             tl.viz.StepThrough(dev, PROMPT, params), tl.viz.PhaseTimeline(dev, PROMPT, params)]
    for view in views:
        form = view.static_form()
        assert form["frames"], type(view).__name__
        assert view._repr_mimebundle_() is not None


# ---- serving --------------------------------------------------------------------------------------------
def test_the_serving_engine_gives_the_cpu_outputs(cpu, dev):
    config = ServingConfig(policy="continuous", max_num_seqs=2, block_size=4, num_blocks=32, chunked_prefill=True,
                           max_num_batched_tokens=8, record_block_tables=True)
    prompts = [PROMPT, "Water boils at", "Once upon a time"]
    params = [tl.SamplingParams(temperature=0, max_tokens=4), tl.SamplingParams(temperature=0.8, seed=2, max_tokens=3),
              tl.SamplingParams(temperature=0, max_tokens=2, logprobs=2)]
    runs = [ServingEngine(m, config).run(prompts, params) for m in (cpu, dev)]
    assert [o.token_ids for o in runs[0].outputs] == [o.token_ids for o in runs[1].outputs]
    fused = ServingEngine(dev, config, fast=True)  # the fused step reading the paged cache on the device
    assert [o.token_ids for o in fused.run(prompts, params).outputs] == [o.token_ids for o in runs[0].outputs]
    assert fused.forward_path.startswith("the fused step")
    assert vs.iteration_timeline_figure(runs[1]).data and vs.IterationTimeline(runs[1]).static_form()
    assert vs.BlockTableView(runs[1]).static_form()


def test_paged_cache_cacheblend_speculative_and_int8(cpu, dev):
    ids = [cpu.tokenizer.encode(t) for t in (PROMPT, "Water boils at 100 degrees. Ice melts at")]
    report = compare_with_contiguous(dev, ids, block_size=4, n_decode=2)
    assert report.max_abs_error <= tl.tolerance(dev.dtype).logits
    chunk = [precompute_chunk(m, ids[1]) for m in (cpu, dev)]
    assert same(chunk[0].k, chunk[1].k, "values")
    assert same(shift_keys(cpu, chunk[0].k, 5), shift_keys(dev, chunk[1].k, 5), "values")
    rows = quality_table(dev, ids, cpu.tokenizer.encode(" and"), ratios=(0.5,))
    assert rows
    spec = [speculative_generate(m, ids[0], max_tokens=4, draft_layers=1, gamma=2) for m in (cpu, dev)]
    assert spec[0].token_ids == spec[1].token_ids
    errors = [int8_error(m, ids[0], n_decode=3) for m in (cpu, dev)]
    assert abs(errors[0]["max_abs_logit_diff"] - errors[1]["max_abs_logit_diff"]) <= 1e-3


# ---- cost and bench -------------------------------------------------------------------------------------
def test_flops_counted_on_the_device_are_the_formulas(dev):
    ids = dev.tokenizer.encode(PROMPT)
    with cost.flop_counter() as counter:
        dev.prefill(ids, dev.new_cache(max_len=len(ids)))
    assert counter.get_total_flops() == cost.prefill_flops(dev, len(ids)).total
    assert cost.kv_cache_bytes(dev, 10) == dev.new_cache(max_len=10).bytes_allocated


def test_bench_and_roofline_measure_on_the_device(cpu, dev):
    ids = cpu.tokenizer.encode(PROMPT)
    ppl = [bench.perplexity(m.forward(ids), ids) for m in (cpu, dev)]
    assert abs(ppl[0] - ppl[1]) <= 1e-3 * ppl[0]
    q = bench.quality(lambda i: dev.forward([i]), lambda i: cpu.forward([i]), cpu.tokenizer)
    assert q["max_abs_logit_diff"] <= tl.tolerance(torch.float32).logits
    points = roofline.measure_phases(dev, prefill_lengths=(8,), decode_batches=(2,), decode_contexts=(16,), reps=1,
                                     budget_s=None)
    assert [p.phase for p in points] == ["prefill", "decode"]
    assert bench.teachllm_greedy(dev, ids, 3) == bench.teachllm_greedy(cpu, ids, 3)
