"""The GPU fast path's static KV cache and its decode step, checked on the CPU (issue 35):
- StaticKVCache gives the logits KVCache gives, prefill and every decode step, left padding and GQA included;
- a decode step reads no Python number from a device tensor and changes no shape (or scalar argument) from one
  step to the next, checked by recording every aten operation; the same check fails on KVCache, whose shapes grow;
- the CUDA-graph decoder falls back to the eager step where CUDA is absent, with the same tokens;
- bad input is refused with the value and the fix.
"""

import pytest
import torch
from tiny_decoder import random_decoder
from torch.utils._python_dispatch import TorchDispatchMode

from teachllm.cache import KVCache
from teachllm.fastpath.graph import BATCH_SIZES, CudaGraphDecoder, decode_step, prefill
from teachllm.fastpath.static_cache import StaticKVCache

pytestmark = pytest.mark.floating  # results depend on the CPU's kernels: `make test-avx2` runs it under AVX2 too

STEPS = 10  # greedy decode steps after each prefill
MAX_LEN = 32


def tiny(n_kv_heads=2, seed=0):
    """A tiny random decoder, weights large enough that greedy choices vary from step to step."""
    return random_decoder(seed, n_kv_heads=n_kv_heads, max_position_embeddings=64)


def caches(model, batch):
    w = model.embed_tokens.weight
    return (KVCache(model.config, MAX_LEN, batch, dtype=w.dtype, device=w.device),
            StaticKVCache(model.config, MAX_LEN, batch, dtype=w.dtype, device=w.device))


def prompts(batch, length=7, seed=1):
    """Token ids [B, S] and the left padding of each row: row b has b + 1 fewer real tokens than row 0 (batch 1:
    none)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(4, 101, (batch, length), generator=g)  # [B, S]
    pad = torch.tensor([0 if batch == 1 else min(b * 2, length - 1) for b in range(batch)])  # [B]
    ids[torch.arange(length)[None, :] < pad[:, None]] = 0  # padding id 0 (hidden by the mask anyway)
    return ids, pad


@torch.no_grad()
def both_paths(model, ids, pad, forward=None, reference=None):
    """Prefill `ids` [B, S] (left-padded by `pad` [B]) then STEPS greedy steps: `reference` (model.py, by default
    `model`) on a KVCache, and `forward` (by default `model`; or the same weights fused) on a StaticKVCache, which
    chooses the tokens. The logits of both at every step, [STEPS + 1] lists of [B, V]."""
    forward = model if forward is None else forward
    reference = model if reference is None else reference
    plain, static = caches(model, ids.shape[0])
    plain.start.copy_(pad)
    got_plain = [reference(ids, plain, last_only=True)[:, -1]]  # [B, V]
    got_static = [prefill(forward, ids, static, pad)]  # [B, V]
    for _ in range(STEPS):
        token = got_static[-1].argmax(-1)  # [B]
        got_plain.append(reference(token[:, None], plain, last_only=True)[:, -1])
        got_static.append(forward(token[:, None], static, last_only=True)[:, -1])
    return got_plain, got_static


@pytest.mark.parametrize("n_kv_heads", [4, 2, 1], ids=["mha", "gqa", "mqa"])
@pytest.mark.parametrize("batch", [1, 3])
def test_the_static_cache_gives_kvcaches_logits(batch, n_kv_heads):
    model = tiny(n_kv_heads)
    got_plain, got_static = both_paths(model, *prompts(batch))
    worst = max((a - b).abs().max().item() for a, b in zip(got_plain, got_static, strict=True))
    print(f"batch {batch}, n_kv_heads {n_kv_heads}: max |Δlogit| over prefill + {STEPS} steps = {worst:.3g}")
    for step, (a, b) in enumerate(zip(got_plain, got_static, strict=True)):
        torch.testing.assert_close(b, a, msg=lambda m, step=step: f"step {step}: {m}")  # float32 defaults
    # the tokens chosen differ from step to step: the comparison is not of one repeated token
    assert len({tuple(s.argmax(-1).tolist()) for s in got_static}) > 3


def test_the_cache_holds_what_kvcache_holds():
    """After prefill and steps, the filled slots of both caches hold the same K and V, and the static cache's
    length on the device equals its count on the host."""
    model = tiny()
    plain, static = caches(model, 3)
    ids, pad = prompts(3)
    plain.start.copy_(pad)
    with torch.no_grad():
        model(ids, plain)
        prefill(model, ids, static, pad)
        for token in (5, 6, 7):
            t = torch.full((3, 1), token)
            model(t, plain)
            decode_step(model, t, static)
    n = plain.length
    assert static.filled == n and static.length.item() == n
    torch.testing.assert_close(static.k[..., :n, :], plain.k[..., :n, :])
    torch.testing.assert_close(static.v[..., :n, :], plain.v[..., :n, :])
    assert static.k[..., n:, :].abs().max() == 0  # nothing written past the filled slots


# ---- a decode step without host synchronisation ------------------------------------------------------------------
SCALAR_OPS = {"aten._local_scalar_dense", "aten.item", "aten.is_nonzero", "aten.equal", "aten.is_same_size"}


class Recorder(TorchDispatchMode):
    """Every aten operation run under it: its name and its signature (the shapes of its tensor arguments and
    results, and every other argument as written), in order."""

    def __init__(self):
        super().__init__()
        self.ops: list[tuple[str, tuple]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        self.ops.append((str(func.overloadpacket._qualified_op_name).replace("::", "."),
                         signature((args, kwargs, out))))
        return out


def signature(x):
    if isinstance(x, torch.Tensor):
        return ("tensor", tuple(x.shape), x.dtype, x.device.type)
    if isinstance(x, (list, tuple)):
        return tuple(signature(i) for i in x)
    if isinstance(x, dict):
        return tuple((k, signature(v)) for k, v in sorted(x.items()))
    return repr(x)


def recorded_steps(step, first_token, n_steps=6):
    """Run `step(token) -> next token` n_steps times, each under its own Recorder; the recorders."""
    recorders, token = [], first_token
    for _ in range(n_steps):
        with Recorder() as r:
            token = step(token)
        recorders.append(r)
    return recorders


def scalar_reads(recorder):
    return [name for name, _ in recorder.ops if name in SCALAR_OPS]


def shape_changes(a, b):
    """Where two steps' operations differ: their count, or the first operation whose signature differs."""
    if len(a.ops) != len(b.ops):
        return [f"{len(a.ops)} operations, then {len(b.ops)}"]
    return [f"op {i} {x[0]}" for i, (x, y) in enumerate(zip(a.ops, b.ops, strict=True)) if x != y]


