"""teachllm.fastpath.kernels: every candidate computes within its bound, the faithful ones keep the model within the
4-bit path's bound against float32 (and the others do not, which is why they are never chosen), and the chooser
picks the fastest faithful kernel that runs here, refuses one that computes wrongly, and measures once.

References: each matrix's float32 weight (`dequantize()`, equal to tl.load()'s, see test_quant.py) and the
float32 model's logits and greedy tokens on the bench's 20 prompts. These hold for whichever kernel a CPU
picks, under AVX-512 and AVX2 dispatch alike (`make test-avx2`).
"""

import json

import pytest
import torch

import teachllm as tl
from teachllm.bench import QUALITY_PROMPTS
from teachllm.checkpoints.convert import clear_cache
from teachllm.fastpath import kernels, native

pytestmark = [pytest.mark.floating, pytest.mark.usefixtures("one_thread")]

NEAR_TIE = 0.5  # tests/test_quant.py says why: below it, bfloat16 rounding may pick either token
MEAN_KL = 3e-3  # nats per position, over the 20 prompts: the bound of the 4-bit path (tests/test_quant.py)


@pytest.fixture(scope="module")
def qlm(qlm_int4):
    return qlm_int4


@pytest.fixture(scope="module")
def reference(lm):
    """float32 logits [S, V] of each of the bench's 20 prompts."""
    return {text: lm.forward(lm.tokenizer.encode(text))[0] for text in QUALITY_PROMPTS}


# every kernel this CPU can run: a C kernel for other instructions (avx512 on an AVX2 CPU, or under
# ATEN_CPU_CAPABILITY=avx2) is left out; one that only lacks a compiler stays, and skips (an error under CI=true)
HERE = [k for k in kernels.KERNELS if k not in native.C_FILES or native.why_not_on_this_cpu(k) is None]


def needs(kernel):
    """Skip where `kernel` cannot run on this machine (a C kernel without its instructions or a C compiler)."""
    if kernel in native.C_FILES and native.why_not(kernel):
        pytest.skip(f"{kernel}: {native.why_not(kernel)}")


def divergence(qlm, reference) -> tuple[float, float, list]:
    """mean KL(float32 ‖ model) per position, max |Δlogit|, and the positions whose argmax differs with
    float32's margin there (its own choice over the model's)."""
    kls, worst, flips = [], 0.0, []
    for text, ref in reference.items():
        got = qlm.forward(qlm.tokenizer.encode(text))[0]  # [S, V]
        logp = ref.log_softmax(-1)
        kls.append((logp.exp() * (logp - got.log_softmax(-1))).sum(-1))
        worst = max(worst, float((got - ref).abs().max()))
        mine, theirs = ref.argmax(-1), got.argmax(-1)
        margin = (ref.gather(-1, mine[:, None]) - ref.gather(-1, theirs[:, None]))[:, 0]  # [S]
        flips += [float(m) for m in margin[mine != theirs]]
    return float(torch.cat(kls).mean()), worst, flips


# ---- one matrix ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kernel", HERE)
def test_each_kernel_computes_within_its_bound(qlm, kernel):
    """Every matrix shape of the model (a layer's seven and the head), on random activations and on a real
    hidden state: ‖kernel − float32‖ / ‖float32‖ within the kernel's bound; float32 agrees to rounding."""
    needs(kernel)
    names = [n for n, m in qlm.model.named_modules() if hasattr(m, "use_kernel")]
    names = [n for n in names if n.startswith("layers.0.")] + ["lm_head"]
    hidden = qlm.model.embed_tokens(torch.tensor([qlm.tokenizer.encode("The sky is blue because")]))[0]  # [S, h]
    for name in names:
        layer = qlm.model.get_submodule(name)
        impl = kernels.build(layer, kernel)  # the probe (random activations) is checked inside
        x = hidden if layer.in_features == hidden.shape[-1] else torch.randn(3, layer.in_features)
        reference = x @ layer.dequantize().T  # [S, N]
        error = float((impl(x) - reference).norm() / reference.norm())
        assert error <= kernels.KERNELS[kernel].bound, (name, kernel, error)
        if kernel == "float32":
            assert error < 1e-6


