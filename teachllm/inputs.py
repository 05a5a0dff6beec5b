"""The edge: what a user passes in, turned into what the engine's core expects, or a clear error.

Text, token ids (ints, lists, nested lists, tensors, numpy arrays), sampling parameters and caches arrive
in many shapes. Each public entry point (LanguageModel's methods, `generation_steps`, `beam_search_steps`,
`ServingEngine.add_request`, the CLI) hands them to this module once; below it, the model, the cache, the
sampling rules and the generation loop are written for well-formed input and read like the math.

Every message names the argument, the value given and what is allowed. The fields of `SamplingParams` are
checked where the class is (params.py), as they are set; here, only what depends on the model (the vocabulary,
the context window) and what the sampling rules are called with.
"""

from __future__ import annotations

import math
import numbers
import os

import numpy as np
import torch

from .cache import KVCache
from .cost import kv_cache_bytes
from .params import SamplingParams
from .units import is_id

ON, OFF = ("1", "true", "yes", "on"), ("0", "false", "no", "off", "")  # an on/off variable's spellings, any case


def env_flag(name: str) -> bool:
    """The on/off environment variable `name`: 1, true, yes, on → True; 0, false, no, off, unset or empty → False."""
    value = os.environ.get(name, "")
    if value.strip().lower() not in ON + OFF:
        raise ValueError(f"{name}={value!r}: use 1, true, yes or on to switch it on, "
                         "0, false, no, off or nothing to switch it off")
    return value.strip().lower() in ON


# ---- token ids --------------------------------------------------------------------------------------


def _unwrap(x):
    """A zero-dimensional integer tensor counts as an int."""
    if isinstance(x, torch.Tensor) and x.dim() == 0 and not x.is_floating_point() and x.dtype != torch.bool:
        return x.item()
    return x


def in_vocabulary(ids: torch.Tensor | list[int], vocab_size: int) -> None:
    """Raise ValueError naming the first id outside 0 .. vocab_size − 1."""
    if isinstance(ids, torch.Tensor):
        bad = (ids < 0) | (ids >= vocab_size)
        first = int(ids[bad][0]) if bool(bad.any()) else None
    else:
        first = next((i for i in ids if not 0 <= i < vocab_size), None)
    if first is not None:
        raise ValueError(f"token id {first} is outside the vocabulary: token ids must be in 0 .. {vocab_size - 1}")


def token_list(ids, vocab_size: int) -> list[int]:
    """One sequence of token ids (an int, a list of ints, a 1-D integer tensor or array) as a checked list."""
    if isinstance(ids, torch.Tensor) and (ids.is_floating_point() or ids.dtype == torch.bool or ids.dim() > 1):
        raise TypeError(f"token ids must be integers in a list or a 1-D tensor, got a {ids.dtype} tensor of shape "
                        f"{tuple(ids.shape)}")
    if isinstance(ids, (torch.Tensor, np.ndarray)):
        ids = ids.tolist()
    ids = _unwrap(ids)
    if is_id(ids):
        ids = [ids]
    if isinstance(ids, (str, bytes)) or not isinstance(ids, (list, tuple, range)):
        raise TypeError(f"token ids must be an int or a list of ints, got {type(ids).__name__}"
                        + ("; to turn text into ids use encode" if isinstance(ids, str) else ""))
    ids = [_unwrap(i) for i in ids]
    bad = next((i for i in ids if not is_id(i)), None)
    if bad is not None:
        raise TypeError(f"token ids must be integers, got {bad!r} ({type(bad).__name__})")
    ids = [int(i) for i in ids]
    in_vocabulary(ids, vocab_size)
    return ids


def _nested(ids):
    """Token ids as nested Python lists of ints (at most [batch][seq]), every element checked."""
    if isinstance(ids, np.ndarray):
        if ids.dtype.kind not in "iu":
            raise TypeError(f"token ids must be integers, got a numpy array of dtype {ids.dtype}")
        ids = ids.tolist()
    if isinstance(ids, str):
        raise TypeError(f"text was given where token ids are expected ({ids!r:.40}); turn it into ids with "
                        "lm.tokenizer.encode(text), or use lm.generate, which takes text")
    if not isinstance(ids, (list, tuple)) and not is_id(_unwrap(ids)):
        raise TypeError(f"token ids must be an int, a list of ints, a list of lists of ints or an integer tensor; "
                        f"got {type(ids).__name__}")

    def rows(x, depth):
        x = _unwrap(x)
        if is_id(x):
            return int(x)
        if isinstance(x, (list, tuple)) and depth < 2:
            return [rows(i, depth + 1) for i in x]
        if isinstance(x, (list, tuple)):
            raise ValueError("token ids nest at most two deep: [batch][seq]")
        raise TypeError(f"token ids must be integers, got {x!r} ({type(x).__name__})")

    out = rows(ids, 0)
    if isinstance(out, list) and any(isinstance(r, list) for r in out):
        if not all(isinstance(r, list) for r in out):
            raise TypeError("token ids mix ints and lists: give one list of ids, or one list per sequence")
        lengths = sorted({len(r) for r in out})
        if len(lengths) > 1:
            raise ValueError(f"ragged batch: rows of {lengths[0]} and {lengths[-1]} tokens; forward needs rows of "
                             "one length (prefill and generate pad prompts of different lengths themselves)")
    return out