@torch.no_grad()
def check_no_host_synchronisation(model, forward=None):
    """Decode steps of `forward` (model.py's `model` itself, or the same weights fused) on a StaticKVCache read
    nothing back and keep every shape: called eagerly, and through the graph decoder's entry (here its eager
    fallback, 3 rows of an 8-row cache)."""
    forward = model if forward is None else forward
    static = StaticKVCache(model.config, MAX_LEN, 3, dtype=torch.float32, device="cpu")
    ids, pad = prompts(3)
    first = prefill(forward, ids, static, pad).argmax(-1)  # [B]
    steps = recorded_steps(lambda t: decode_step(forward, t, static), first)
    assert len(steps[1].ops) > 30  # the recorder sees the whole forward pass
    for r in steps:
        assert scalar_reads(r) == []
    assert shape_changes(steps[1], steps[4]) == []
    assert shape_changes(steps[0], steps[5]) == []

    cache = StaticKVCache(model.config, MAX_LEN, 8, dtype=torch.float32, device="cpu")
    decoder = CudaGraphDecoder(forward, cache)
    first = prefill(forward, ids, cache.rows(3), pad).argmax(-1)  # [B]
    steps = recorded_steps(decoder, first)
    assert all(scalar_reads(r) == [] for r in steps) and shape_changes(steps[1], steps[4]) == []


def test_a_decode_step_makes_no_host_synchronisation_and_keeps_every_shape():
    check_no_host_synchronisation(tiny())


@torch.no_grad()
def test_the_checks_fail_on_a_path_that_syncs_or_grows():
    """The same checks on KVCache's step report the shapes it grows; a step that reads its token back (as
    generate.py does) reports the read."""
    model = tiny()
    plain, _ = caches(model, 3)
    ids, pad = prompts(3)
    plain.start.copy_(pad)
    first = model(ids, plain, last_only=True)[:, -1].argmax(-1)  # [B]
    steps = recorded_steps(lambda t: model(t[:, None], plain, last_only=True)[:, -1].argmax(-1), first)
    assert scalar_reads(steps[2]) == []
    assert shape_changes(steps[1], steps[4])  # the keys, the mask, the scores: one slot longer each step

    _, static = caches(model, 1)
    first = prefill(model, ids[:1], static)

    def reads_back(t):
        token = int(decode_step(model, t, static)[0])  # a Python int from a device tensor: a synchronisation
        return torch.tensor([token])

    steps = recorded_steps(reads_back, first.argmax(-1))
    assert scalar_reads(steps[1]) == ["aten._local_scalar_dense"]


