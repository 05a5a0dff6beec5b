"""A second device that computes on the CPU, so that device bugs show without a GPU.

On a GPU machine three kinds of bug raise that the CPU alone never shows:
- a CPU tensor meeting a CUDA one (`torch.cat`, `gather`, `masked_fill`, a matmul): "Expected all tensors to be on
  the same device";
- `.numpy()` on a CUDA tensor: "can't convert cuda:0 device type tensor to numpy";
- a CPU `torch.Generator` drawing for CUDA logits: "Expected a 'cuda' device type for generator but found 'cpu'".

Here a tensor "on the second device" is a wrapper (`Remote`) around an ordinary CPU tensor. Every operation on it
runs PyTorch's own CPU kernel on the wrapped tensor (so the numbers are the CPU's, bit for bit, and views and
in-place writes alias as they should), after the rules CUDA applies: a CPU tensor may meet a device tensor only as a
0-dimensional scalar, as an index, or in a copy; `.numpy()` refuses; a generator must be the device's own. The
device type is PyTorch's spare one for out-of-tree backends (PrivateUse1), renamed `second`, with the do-nothing
device guard PyTorch provides for Python backends. torch's lazy TorchScript backend was tried first: it computes on
the CPU too, but loses track of views (a row taken out of a batch of logits comes back as a CPU tensor once later
work has run), so it reports bugs that are not there.

    import second_device
    with second_device.emulated():                      # factories, .to() and generators know the device
        lm = second_device.move(tl.load(device="cpu"))  # the same model, on the second device
    second_device.install()                             # for a whole process: tl.load() gives such models

tests/test_second_device.py runs the engine, viz, serving, cost and bench paths this way;
`scripts/run_chapters.py --device second` runs every chapter.
"""

from __future__ import annotations

import contextlib
import functools

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_leaves, tree_map

NAME = "second"  # the device type it appears as: PyTorch's spare backend (PrivateUse1), renamed
DEVICE: torch.device | None = None  # second:0, once `available()` has set the type up
_ready = False


def available() -> str | None:
    """None if the device can be emulated here, else why not."""
    global _ready, DEVICE
    if not _ready:
        try:
            from torch.utils.backend_registration import _setup_privateuseone_for_python_backend

            if torch._C._get_privateuse1_backend_name() != NAME:
                _setup_privateuseone_for_python_backend(rename=NAME)  # a device type, with a device guard
                _register_allocators()
        except Exception as e:  # noqa: BLE001 - any failure means the device cannot be named here
            return f"PyTorch's spare device type cannot be set up here: {type(e).__name__}: {e}"
        _ready = True
    DEVICE = torch.device(NAME, 0)
    return None


_LIBRARY = None


def _register_allocators() -> None:
    """PyTorch's composite operations (scaled_dot_product_attention's math, for one) allocate their outputs with
    `empty` on the inputs' device, below the wrapper: give the device an `empty` that makes a wrapped CPU tensor."""
    global _LIBRARY
    _LIBRARY = torch.library.Library("aten", "IMPL")

    def empty(size, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
        return Remote(torch.empty(size, dtype=dtype, layout=layout, memory_format=memory_format))

    def empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
        return Remote(torch.empty_strided(size, stride, dtype=dtype, layout=layout))

    def copy_from(self, dst, non_blocking=False):
        _unwrap(dst).copy_(_unwrap(self))
        return dst

    def copy_from_and_resize(self, dst):
        _unwrap(dst).resize_(self.shape).copy_(_unwrap(self))
        return dst

    _LIBRARY.impl("empty.memory_format", empty, "PrivateUse1")
    _LIBRARY.impl("empty_strided", empty_strided, "PrivateUse1")
    _LIBRARY.impl("_copy_from", copy_from, "PrivateUse1")
    _LIBRARY.impl("_copy_from_and_resize", copy_from_and_resize, "PrivateUse1")


def on_device(x) -> bool:
    return isinstance(x, Remote)


class Remote(torch.Tensor):
    """A tensor on the second device: it holds a CPU tensor (`elem`) and runs each operation on it, CUDA's rules
    first."""

    @staticmethod
    def __new__(cls, elem: torch.Tensor):
        self = torch.Tensor._make_wrapper_subclass(cls, elem.size(), strides=elem.stride(),
                                                   storage_offset=elem.storage_offset(), dtype=elem.dtype,
                                                   layout=elem.layout, device=DEVICE, requires_grad=elem.requires_grad)
        self.elem = elem
        return self

    def __repr__(self, *, tensor_contents=None) -> str:
        return f"{self.elem!r} on {DEVICE}"

    def tolist(self):
        return self.elem.tolist()  # CUDA tensors copy to the host here too

    def numpy(self, *args, **kwargs):
        raise TypeError(f"can't convert {DEVICE} device type tensor to numpy. Use Tensor.cpu() to copy the tensor "
                        "to host memory first.")

    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        _check(func, args, kwargs)
        unwrapped_args = tree_map(_unwrap, args)
        out = func(*unwrapped_args, **tree_map(_unwrap, kwargs))
        to_cpu = torch.device(kwargs.get("device") or DEVICE).type == "cpu"
        if func.overloadpacket is torch.ops.aten._to_copy and to_cpu:
            return out  # .cpu(), .to("cpu"): an ordinary tensor
        if isinstance(out, torch.Tensor) and unwrapped_args and out is unwrapped_args[0]:
            return args[0]  # in place: the same tensor
        return tree_map(lambda x: Remote(x) if isinstance(x, torch.Tensor) and not on_device(x) else x, out)


def _unwrap(x):
    return x.elem if on_device(x) else x


# where CUDA accepts a CPU tensor beside a device one: as an index, in a copy, or (any op) a 0-dimensional scalar
MIXING = {"index", "index_put", "index_put_", "_index_put_impl_", "copy_", "_to_copy", "lift_fresh", "set_"}


def _check(func, args, kwargs) -> None:
    leaves = tree_leaves((args, kwargs))
    name = func.overloadpacket.__name__
    if name.startswith(("index", "_index")) and args and not on_device(args[0]):  # device indices into a CPU tensor
        raise RuntimeError(f"indices should be either on cpu or on the same device as the indexed tensor (cpu) "
                           f"(when checking argument for {name})")
    if name not in MIXING:
        for x in leaves:
            if isinstance(x, torch.Tensor) and not on_device(x) and x.dim() > 0:
                raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                                   f"{DEVICE} and cpu! (when checking argument for {name})")