def id_tensor(ids, lm) -> torch.Tensor:
    """Token ids (an int, nested lists, a numpy array or an integer tensor) as a checked LongTensor on the
    model's device: every id in the vocabulary, at least one of them."""
    if isinstance(ids, torch.Tensor):
        if ids.dtype == torch.bool or ids.is_floating_point() or ids.is_complex():
            raise TypeError(f"token ids must be an integer tensor, got dtype {ids.dtype}")
        ids = ids.to(lm.device, torch.long)
        in_vocabulary(ids, lm.config.vocab_size)
    else:
        nested = _nested(ids)
        rows = nested if isinstance(nested, list) else [nested]
        # checked before the tensor is made: an id of 2**63 or more does not fit in int64
        in_vocabulary([i for row in rows for i in (row if isinstance(row, list) else [row])], lm.config.vocab_size)
        ids = torch.tensor(nested, dtype=torch.long, device=lm.device)
    if ids.numel() == 0:
        raise ValueError("empty prompt: at least one token id is needed")
    return ids


def sequences(ids, lm) -> torch.Tensor:
    """Ids for `forward`: [S] or [B, S] → a checked [B, S] tensor that fits the context window."""
    ids = id_tensor(ids, lm)
    ids = ids[None] if ids.dim() == 1 else ids
    if ids.dim() != 2:
        raise ValueError(f"token ids must have shape [batch, seq], got {tuple(ids.shape)}")
    window = lm.config.max_position_embeddings
    if ids.shape[1] > window:
        raise ValueError(f"a sequence of {ids.shape[1]} tokens is longer than the model's context window of {window}")
    return ids


# ---- caches -----------------------------------------------------------------------------------------------
def cache(cache, lm, batch: int) -> KVCache:
    """A KVCache made for this model (its shape, device and dtype) with room for `batch` sequences."""
    if not isinstance(cache, KVCache):
        raise TypeError(f"cache must be a KVCache made by lm.new_cache(max_len=..., batch_size=...), "
                        f"got {type(cache).__name__}")
    c, mine = cache.config, lm.config
    layers = 1 + max(layer.self_attn.index for layer in lm.model.layers)  # a draft model keeps its layers' slots
    if (c.n_kv_heads, c.head_dim) != (mine.n_kv_heads, mine.head_dim) or c.n_layers < layers:
        raise ValueError(f"the cache was made for another model ({c.n_layers} layers × {c.n_kv_heads} KV heads × "
                         f"{c.head_dim}, this one needs {layers} × {mine.n_kv_heads} × {mine.head_dim}); "
                         f"make it with lm.new_cache(...)")
    if cache.batch_size != batch:
        raise ValueError(f"{batch} sequence(s) given, but the cache was made for batch_size={cache.batch_size}")
    if cache.k.device != lm.device or cache.k.dtype != lm.dtype:
        raise ValueError(f"the cache is {cache.k.dtype} on {cache.k.device}, the model {lm.dtype} on "
                         f"{lm.device}; make it with lm.new_cache(...)")
    return cache


def room(cache: KVCache, n_new: int) -> None:
    """Raise if `n_new` more tokens do not fit (no silent truncation, no wrap-around)."""
    if cache.length + n_new > cache.max_len:
        raise ValueError(f"the KV cache is full: it holds {cache.length} of {cache.max_len} slots, "
                         f"and {n_new} more token(s) do not fit; make a larger cache with "
                         f"lm.new_cache(max_len=...) (at most {cache.config.max_position_embeddings})")


def positive(name: str, value) -> int:
    """A count as a Python int: numpy integers are fine, booleans and fractions are not."""
    if is_id(value) and value >= 1:
        return int(value)
    raise ValueError(f"{name} must be a positive integer (≥ 1), got {value!r}")