# ---- the CUDA-graph decoder --------------------------------------------------------------------------------------
@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the fallback where CUDA is absent")
@torch.no_grad()
def test_the_graph_decoder_falls_back_to_the_eager_step_without_cuda():
    model = tiny()
    ids, pad = prompts(3)
    _, eager = caches(model, 3)
    graphed_cache = StaticKVCache(model.config, MAX_LEN, 8, dtype=torch.float32, device="cpu")  # 8 rows, 3 used
    decoder = CudaGraphDecoder(model, graphed_cache)
    assert not decoder.uses_graphs and "CUDA is not available" in decoder.reason
    assert decoder.batch_sizes == [1, 2, 4, 8]
    a = prefill(model, ids, eager, pad).argmax(-1)  # [B]
    b = prefill(model, ids, graphed_cache.rows(3), pad).argmax(-1)
    for _ in range(STEPS):
        a, b = decode_step(model, a, eager), decoder(b)
        assert torch.equal(a, b)
    assert graphed_cache.filled == eager.filled == ids.shape[1] + STEPS


def test_the_recorded_batch_sizes_and_the_padding():
    model = tiny()
    big = StaticKVCache(model.config, 8, 40, dtype=torch.float32, device="cpu")
    decoder = CudaGraphDecoder(model, big)
    assert decoder.batch_sizes == list(BATCH_SIZES)
    assert [decoder.padded_size(n) for n in (1, 3, 5, 9, 17, 32)] == [1, 4, 8, 16, 32, 32]
    assert CudaGraphDecoder(model, StaticKVCache(model.config, 8, 3, dtype=torch.float32,
                                                 device="cpu")).batch_sizes == [1, 2, 3]


# ---- bad input ---------------------------------------------------------------------------------------------------
def test_bad_input_is_refused_with_the_value_and_the_fix():
    model = tiny()
    config = model.config
    small = StaticKVCache(config, 5, 1, dtype=torch.float32, device="cpu")
    with pytest.raises(ValueError, match=r"holds 0 of 5 slots, and 7 more token\(s\) do not fit.*larger max_len"):
        prefill(model, torch.zeros(1, 7, dtype=torch.long), small)

    full = StaticKVCache(config, 4, 1, dtype=torch.float32, device="cpu")
    prefill(model, torch.zeros(1, 4, dtype=torch.long), full)
    with pytest.raises(ValueError, match="holds 4 of 4 slots"):
        decode_step(model, torch.zeros(1, dtype=torch.long), full)
    with pytest.raises(ValueError, match=r"holds 4 tokens; call cache.reset\(\)"):
        prefill(model, torch.zeros(1, 2, dtype=torch.long), full)

    with pytest.raises(ValueError, match="context window of 64 tokens; give max_len <= 64"):
        StaticKVCache(config, 65, 1, dtype=torch.float32, device="cpu")
    with pytest.raises(ValueError, match="batch_size=0"):
        StaticKVCache(config, 8, 0, dtype=torch.float32, device="cpu")

    cache = StaticKVCache(config, 8, 40, dtype=torch.float32, device="cpu")
    decoder = CudaGraphDecoder(model, cache)
    with pytest.raises(ValueError, match="batch of 33 rows is larger than the largest recorded batch size, 32"):
        decoder(torch.zeros(33, dtype=torch.long))
    with pytest.raises(ValueError, match=r"2 rows of token ids for a cache of batch_size=3.*cache.rows\(2\)"):
        decode_step(model, torch.zeros(2, dtype=torch.long), StaticKVCache(config, 8, 3, dtype=torch.float32,
                                                                           device="cpu"))
    with pytest.raises(ValueError, match="must be a LongTensor"):
        decode_step(model, torch.zeros(1, dtype=torch.int32), small)
    with pytest.raises(ValueError, match=r"shape \[1, 2\]; give \[B\] or \[B, 1\]"):
        decode_step(model, torch.zeros(1, 2, dtype=torch.long), small)
    with pytest.raises(ValueError, match=r"before prefill: its cache already holds 4 tokens.*cache.reset\(\)"):
        CudaGraphDecoder(model, full)
    with pytest.raises(ValueError, match=r"rows\(9\): this cache holds 8 rows"):
        StaticKVCache(config, 8, 8, dtype=torch.float32, device="cpu").rows(9)
