"""teachllm.fastpath.native and its C kernels ("avx2", and "avx512" where the CPU has it): each C file computes what
its comment says, from the file's own integers, for any number of rows and outputs, with or without the RMSNorm
before it; it is built once into the cache and run only when the cache's manifest vouches for it; without a
compiler, or without the instructions, the chooser leaves it out and says why.

References: the formula of teachllm/fastpath/csrc/gemv_avx2.c written in float64 with PyTorch (each block of
activations rounded to 16-bit integers with its own scale), each matrix's float32 weight (`dequantize()`), and
PyTorch's F.rms_norm.
"""

import pytest
import torch
import torch.nn.functional as F

from teachllm.checkpoints.manifest import MANIFEST, read_manifest, sha256_of
from teachllm.fastpath import kernels, native

pytestmark = pytest.mark.skipif(native.why_not() is not None, reason=f"avx2 kernel: {native.why_not()}")
# the C kernels this CPU runs (avx512 needs AVX-512, and is held back under ATEN_CPU_CAPABILITY=avx2): a kernel
# the CPU cannot run is not a test here; a missing compiler is a skip (an error under CI=true)
C_KERNELS = [name for name in native.C_FILES if native.why_not_on_this_cpu(name) is None]


@pytest.fixture(scope="module")
def qlm(qlm_int4):
    return qlm_int4


def first_outputs(layer, n: int):
    """The first n outputs of a quantised layer, without its int4 copy (PyTorch's int4 packing needs N to be a
    multiple of 16; the C file takes any N)."""
    part = type(layer).__new__(type(layer))
    torch.nn.Module.__init__(part)
    part.register_buffer("blocks", layer.blocks[:n].contiguous())  # [n, G, bytes]
    part.in_features, part.out_features, part.bias = layer.in_features, n, None
    return part


def formula(layer, x: torch.Tensor) -> torch.Tensor:
    """y [R, N] as the C file computes it, in float64: x rounded per block of 32 to s·xi (s = the block's
    largest |x| / 32767, xi integers), then Σ_g d·s·(q·xi) + m·Σx."""
    R, G = x.shape[0], layer.in_features // 32
    blocks = x.view(R, G, 32)  # [R, G, 32]
    s = blocks.abs().amax(-1) / 32767  # [R, G] float32, as the C file
    xi = torch.round(blocks * torch.where(s > 0, 1 / s, 0)[..., None]).double()  # [R, G, 32]
    q = layer.q.double().view(layer.out_features, G, 32)  # [N, G, 32]
    dots = torch.einsum("rgk,ngk->rng", xi, q)  # [R, N, G]: exact integers
    y = (dots * s.double()[:, None] * layer.d.double()[None]).sum(-1)  # [R, N]
    if layer.format == "Q4_1":
        y = y + blocks.double().sum(-1) @ layer.m.double().T  # [R, G] @ [G, N]
    return y


@pytest.mark.floating
@pytest.mark.parametrize("kernel", C_KERNELS)
@pytest.mark.parametrize("name", ["layers.2.mlp.down_proj", "layers.0.self_attn.k_proj", "lm_head"])
@pytest.mark.parametrize("rows", [1, 2, 5])
def test_the_c_kernel_computes_its_formula(qlm, kernel, name, rows):
    """On 10 outputs of a real matrix (Q4_1 or Q8_0; 10 is not a multiple of the 4 the C file takes at a
    time), for one row (decode) and several (prefill), one block of activations all zero: the formula to
    float32 rounding, and float32 within the kernel's bound."""
    full = qlm.model.get_submodule(name)
    layer = first_outputs(full, 10)
    x = torch.randn(rows, layer.in_features, generator=torch.Generator().manual_seed(rows))  # [R, K]
    x[:, 32:64] = 0  # a block with no largest value: its scale is 0, and nothing may become NaN
    y = kernels.build(layer, kernel).mm(x)  # [R, 10]
    expected = formula(layer, x)
    assert float((y.double() - expected).norm() / expected.norm()) < 1e-6
    reference = x @ layer.dequantize().T
    assert float((y - reference).norm() / reference.norm()) <= kernels.KERNELS[kernel].bound