def cache_size(lm, max_len, batch_size) -> None:
    """What lm.new_cache may allocate: positive sizes, within the context window and the machine's memory."""
    positive("max_len", max_len)
    positive("batch_size", batch_size)
    window = lm.config.max_position_embeddings
    if max_len > window:
        raise ValueError(f"max_len={max_len} exceeds the model's context window of {window} tokens")
    needed = kv_cache_bytes(lm.config, n_tokens=max_len, batch_size=batch_size, dtype=lm.dtype)
    have = memory_bytes(lm.device)
    if needed > have:
        raise ValueError(f"a KV cache of max_len={max_len} × batch_size={batch_size} needs {needed / 2**30:,.1f} GiB, "
                         f"more than the {have / 2**30:,.1f} GiB of memory on {lm.device}; lower max_len or "
                         f"batch_size")


def kv_pool(lm, num_blocks: int, block_size: int) -> None:
    """What a ServingEngine's paged KV pool may allocate: num_blocks · block_size slots within the device's memory."""
    needed = kv_cache_bytes(lm.config, n_tokens=num_blocks * block_size, dtype=lm.dtype)
    have = memory_bytes(lm.device)
    if needed > have:
        fit = have // kv_cache_bytes(lm.config, n_tokens=block_size, dtype=lm.dtype)
        raise ValueError(f"ServingConfig.num_blocks={num_blocks} blocks × block_size={block_size} tokens of KV cache "
                         f"need {needed / 2**30:,.1f} GiB, more than the {have / 2**30:,.1f} GiB of memory on "
                         f"{lm.device}; lower ServingConfig.num_blocks (at most {fit:,} blocks of {block_size} fit)")


