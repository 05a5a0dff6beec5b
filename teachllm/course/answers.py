"""What crosses the grader's sandbox: a student's answers out, the tests' inputs in, as plain data.

scripts/grade.py runs each submission in a sandbox (bubblewrap) and the exercise's tests outside it, on a pristine
teachllm. Inside, scripts/grade_runner.py runs the notebook and answers the grader's questions about it: the value
a name holds, or what one of the student's functions returns on the inputs a test gives it. The two sides send one
JSON object per line through a pair of pipes (`Channel`); a value travels as `encode(value)` and comes out as
`decode(data)`:

    None, bool, int, float (nan and ±inf too), str, list     as themselves
    tuple, set, frozenset, dict, range, bytes               {"$": "tuple", "items": [...]} and the like
    torch tensors and numpy arrays, their scalars too        {"$": "tensor", "dtype", "shape", "b64"}: every byte
    torch.Size, torch.dtype                                  {"$": "size", ...}, {"$": "dtype", "name": ...}
    a dataclass of teachllm (SamplingParams, ModelConfig,    {"$": "dataclass", "class", "fields"}, rebuilt by its
      a serving run) or one of its enums                     constructor, so its own checks run on the fields
    anything else                                            {"$": "opaque", "type": "generator"}: the type's name

Nothing is pickled and no code travels: decoding builds only those types, and a class only if it is a dataclass
or an enum defined in teachllm. An object of the grader's that the sandbox has its own copy of (the model `lm`, its
tokenizer) travels as {"$": "ref", "name": "lm", "path": ["tokenizer"]}: the runner gives the student's function
its own notebook's object; the grader refuses a ref coming back. An error raised by the student's code comes back
as its type's name, repr and str (`error`, `remote_error`).
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import importlib
import json
import os
import re
import select
import sys
import time

import numpy as np
import torch

MAX_MESSAGE_BYTES = 64 * 2**20  # the largest message either side reads: a few of the model's logits fit easily
MAX_DEPTH = 64  # values nested deeper are refused (a list that holds itself, say)
MAX_TEXT = 2000  # the most of an error's repr or str, or of a type's name, that crosses
TAG = "$"
MODULE = re.compile(r"teachllm(\.[A-Za-z_]\w*)*")  # the only modules a class may come from


class Refused(ValueError):
    """Data that does not decode into a value: the message says what was wrong."""


class Opaque:
    """A value whose type does not cross the boundary: only the type's name came across (type(x).__name__)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object that the grader cannot read>"


_OPAQUE: dict[str, type] = {}


def opaque(type_name: str) -> Opaque:
    """An Opaque whose type has the given name, so that a check can say "…, not generator"."""
    name = type_name[:100] if type_name.isidentifier() else "object"
    if name not in _OPAQUE:
        _OPAQUE[name] = type(name, (Opaque,), {"__slots__": ()})
    return _OPAQUE[name]()


def _bytes_of(tensor: torch.Tensor) -> bytes:
    flat = tensor.detach().cpu().resolve_conj().resolve_neg().contiguous().reshape(-1)
    return flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _class_path(cls: type) -> str | None:
    """'teachllm.params.SamplingParams' for a top-level class of a teachllm module, else None."""
    module = getattr(cls, "__module__", "") or ""
    return f"{module}.{cls.__qualname__}" if MODULE.fullmatch(module) and "." not in cls.__qualname__ else None