def test_int4_keeps_the_files_integers(qlm):
    """int4 multiplies by the stored integers themselves: a one-hot activation reads a column back, equal to
    the float32 weight's up to the kernel's bfloat16 scales and output."""
    layer = qlm.model.layers[3].mlp.down_proj
    eye = torch.eye(layer.in_features)[:8]  # [8, K]: columns 0..7
    column = kernels.build(layer, "int4")(eye)  # [8, N]
    expected = layer.dequantize()[:, :8].T  # [8, N]
    assert float((column - expected).abs().max()) <= 2 ** -7 * float(expected.abs().max())


# ---- the whole model --------------------------------------------------------------------------------------
@pytest.mark.parametrize("kernel", [k for k in kernels.FAITHFUL if k in HERE])
def test_a_faithful_kernel_keeps_the_model_within_the_bound(qlm, reference, kernel):
    """Every matrix on `kernel`: mean KL ≤ 3e-3 over the 20 prompts, max |Δlogit| ≤ 1.5, and an argmax that
    differs from float32's only where float32's own margin is under NEAR_TIE."""
    needs(kernel)
    qlm.set_kernel(kernel)
    try:
        kl, worst, flips = divergence(qlm, reference)
    finally:
        qlm.set_kernel("int4")
    print(f"{kernel}: mean KL {kl:.2e}, max |Δlogit| {worst:.3f}, argmax flips at margins {flips}")
    assert kl <= MEAN_KL and worst <= 1.5
    assert all(m < NEAR_TIE for m in flips), flips


@pytest.mark.parametrize("kernel", [k for k in kernels.KERNELS if not kernels.KERNELS[k].faithful])
def test_an_unfaithful_kernel_breaks_the_bound(qlm, reference, kernel):
    """Why int8 and dynamic-int8 are never chosen, though they may be fast: on every matrix, the model leaves
    the bound (int8's one scale per row loses the 32-weight blocks' precision; dynamic-int8 also rounds each
    call's activations to 8 bits)."""
    qlm.set_kernel(kernel)
    try:
        kl, worst, _ = divergence(qlm, reference)
    finally:
        qlm.set_kernel("int4")
    print(f"{kernel}: mean KL {kl:.2e}, max |Δlogit| {worst:.3f}")
    assert kl > MEAN_KL


# ---- the chooser ------------------------------------------------------------------------------------------
@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TEACHLLM_CACHE", str(tmp_path))
    return tmp_path


def test_the_chooser_measures_once_and_picks_a_faithful_kernel(qlm, own_cache, monkeypatch):
    calls = []
    real = kernels.measure
    monkeypatch.setattr(kernels, "measure", lambda *a, **k: calls.append(1) or real(*a, **k))
    qlm.set_kernel("auto")
    try:
        choice = qlm.kernels
        assert choice.how == "measured" and len(calls) == len(choice.groups) == 5  # q/o, k/v, gate/up, down, head
        print(f"\n{qlm.describe()}")
        for g in choice.groups:
            assert g.kernel in kernels.FAITHFUL and set(g.step_ms) <= set(kernels.FAITHFUL)
            best = min(g.step_ms.values())
            assert g.step_ms[g.kernel] <= best / (1 - kernels.TIE)  # the fastest, or within a tie of it
            assert all(qlm.model.get_submodule(n).kernel == g.kernel for n in g.names)
        saved = [p for p in (own_cache / "kernels").glob("*.json") if p.name != "teachllm-manifest.json"]
        assert len(saved) == 1 and (own_cache / "kernels" / "teachllm-manifest.json").is_file()
        qlm.set_kernel("auto")  # a second load on this machine reads the choice
        assert qlm.kernels.how == "cached" and len(calls) == 5
        assert [g.kernel for g in qlm.kernels.groups] == [g.kernel for g in choice.groups]
        assert clear_cache() == [own_cache / "kernels"] and not (own_cache / "kernels").exists()
    finally:
        qlm.set_kernel("int4")