@pytest.mark.floating
@pytest.mark.parametrize("kernel", C_KERNELS)
@pytest.mark.parametrize("rows", [1, 3])
def test_the_c_kernel_applies_the_rms_norm_it_is_given(qlm, kernel, rows):
    """mm(x, norm) is mm(F.rms_norm(x)) to float32 rounding: the fast path lets the C file normalise the residual
    stream as it reads it. The norm's weight is not all ones, and the rows' sizes differ a lot."""
    layer = qlm.model.layers[1].self_attn.q_proj
    norm = qlm.model.layers[1].input_layernorm
    assert not torch.equal(norm.weight, torch.ones_like(norm.weight))
    x = torch.randn(rows, layer.in_features, generator=torch.Generator().manual_seed(7))  # [R, K]
    x = x * torch.logspace(-2, 2, rows)[:, None]
    impl = kernels.build(layer, kernel)
    expected = formula(layer, F.rms_norm(x, (layer.in_features,), norm.weight, norm.eps))  # [R, N] float64
    got = impl.mm(x, norm)
    # float32 rounding of the normalised rows may round an activation to the other 16-bit integer, which moves
    # an output by up to 1/32767 of its block's largest value: 3e-5 leaves room for that, and nothing else
    assert float((got.double() - expected).norm() / expected.norm()) < 3e-5
    unnormalised = formula(layer, x)
    assert float((got.double() - unnormalised).norm() / unnormalised.norm()) > 0.1


@pytest.mark.parametrize("kernel", C_KERNELS)
def test_the_result_does_not_depend_on_the_number_of_threads(qlm, kernel):
    """Each output is one thread's work alone: the head (large enough to be shared) on one thread and on two
    gives the same float32 numbers, bit for bit, for one row and for several."""
    layer = qlm.model.lm_head
    impl = kernels.build(layer, kernel)
    x = torch.randn(3, layer.in_features, generator=torch.Generator().manual_seed(1))  # [3, K]
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        alone = [impl.mm(x[:1]), impl.mm(x)]
        torch.set_num_threads(2)
        shared = [impl.mm(x[:1]), impl.mm(x)]
    finally:
        torch.set_num_threads(threads)
    assert all(torch.equal(a, b) for a, b in zip(alone, shared, strict=True))


@pytest.mark.floating
@pytest.mark.parametrize("kernel", C_KERNELS)
@pytest.mark.parametrize("name", ["layers.3.mlp.down_proj", "lm_head"])
def test_the_c_kernel_reads_the_files_integers(qlm, kernel, name):
    """A one-hot activation reads a column of the weight back: d·q + m (Q4_1) or d·q (Q8_0, whose integers the
    avx512 kernel re-orders), the float32 weight itself (the 16-bit rounding of a block whose only value is 1 is
    exact). Columns 0..7 and 16..23 sit in the two halves of a block."""
    layer = qlm.model.get_submodule(name)
    columns = [*range(8), *range(16, 24)]
    eye = torch.eye(layer.in_features)[columns]  # [16, K]
    read = kernels.build(layer, kernel).mm(eye)  # [16, N]
    torch.testing.assert_close(read, layer.dequantize()[:, columns].T, rtol=1e-6, atol=1e-7)