def encode(value, refs=None, strict: bool = False, depth: int = 0):
    """`value` as JSON-able data (the table in the module's docstring). `refs(value)` may name one of the grader's
    objects ({"$": "ref", ...}) or return None. strict: raise TypeError for a value of no listed type instead of
    sending its type's name (the grader sends only inputs it made)."""
    if depth > MAX_DEPTH:
        raise ValueError(f"the value is nested more than {MAX_DEPTH} levels deep")
    if refs is not None and (ref := refs(value)) is not None:
        return ref

    def inner(v):
        return encode(v, refs, strict, depth + 1)

    if isinstance(value, np.generic | np.ndarray):
        array = np.asarray(value)
        if array.dtype.kind not in "biufc":
            return _unknown(value, strict)
        return {TAG: "numpy", "dtype": array.dtype.str, "shape": list(array.shape), "scalar": array is not value,
                "b64": _b64(np.ascontiguousarray(array).tobytes())}
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, torch.Tensor):
        if value.layout != torch.strided or value.is_quantized or value.device.type == "meta":
            return _unknown(value, strict)
        return {TAG: "tensor", "dtype": str(value.dtype).removeprefix("torch."), "shape": list(value.shape),
                "b64": _b64(_bytes_of(value))}
    if isinstance(value, torch.Size):
        return {TAG: "size", "items": list(value)}
    if isinstance(value, torch.dtype):
        return {TAG: "dtype", "name": str(value).removeprefix("torch.")}
    if isinstance(value, enum.Enum) and _class_path(type(value)):
        return {TAG: "enum", "class": _class_path(type(value)), "name": value.name}
    if isinstance(value, bool | int | float | str):  # a subclass (an IntEnum of someone else's, say): its value
        return next(t(value) for t in (bool, int, float, str) if isinstance(value, t))
    if isinstance(value, list):
        return [inner(v) for v in value]
    if isinstance(value, tuple):
        return {TAG: "tuple", "items": [inner(v) for v in value]}
    if isinstance(value, set | frozenset):
        return {TAG: "frozenset" if isinstance(value, frozenset) else "set", "items": [inner(v) for v in value]}
    if isinstance(value, dict):
        return {TAG: "dict", "items": [[inner(k), inner(v)] for k, v in value.items()]}
    if isinstance(value, range):
        return {TAG: "range", "args": [value.start, value.stop, value.step]}
    if isinstance(value, bytes | bytearray):
        return {TAG: "bytes", "b64": _b64(bytes(value))}
    if dataclasses.is_dataclass(value) and not isinstance(value, type) and _class_path(type(value)):
        return {TAG: "dataclass", "class": _class_path(type(value)),
                "fields": {f.name: inner(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}}
    return _unknown(value, strict)


def _unknown(value, strict: bool) -> dict:
    if strict:
        raise TypeError(f"a {type(value).__name__} cannot be sent across the sandbox's boundary")
    return {TAG: "opaque", "type": type(value).__name__[:MAX_TEXT]}


def _resolve_class(path, may_import: bool) -> type:
    """The dataclass or enum that `path` names in a teachllm module (one already imported, unless may_import);
    Refused for any other."""
    module, _, name = path.rpartition(".") if isinstance(path, str) else ("", "", "")
    if not MODULE.fullmatch(module) or not name.isidentifier():
        raise Refused(f"{str(path)[:100]!r} is not a class of teachllm")
    try:
        found = sys.modules.get(module) or (importlib.import_module(module) if may_import else None)
        cls = getattr(found, name)
    except (ImportError, AttributeError):
        raise Refused(f"teachllm has no class {path!r}") from None
    if not isinstance(cls, type) or _class_path(cls) != path or not (
            dataclasses.is_dataclass(cls) or issubclass(cls, enum.Enum)):
        raise Refused(f"{path!r} is not a dataclass or an enum of teachllm")
    return cls


def _raw(data: dict) -> bytes:
    text = data.get("b64")
    if not isinstance(text, str):
        raise Refused("bytes that are not base64 text")
    try:
        return base64.b64decode(text, validate=True)
    except ValueError:
        raise Refused("bytes that are not base64 text") from None


def _shape(data: dict) -> list[int]:
    shape = data.get("shape")
    if not isinstance(shape, list) or not all(type(n) is int and n >= 0 for n in shape):
        raise Refused(f"a shape that is not a list of sizes: {str(shape)[:100]}")
    return shape


def decode(data, resolve=None, depth: int = 0):
    """The value `data` encodes. `resolve(ref)` gives the object a {"$": "ref"} names (the runner's side, which may
    also import the teachllm module a class is in); without it a ref is refused and a class is looked up only in the
    modules already imported (the grader's side). Raises Refused for anything that is not such data."""
    if depth > MAX_DEPTH:
        raise Refused(f"a value nested more than {MAX_DEPTH} levels deep")

    def inner(d):
        return decode(d, resolve, depth + 1)

    if data is None or type(data) in (bool, int, float, str):
        return data
    if type(data) is list:
        return [inner(d) for d in data]
    if type(data) is not dict or not isinstance(data.get(TAG), str):
        raise Refused(f"{type(data).__name__} is not encoded data")
    tag, items = data[TAG], data.get("items")
    if tag in ("tuple", "set", "frozenset", "size", "dict") and type(items) is not list:
        raise Refused(f"a {tag} without a list of items")
    if tag == "tuple":
        return tuple(inner(d) for d in items)
    if tag in ("set", "frozenset"):
        try:
            return (set if tag == "set" else frozenset)(inner(d) for d in items)
        except TypeError as error:  # an unhashable item
            raise Refused(f"a set holding {error}") from None
    if tag == "size":
        if not all(type(n) is int for n in items):
            raise Refused("a torch.Size of things that are not integers")
        return torch.Size(items)
    if tag == "dict":
        if not all(type(pair) is list and len(pair) == 2 for pair in items):
            raise Refused("a dict whose items are not [key, value] pairs")
        try:
            return {inner(k): inner(v) for k, v in items}
        except TypeError as error:
            raise Refused(f"a dict with a key that cannot be one ({error})") from None
    if tag == "range":
        args = data.get("args")
        if type(args) is not list or len(args) != 3 or not all(type(a) is int for a in args) or args[2] == 0:
            raise Refused("a range that is not three integers")
        return range(*args)
    if tag == "bytes":
        return _raw(data)
    if tag == "dtype":
        dtype = getattr(torch, str(data.get("name")), None) if str(data.get("name")).isidentifier() else None
        if not isinstance(dtype, torch.dtype):
            raise Refused(f"{str(data.get('name'))[:100]!r} is not a torch dtype")
        return dtype
    if tag == "tensor":
        dtype, shape, raw = decode({TAG: "dtype", "name": data.get("dtype")}), _shape(data), _raw(data)
        count = int(np.prod(shape)) if shape else 1
        if len(raw) != count * dtype.itemsize:
            raise Refused(f"a tensor of shape {shape} ({dtype}) sent with {len(raw)} bytes")
        if not raw:
            return torch.empty(shape, dtype=dtype)
        return torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(dtype).reshape(shape)
    if tag == "numpy":
        try:
            dtype = np.dtype(str(data.get("dtype")))
        except TypeError:
            raise Refused(f"{str(data.get('dtype'))[:100]!r} is not a numpy dtype") from None
        shape, raw = _shape(data), _raw(data)
        if dtype.kind not in "biufc" or len(raw) != int(np.prod(shape)) * dtype.itemsize:
            raise Refused(f"a numpy array of shape {shape} ({dtype}) sent with {len(raw)} bytes")
        array = np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
        return array[()] if data.get("scalar") is True and not shape else array
    if tag == "enum":
        cls, name = _resolve_class(data.get("class"), resolve is not None), data.get("name")
        if not issubclass(cls, enum.Enum) or type(name) is not str or name not in cls.__members__:
            raise Refused(f"{data.get('class')!r} has no member {str(data.get('name'))[:100]!r}")
        return cls[data["name"]]
    if tag == "dataclass":
        cls, fields = _resolve_class(data.get("class"), resolve is not None), data.get("fields")
        names = {f.name for f in dataclasses.fields(cls) if f.init} if dataclasses.is_dataclass(cls) else set()
        if type(fields) is not dict or not set(fields) <= names:
            raise Refused(f"{cls.__name__} sent with fields it does not have")
        values = {name: inner(d) for name, d in fields.items()}
        try:
            return cls(**values)  # the class's own checks run on what was sent
        except Exception as error:
            raise Refused(f"{cls.__name__}({', '.join(values)}) was refused: {error}") from None
    if tag == "opaque":
        return opaque(str(data.get("type")))
    if tag == "ref":
        if resolve is None:
            raise Refused("a reference to one of the grader's objects, which only the grader sends")
        return resolve(data)
    raise Refused(f"an unknown tag {tag[:100]!r}")


# ---- errors --------------------------------------------------------------------------------------------------------

class RemoteError(Exception):
    """An error the student's code raised in the sandbox, rebuilt from its type's name, repr and str. An instance is
    also an instance of the built-in error of that name (ValueError, AssertionError, ...), if there is one."""

    def __repr__(self) -> str:
        return self.remote_repr

    def __str__(self) -> str:
        return self.remote_str


SIMPLE_ERRORS = {e.__name__: e for e in (
    ArithmeticError, AssertionError, AttributeError, EOFError, ImportError, IndexError, KeyError, LookupError,
    MemoryError, ModuleNotFoundError, NameError, NotImplementedError, OSError, OverflowError, RecursionError,
    RuntimeError, StopIteration, TimeoutError, TypeError, ValueError, ZeroDivisionError, FileNotFoundError,
    PermissionError, UnboundLocalError)}  # the built-in errors a student's function is likely to raise
_ERRORS: dict[str, type] = {}


def error(exc: BaseException) -> dict:
    """An error as data: its type's name, repr and str (each cut to MAX_TEXT characters)."""
    def text(f):
        try:
            return f(exc)[:MAX_TEXT]
        except Exception:  # a str or repr that raises: the student's own class
            return type(exc).__name__
    return {"type": type(exc).__name__[:MAX_TEXT], "repr": text(repr), "str": text(str)}


def remote_error(data) -> RemoteError:
    """The exception `error` described, as a RemoteError (and the built-in error of that name, if any)."""
    if type(data) is not dict or not all(type(data.get(k)) is str for k in ("type", "repr", "str")):
        raise Refused("an error that is not a type's name, a repr and a str")
    name = data["type"][:100] if data["type"].isidentifier() else "Exception"
    if name not in _ERRORS:
        base = SIMPLE_ERRORS.get(name)
        _ERRORS[name] = type(name, (RemoteError, base) if base else (RemoteError,), {})  # RemoteError's str first
    err = _ERRORS[name](data["str"][:MAX_TEXT])
    err.remote_repr, err.remote_str = data["repr"][:MAX_TEXT], data["str"][:MAX_TEXT]
    return err


# ---- the channel ---------------------------------------------------------------------------------------------------

class ChannelClosed(Exception):
    """The other side ended, sent something that is not a message, or did not answer in time."""


class Channel:
    """One JSON object per line over two pipes: `send` writes to one file descriptor, `receive` reads the other,
    at most MAX_MESSAGE_BYTES a message, waiting at most the seconds it is given."""

    def __init__(self, read_fd: int, write_fd: int, limit: int = MAX_MESSAGE_BYTES):
        self.read_fd, self.write_fd, self.limit, self.buffer = read_fd, write_fd, limit, bytearray()

    def send(self, message: dict) -> None:
        data = json.dumps(message, separators=(",", ":")).encode("ascii") + b"\n"  # ascii: no raw newline inside
        if len(data) > self.limit:
            raise ValueError(f"a message of {len(data) / 2**20:.0f} MB, more than {self.limit / 2**20:.0f} MB")
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self.write_fd, view):]
        except OSError as e:  # BrokenPipeError: the other side is gone
            raise ChannelClosed(f"the other side stopped reading ({e.strerror})") from None

    def receive(self, timeout: float | None = None) -> dict:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (end := self.buffer.find(b"\n")) < 0:
            if len(self.buffer) > self.limit:
                raise ChannelClosed(f"a message longer than {self.limit / 2**20:.0f} MB")
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([self.read_fd], [], [], wait)[0]:
                raise ChannelClosed(f"no answer within {timeout:.0f} s")
            chunk = os.read(self.read_fd, 1 << 20)
            if not chunk:
                raise ChannelClosed("the other side ended")
            self.buffer += chunk
        line, self.buffer = bytes(self.buffer[:end]), self.buffer[end + 1:]
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            raise ChannelClosed("a message that is not JSON") from None
        if type(message) is not dict:
            raise ChannelClosed("a message that is not a JSON object")
        return message