# ---- random generators: one device each, as on CUDA ----------------------------------------------------
class Generator(torch.Generator):
    """torch.Generator, except that device="second" gives the second device's own generator: a CPU generator (which
    the CPU kernels underneath draw with) that reports the second device as its own."""

    def __new__(cls, device="cpu"):
        device = torch.device(device)
        if device.type != NAME:
            return _torch_generator(device)
        return super().__new__(cls, "cpu")

    def manual_seed(self, seed):
        super().manual_seed(seed)
        return self  # torch's returns a plain Generator, which would forget its device

    @property
    def device(self) -> torch.device:
        return DEVICE


_torch_generator = torch.Generator


# ---- making tensors on the device: factories, .to(), modules ----------------------------------------------
def _targets_device(value) -> bool:
    if value is None or isinstance(value, (torch.dtype, torch.Tensor, bool)):
        return False
    try:
        return torch.device(value).type == NAME
    except (RuntimeError, TypeError):
        return False


class Emulation(TorchFunctionMode):
    """Turns `torch.zeros(..., device="second")`, `torch.tensor(..., device=...)`, `x.to("second")` and the like into
    tensors on the second device; everything else passes through to the tensors themselves."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        name = getattr(func, "__name__", "")
        generator = kwargs.get("generator")
        if isinstance(generator, _torch_generator):  # a draw: the generator must be the drawing device's own
            tensors = [a for a in tree_leaves(args) if isinstance(a, torch.Tensor)]
            target = tensors[0].device if tensors else torch.device(kwargs.get("device") or "cpu")
            if generator.device.type != target.type:
                raise RuntimeError(f"Expected a '{target.type}' device type for generator but found "
                                   f"'{generator.device.type}'")
        if name in ("to", "cuda") and args and isinstance(args[0], torch.Tensor) and not on_device(args[0]):
            target = kwargs.get("device", next((a for a in args[1:] if not isinstance(a, torch.dtype)
                                                and _targets_device(a)), None))
            if _targets_device(target):
                dtype = kwargs.get("dtype", next((a for a in args[1:] if isinstance(a, torch.dtype)), None))
                moved = args[0].to(dtype=dtype) if dtype is not None else args[0]
                return Remote(moved.clone() if moved is args[0] else moved)
        if _targets_device(kwargs.get("device")) and not any(on_device(a) for a in tree_leaves(args)):
            kwargs["device"] = "cpu"  # the device's own generator is a CPU one underneath
            out = func(*args, **kwargs)
            return Remote(out) if isinstance(out, torch.Tensor) else out
        return func(*args, **kwargs)


@contextlib.contextmanager
def emulated():
    """Within: the second device can be named in factories and `.to()`, and has its own random generators."""
    if available() is not None:
        raise RuntimeError(available())
    torch.Generator = Generator
    try:
        with Emulation():
            yield
    finally:
        torch.Generator = _torch_generator


def move(lm):
    """Move a LanguageModel loaded on the CPU to the second device, in place (inside `emulated()`); returns it."""
    lm.model.to(DEVICE)
    if lm.config.tie_word_embeddings:  # .to() gives each module its own wrapped copy: tie them again, as on a GPU
        lm.model.lm_head.weight = lm.model.embed_tokens.weight
    return lm


def install() -> None:
    """For a whole process (a chapter run by scripts/run_chapters.py --device second): the emulation stays on, and
    `tl.load()` loads on the CPU and moves the model to the second device, unless it is asked for another device
    or for the GGUF's weights (which run on the CPU)."""
    import teachllm as tl
    import teachllm.lm

    if available() is not None:
        raise RuntimeError(available())
    original = teachllm.lm.load

    @functools.wraps(original)
    def load(name_or_path=None, device="auto", dtype=None, progress=True, weights="float", kernel="auto"):
        if weights == "gguf" or str(device).split(":")[0] not in ("auto", NAME):
            return original(name_or_path, device, dtype, progress, weights, kernel)
        return move(original(name_or_path, "cpu", dtype, progress, weights, kernel))

    tl.load = teachllm.lm.load = load
    torch.Generator = Generator
    Emulation().__enter__()  # for the rest of the process