def memory_bytes(device: torch.device) -> int:
    """The memory of a device: a GPU's free memory, or the machine's physical memory for the CPU."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not a POSIX system: no limit known
        return 2**62


def prefill_batch(ids, lm, cache_: KVCache) -> tuple[torch.Tensor, torch.Tensor]:
    """Prompts for prefill into `cache_`: one [B, S] tensor, left-padded, and each row's padding [B]. Prompts
    of different lengths (a list of lists) are padded on the left; only an empty cache takes padding."""
    if isinstance(ids, (list, tuple)) and ids and all(isinstance(p, (list, tuple)) for p in ids):
        if any(len(p) == 0 for p in ids):
            raise ValueError("empty prompt: every prompt needs at least one token id")
        width = max(len(p) for p in ids)
        tensor = sequences([[0] * (width - len(p)) + list(p) for p in ids], lm)
        pad = torch.tensor([width - len(p) for p in ids], device=lm.device)
    else:
        tensor = sequences(ids, lm)
        pad = torch.zeros(tensor.shape[0], dtype=torch.long, device=lm.device)
    cache(cache_, lm, tensor.shape[0])
    if cache_.length > 0 and bool(pad.any()):
        raise ValueError("prompts of different lengths can only be prefilled into an empty cache")
    room(cache_, tensor.shape[1])
    return tensor, pad


def decode_tokens(token, lm, cache_: KVCache) -> torch.Tensor:
    """One new token per sequence for decode_step: an int, a list of B ints, a tensor [B] or [B, 1] → [B, 1]."""
    if isinstance(cache_, KVCache) and cache_.length == 0:
        raise ValueError("decode_step needs a cache that prefill has filled; call lm.prefill(ids, cache) first")
    token = id_tensor(token, lm)
    if token.dim() > 2 or (token.dim() == 2 and token.shape[1] != 1):
        raise ValueError(f"decode_step takes one token per sequence: an int, a list of B ints, or a tensor of "
                         f"shape [B] or [B, 1]; got shape {tuple(token.shape)}")
    token = token.reshape(-1, 1)  # [B, 1]
    cache(cache_, lm, token.shape[0])
    room(cache_, 1)
    return token


# ---- prompts and requests ---------------------------------------------------------------------------------
def prompts(prompt, lm) -> tuple[list[list[int]], bool]:
    """Prompt(s) as lists of ids, and whether a single prompt was given: a string, a list of ids or a 1-D
    tensor is one prompt; a list of those or a 2-D tensor is a batch."""
    if isinstance(prompt, str):
        ids = lm.tokenizer.encode(prompt)
        if not ids:
            raise ValueError("empty prompt: the text gives no token; every prompt needs at least one token")
        return [ids], True
    if isinstance(prompt, np.ndarray):
        prompt = torch.from_numpy(prompt) if prompt.dtype.kind in "iu" else prompt.tolist()
    if isinstance(prompt, torch.Tensor):
        if prompt.dim() not in (1, 2):
            raise ValueError(f"a tensor of token ids must have shape [seq] (one prompt) or [batch, seq], "
                             f"got shape {tuple(prompt.shape)}")
        tensor = id_tensor(prompt, lm)
        return (tensor[None] if tensor.dim() == 1 else tensor).tolist(), tensor.dim() == 1
    if isinstance(prompt, (list, tuple)) and prompt:
        items = [_unwrap(p) for p in prompt]
        if all(is_id(i) for i in items):
            return [token_list(items, lm.config.vocab_size)], True
        if any(is_id(i) for i in items):  # ids mixed with something else
            bad, first_id = next(i for i in items if not is_id(i)), next(i for i in items if is_id(i))
            raise TypeError(f"a prompt must be a string or a list of token ids (ints), or a list of those; got "
                            f"{bad!r} ({type(bad).__name__}) mixed with the id {first_id!r}")
        bad = next((i for i in items if not isinstance(i, (str, list, tuple, torch.Tensor, np.ndarray))), None)
        if bad is not None:
            raise TypeError(f"a prompt must be a string or a list of token ids (ints); got an element {bad!r} "
                            f"({type(bad).__name__})")
        rows = []
        for p in items:
            ids, single = prompts(p, lm)
            if not single:
                raise ValueError("a batch of prompts is a list of strings or of lists of token ids; "
                                 "got a prompt that is itself a batch (nested too deep)")
            rows.append(ids[0])
        return rows, False
    if isinstance(prompt, (list, tuple)):
        raise ValueError(f"a prompt must be a non-empty string, list of token ids, or list of those; "
                         f"got {prompt!r}")
    raise TypeError(f"a prompt must be a string, a list of token ids, or a list of those; "
                    f"got {type(prompt).__name__}")


def params(params, lm):
    """params as a SamplingParams (None → the defaults), checked against this model: logprobs and stop ids
    within its vocabulary, and min_tokens leaving some token that does not stop."""
    if params is None:
        return SamplingParams()
    sampling_params("", params)
    V = lm.config.vocab_size
    for_vocabulary(params, V)
    stops = set(params.stop_token_ids) | (set() if params.ignore_eos else set(lm.config.eos_token_ids))
    if params.min_tokens > 0 and len(stops) >= V:
        raise ValueError(f"SamplingParams.min_tokens={params.min_tokens} forbids every stop token until then, but "
                         f"stop_token_ids and the end-of-sequence ids cover all {V} tokens: nothing could be chosen")
    return params


def for_vocabulary(params, vocab_size: int) -> None:
    """The fields whose limits depend on the model: logprobs and stop_token_ids within its vocabulary."""
    if params.logprobs is not None and params.logprobs > vocab_size:
        raise ValueError(f"SamplingParams.logprobs={params.logprobs} is larger than the model's vocabulary of "
                         f"{vocab_size} tokens; must be None or 0 .. {vocab_size}")
    bad = next((i for i in params.stop_token_ids if i >= vocab_size), None)
    if bad is not None:
        raise ValueError(f"SamplingParams.stop_token_ids holds {bad}, outside the model's vocabulary; token ids must "
                         f"be in 0 .. {vocab_size - 1}")


def end_ids(name: str, ids, vocab_size: int) -> list[int]:
    """Ids that end generation, as a rule is given them (`eos_token_ids`): each an integer in the vocabulary. A
    negative id would index from the end (-1 is the last token) and one past the vocabulary would fail later."""
    if isinstance(ids, torch.Tensor):
        ids = ids.tolist()
    ids = [ids] if is_id(ids) else ids
    if isinstance(ids, (str, bytes)) or not isinstance(ids, (list, tuple, set, frozenset, range)):
        raise ValueError(f"{name}={ids!r:.60} must be a list of token ids in 0 .. {vocab_size - 1}")
    bad = next((i for i in ids if not (is_id(i) and 0 <= i < vocab_size)), None)
    if bad is not None:
        raise ValueError(f"{name} holds {bad!r}, which is not a token id of this model: token ids must be in "
                         f"0 .. {vocab_size - 1}")
    return [int(i) for i in ids]


def request(prompt, params_, lm) -> tuple[list[list[int]], object, bool]:
    """What `generate` and the stepping loops take: (prompts as lists of ids, checked params, single?), every
    prompt plus max_tokens within the model's context window."""
    rows, single = prompts(prompt, lm)
    params_ = params(params_, lm)
    longest, window = max(len(r) for r in rows), lm.config.max_position_embeddings
    if longest + params_.max_tokens > window:
        raise ValueError(f"a prompt of {longest} tokens plus max_tokens={params_.max_tokens} exceeds the model's "
                         f"context window of {window} tokens; shorten the prompt or lower max_tokens")
    return rows, params_, single