def test_the_chooser_takes_the_fastest_and_on_a_near_tie_the_most_faithful(qlm, own_cache, monkeypatch):
    times = {"int4": 10.0, "avx2": 11.0, "avx512": 11.5, "float16": 9.9, "bfloat16": 12.0, "float32": 8.0}
    monkeypatch.setattr(kernels, "measure", lambda model, groups, group, impls, **k: {n: times[n] for n in impls})
    groups = kernels.groups_of(qlm.model)[-1:]  # the head: one matrix, quick to build in every layout
    kernels.choose(qlm.model, groups)
    assert groups[0].kernel == "float32" and groups[0].why.startswith("fastest: 8.00 ms")
    times.update(float32=12.0, avx2=10.2)  # int4, float16 and avx2 within TIE of float16: avx2 is the closest
    assert kernels.pick(times) == "avx2"
    times.update(avx512=10.1)  # avx2 and avx512 have the same bound: the faster of the two
    assert kernels.pick(times) == "avx512"
    times.update(avx2=10.5, avx512=11.5)  # 10.5 > 9.9 / 0.97: no longer a tie; float16 (bound 2e-3) beats int4 (1e-2)
    assert kernels.pick(times) == "float16"
    times.update(float16=11.0)  # int4 alone is fastest
    assert kernels.pick(times) == "int4"
    del times["float32"], times["avx2"], times["avx512"]
    kernels.choose(qlm.model, groups, candidates=("int4", "float16", "bfloat16"))
    assert groups[0].kernel == "int4"
    times.update(float16=10.1)  # a tie: float16's bound (2e-3) is below int4's (1e-2)
    kernels.choose(qlm.model, groups, candidates=("int4", "float16", "bfloat16"))
    assert groups[0].kernel == "float16" and groups[0].why.startswith("a tie, closest to float32: 10.10 ms")
    kernels.use(qlm.model, groups[0], kernel="int4")


class Broken(torch.nn.Module):
    """A kernel that is fast and wrong: it returns zeros."""

    takes = torch.float32
    nbytes = 0

    def __init__(self, layer, weight=None):
        super().__init__()
        self.n = layer.out_features

    def mm(self, rows):
        return torch.zeros(rows.shape[0], self.n)

    def forward(self, x):
        return torch.zeros(*x.shape[:-1], self.n)


def test_the_chooser_refuses_a_kernel_that_computes_wrongly(qlm, own_cache, monkeypatch):
    broken = kernels.Kernel("broken", Broken, True, 1e-2)
    monkeypatch.setitem(kernels.KERNELS, "broken", broken)
    groups = kernels.groups_of(qlm.model)[1:2]  # k_proj, v_proj
    kernels.choose(qlm.model, groups, candidates=("int4", "broken"))
    assert groups[0].kernel == "int4" and "broken" not in groups[0].step_ms
    assert "off by 1.0e+00 on a probe" in groups[0].refused["broken"]


def test_forcing_a_kernel_and_what_describe_says(qlm):
    qlm.set_kernel("float16")
    try:
        assert {qlm.model.get_submodule(n).kernel for g in qlm.kernels.groups for n in g.names} == {"float16"}
        assert "float16" in qlm.describe() and "forced" in qlm.describe()
        qlm.set_kernel("int8")
        assert "outside the faithful bound" in qlm.describe()
    finally:
        qlm.set_kernel("int4")
    with pytest.raises(ValueError, match="kernel"):
        tl.load(weights="gguf", kernel="int3", progress=False)
    with pytest.raises(ValueError, match="only with weights='gguf'"):
        tl.load(kernel="int4", progress=False)


def test_a_damaged_saved_choice_is_measured_again(qlm, own_cache, monkeypatch):
    monkeypatch.setattr(kernels, "measure", lambda model, groups, group, impls, **k: {n: 1.0 for n in impls})
    qlm.set_kernel("auto")
    try:
        path = next(p for p in (own_cache / "kernels").glob("*.json") if p.name != "teachllm-manifest.json")
        saved = json.loads(path.read_text())
        saved["groups"][0]["kernel"] = "int3"
        path.write_text(json.dumps(saved))
        qlm.set_kernel("auto")
        assert qlm.kernels.how == "measured"
    finally:
        qlm.set_kernel("int4")