@pytest.mark.floating
@pytest.mark.parametrize("t", [0, 5])
def test_decode_attention_is_rope_the_cache_write_and_attention(t):
    """attention.h on random numbers, grouped-query shaped (9 q heads, 3 k/v heads, d = 64), for the first token
    (t = 0) and after 5: the new k (RoPE'd) and v land in slot t and nowhere else, and the output is PyTorch's
    F.scaled_dot_product_attention on the RoPE'd q over slots 0..t."""
    lib = native.library()
    n_h, n_kv, d, slots = 9, 3, 64, 8
    g = torch.Generator().manual_seed(t)
    qkv = torch.randn(n_h + 2 * n_kv, d, generator=g)  # [15, d]
    angles = torch.rand(d // 2, generator=g).repeat(2) * 6  # [d]: each angle twice, as RoPE has them
    cos, sin = angles.cos(), angles.sin() * torch.cat([-torch.ones(d // 2), torch.ones(d // 2)])
    k, v = torch.randn(1, n_kv, slots, d, generator=g), torch.randn(1, n_kv, slots, d, generator=g)
    k_before, v_before = k.clone(), v.clone()
    rotated = qkv[:n_h + n_kv] * cos + qkv[:n_h + n_kv].roll(d // 2, dims=-1) * sin  # [12, d]
    out, scores = torch.empty(n_h, d), torch.empty(t + 1)
    work = qkv.clone()
    lib.decode_attention(work.data_ptr(), cos.data_ptr(), sin.data_ptr(), k.data_ptr(), v.data_ptr(), k.stride(1),
                         t, n_h, n_kv, d, 0.125, scores.data_ptr(), out.data_ptr())
    torch.testing.assert_close(work[:n_h + n_kv], rotated, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(k[0, :, t], rotated[n_h:], rtol=1e-6, atol=1e-6)
    assert torch.equal(v[0, :, t], qkv[n_h + n_kv:])
    others = [i for i in range(slots) if i != t]
    assert torch.equal(k[:, :, others], k_before[:, :, others]) and torch.equal(v[:, :, others], v_before[:, :, others])
    expected = F.scaled_dot_product_attention(rotated[None, :n_h, None], k[:, :, :t + 1], v[:, :, :t + 1],
                                              scale=0.125, enable_gqa=True)  # [1, n_h, 1, d]
    torch.testing.assert_close(out, expected[0, :, 0], rtol=1e-5, atol=1e-6)


def test_a_kernel_the_cpu_or_pytorch_cannot_run_is_refused_with_the_reason(monkeypatch):
    """Without the instructions in the CPU's flags, or with PyTorch held below them (ATEN_CPU_CAPABILITY, as
    `make test-avx2` does), the C kernel is not built, and why_not says why."""
    monkeypatch.setattr(native, "cpu_flags", lambda: {"avx2", "fma", "f16c"})
    assert native.why_not("avx2") is None
    assert "needs AVX-512" in native.why_not("avx512")
    monkeypatch.setattr(native, "cpu_flags", lambda: set(native.C_FILES["avx512"].needs))
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx2")
    assert native.why_not("avx512") == "ATEN_CPU_CAPABILITY=avx2 keeps this process below " + \
        native.C_FILES["avx512"].names
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx512")
    assert native.why_not("avx512") is None


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TEACHLLM_CACHE", str(tmp_path))
    native.library.cache_clear()
    yield tmp_path
    native.library.cache_clear()


def test_the_library_is_built_once_and_run_only_when_the_manifest_vouches_for_it(own_cache):
    native.library()
    folder = own_cache / "kernels"
    [built] = folder.glob("gemv_avx2-*.so")
    assert read_manifest(folder)["files"][built.name]["sha256"] == sha256_of(built)
    first = built.stat().st_mtime_ns
    native.library.cache_clear()
    native.library()  # a second process on this machine: the same file, not built again
    assert built.stat().st_mtime_ns == first
    foreign = own_cache / "foreign"
    foreign.write_bytes(b"not what teachllm wrote")
    foreign.replace(built)  # a file the manifest does not vouch for is never loaded (a rename: this process
    #                         still maps the old one, and rewriting a mapped library in place would crash it)
    native.library.cache_clear()
    native.library()
    assert built.read_bytes() != b"not what teachllm wrote"
    assert read_manifest(folder)["files"][built.name]["sha256"] == sha256_of(built)
    assert sorted(p.name for p in folder.iterdir()) == sorted([built.name, MANIFEST])


def test_without_a_compiler_the_chooser_leaves_it_out(qlm, own_cache, monkeypatch):
    monkeypatch.setattr(native, "compiler", lambda: None)
    layer = qlm.model.layers[0].self_attn.k_proj
    with pytest.raises(ValueError, match="kernel avx2 does not run here: no C compiler"):
        kernels.build(layer, "avx2")
    groups = kernels.groups_of(qlm.model)[1:2]  # k_proj, v_proj
    monkeypatch.setattr(kernels, "measure", lambda model, groups, group, impls, **k: {n: 1.0 for n in impls})
    kernels.choose(qlm.model, groups, candidates=("int4", "avx2"))
    assert groups[0].kernel == "int4" and "no C compiler" in groups[0].refused["avx2"]
    assert not (own_cache / "kernels").exists()  # nothing was written


def test_a_cache_it_cannot_write_or_does_not_own_leaves_it_out(qlm, own_cache, monkeypatch, tmp_path_factory):
    """A cache path that is a file, and a kernels folder that is a link to somewhere else: the kernel is
    refused with the reason, nothing is written through the link, and loading goes on with the others."""
    layer = qlm.model.layers[0].self_attn.k_proj
    blocked = own_cache / "a file"
    blocked.write_text("")
    monkeypatch.setenv("TEACHLLM_CACHE", str(blocked))
    with pytest.raises(ValueError, match="kernel avx2 does not run here: cannot build or load the C kernel"):
        kernels.build(layer, "avx2")
    elsewhere = tmp_path_factory.mktemp("not-teachllms")
    (own_cache / "kernels").symlink_to(elsewhere, target_is_directory=True)
    monkeypatch.setenv("TEACHLLM_CACHE", str(own_cache))
    with pytest.raises(ValueError, match="is a link; teachllm writes only into folders of its own"):
        kernels.build(layer, "avx2")
    assert list(elsewhere.iterdir()) == []