# ---- the sampling rules' own arguments ---------------------------------------------------------------------
KEEP = (True, 1, None, False, "an integer ≥ 1")  # min_tokens_to_keep
RULES = {  # function → argument → (integer?, low, high, low excluded?, what is allowed)
    "apply_temperature": {"t": (False, 0, None, True, "a finite number > 0")},
    "apply_top_k": {"k": (True, None, None, False, "an integer (≤ 0 = off)"), "min_tokens_to_keep": KEEP},
    "apply_top_p": {"p": (False, 0, 1, True, "in (0, 1] (1 = off)"), "min_tokens_to_keep": KEEP},
    "apply_min_p": {"p": (False, 0, 1, False, "in [0, 1] (0 = off)"), "min_tokens_to_keep": KEEP},
    "apply_repetition_penalty": {"r": (False, 0, None, True, "a finite number > 0 (1 = off)")},
    "apply_presence_frequency_penalty": {"presence": (False, None, None, False, "a finite number"),
                                         "frequency": (False, None, None, False, "a finite number")},
    "apply_no_repeat_ngram": {"n": (True, 0, None, False, "an integer ≥ 0 (0 = off)")},
    "top_logprobs": {"n": (True, 0, "V", False, "an integer in 0 .. {V} (the vocabulary)")},
}


def rule(func: str, logits, **arguments) -> None:
    """The one check each sampling rule makes of what it was called with: logits a floating-point tensor of
    shape [V] or [B, V], and each argument within RULES."""
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point() or logits.dim() not in (1, 2):
        what = (f"a {logits.dtype} tensor of shape {tuple(logits.shape)}" if isinstance(logits, torch.Tensor)
                else type(logits).__name__)
        raise TypeError(f"{func}: logits must be a floating-point tensor of shape [V] or [B, V], got {what}")
    t = arguments.get("t")
    if isinstance(t, numbers.Real) and not isinstance(t, (bool, np.bool_)) and t <= 0:
        raise ValueError(f"temperature must be > 0 here, got {t}; temperature 0 means greedy (use sample())")
    for name, value in arguments.items():
        integer, low, high, low_open, allowed = RULES[func][name]
        if high == "V":  # the size of the vocabulary, from the logits
            high, allowed = logits.shape[-1], allowed.format(V=logits.shape[-1])
        ok = is_id(value) if integer else isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))
        if ok:
            v = float(value)
            above = low is None or (v > low if low_open else v >= low)
            ok = math.isfinite(v) and above and (high is None or v <= high)
        if not ok:
            raise ValueError(f"{func}: {name}={value!r} is not allowed; must be {allowed}")


def sampling_params(func: str, params) -> None:
    """Raise TypeError unless `params` is a SamplingParams instance (not the class, not a dict)."""
    if not isinstance(params, SamplingParams):
        hint = ("an instance, e.g. SamplingParams()" if params is SamplingParams
                else "SamplingParams(**your_dict)" if isinstance(params, dict) else "SamplingParams(temperature=0)")
        what = "the class SamplingParams itself" if params is SamplingParams else f"{params!r:.80}"
        where = f"{func}: " if func else ""
        raise TypeError(f"{where}params must be a SamplingParams instance or None; got {what}: use {hint}")


def histories(ids, batch: int, vocab: int) -> list[list[int]]:
    """Token histories for the penalties, one list per row of logits: a flat list (or a 1-D tensor) is one
    row's history."""
    if isinstance(ids, torch.Tensor):
        ids = ids.tolist()
    if isinstance(ids, (str, bytes)) or not isinstance(ids, (list, tuple)):
        raise ValueError(f"token histories must be a list of ids or one list per row, got {type(ids).__name__}")
    rows = [list(r) for r in ids] if ids and isinstance(ids[0], (list, tuple)) else [list(ids)]
    if len(rows) != batch:
        raise ValueError(f"{len(rows)} token histories given for {batch} rows of logits")
    for row in rows:
        if all(type(i) is int for i in row) and (not row or 0 <= min(row) and max(row) < vocab):
            continue  # the usual case, checked quickly
        for i in row:
            if not is_id(i) or not 0 <= i < vocab:
                raise ValueError(f"token histories must hold token ids in 0 .. {vocab - 1}, got {i!r}")
    return rows
