"""What crosses the grader's sandbox (teachllm.course.answers): every kind of answer an exercise asks for comes back
equal to what the student's function returned, tensors and numpy arrays byte for byte; data that would build
anything else (a class outside teachllm, a pickle, a reference to the grader's objects, bytes that do not match a
shape) is refused; errors come back as the built-in type they were; the channel gives up on a silent, closed or
flooding other side."""

from __future__ import annotations

import json
import os
import pickle
import threading

import numpy as np
import pytest
import torch

import teachllm as tl
from teachllm.course import answers
from teachllm.serving.metrics import IterationRecord

ROUND_TRIPS = [None, True, 0, -7, 2**80, 2.5, float("inf"), "héllo 你好 🌞", [1, [2, "x"]], (1, (2, 3)), {1, 2},
               frozenset({"a"}), {"a": 1, 2: (3,), (4, 5): None}, range(1, 9, 3), b"\x00\xff", torch.Size([2, 3]),
               torch.bfloat16, np.float64(0.1), np.int64(3), np.bool_(True),
               tl.SamplingParams(temperature=0.0, stop=["\n"], stop_token_ids=[2], max_tokens=7),
               tl.ModelConfig(vocab_size=97, hidden_size=48, intermediate_size=128, n_layers=2, n_heads=4,
                              n_kv_heads=2, head_dim=12, max_position_embeddings=512)]


def across(value, resolve=None):
    """`value` sent through JSON text, as the channel sends it."""
    return answers.decode(json.loads(json.dumps(answers.encode(value))), resolve)


@pytest.mark.parametrize("value", ROUND_TRIPS, ids=lambda v: type(v).__name__)
def test_plain_answers_come_back_equal_and_of_their_own_type(value):
    back = across(value)
    assert type(back) is type(value) and back == value


def test_nan_crosses():
    assert np.isnan(across(float("nan")))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.int64, torch.bool])
def test_tensors_come_back_bit_for_bit(dtype):
    tensor = (torch.randn(3, 5, generator=torch.Generator().manual_seed(0)) * 100).to(dtype)
    back = across(tensor)
    assert back.dtype == dtype and back.shape == tensor.shape and torch.equal(back, tensor)
    back.zero_()  # the student's function may change its input in place: the copy is its own
    assert torch.equal(across(tensor), tensor) and (tensor != 0).any()


def test_a_scalar_a_view_an_empty_tensor_and_an_array():
    base = torch.arange(12.0).reshape(3, 4)
    for tensor in (torch.tensor(3.5), base[:, 1], base.T, torch.zeros(0, 7), base.requires_grad_(False)):
        back = across(tensor)
        assert back.shape == tensor.shape and torch.equal(back, tensor)
    array = np.arange(6, dtype=np.int32).reshape(2, 3)
    back = across(array)
    assert back.dtype == array.dtype and np.array_equal(back, array)


def test_a_dataclass_of_teachllm_nested_and_an_enum():
    record = IterationRecord(0, 0.0, 0.1, [1], [(2, 0, 5)], 6, 2, [1, 2], [], [], 0, 2, 3, 12, 6, 20, 0.5, 0.7)
    assert across(record) == record and across([record])[0].prefill == [(2, 0, 5)]
    from teachllm.serving.request import RequestStatus

    assert across(RequestStatus.RUNNING) is RequestStatus.RUNNING


def test_anything_else_crosses_as_its_types_name_only():
    back = across(x for x in [1])
    assert isinstance(back, answers.Opaque) and type(back).__name__ == "generator"
    assert type(across(object())).__name__ == "object"
    assert type(across(lambda: 0)).__name__ == "function"
    with pytest.raises(TypeError, match="generator"):  # the grader sends only the inputs it made
        answers.encode((x for x in [1]), strict=True)


@pytest.mark.parametrize("data, says", [
    ({"$": "dataclass", "class": "subprocess.Popen", "fields": {"args": "true"}}, "not a class of teachllm"),
    ({"$": "dataclass", "class": "teachllm.lm.LanguageModel", "fields": {}}, "not a dataclass"),
    ({"$": "dataclass", "class": "teachllm.params.SamplingParams", "fields": {"temperature": -1.0}}, "refused"),
    ({"$": "dataclass", "class": "teachllm.params.SamplingParams", "fields": {"__class__": 1}}, "fields"),
    ({"$": "ref", "name": "lm"}, "only the grader sends"),
    ({"$": "tensor", "dtype": "float32", "shape": [4], "b64": "AAAA"}, "3 bytes"),
    ({"$": "tensor", "dtype": "Tensor", "shape": [1], "b64": ""}, "not a torch dtype"),
    ({"$": "numpy", "dtype": "O", "shape": [1], "b64": ""}, "numpy array"),
    ({"$": "pickle", "b64": "gASVAAAAAAAAAAA="}, "unknown tag"),
    ({"$": "set", "items": [[1]]}, "set holding"),
    ({"value": 1}, "not encoded data"),
])
def test_data_that_would_build_something_else_is_refused(data, says):
    with pytest.raises(answers.Refused, match=says):
        answers.decode(data)


def test_a_pickle_is_not_data():
    payload = pickle.dumps(os.system)
    with pytest.raises(answers.Refused):
        answers.decode({"$": "bytes", "b64": payload})  # bytes that are not base64 text
    assert answers.decode({"$": "bytes", "b64": answers.encode(payload)["b64"]}) == payload  # bytes stay bytes


def test_a_ref_is_the_runners_own_object():
    mine = object()
    assert answers.decode([{"$": "ref", "name": "lm"}], resolve=lambda ref: mine)[0] is mine


def test_nesting_is_bounded():
    deep = []
    for _ in range(answers.MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(ValueError, match="nested"):
        answers.encode(deep)


@pytest.mark.parametrize("error", [ValueError("bad"), KeyError("x"), AssertionError("no"), ZeroDivisionError(),
                                   FileNotFoundError(2, "gone")])
def test_an_error_comes_back_as_its_builtin_type(error):
    back = answers.remote_error(json.loads(json.dumps(answers.error(error))))
    assert isinstance(back, type(error)) and isinstance(back, answers.RemoteError)
    assert repr(back) == repr(error) and str(back) == str(error)


def test_a_students_own_error_comes_back_as_an_exception_of_that_name():
    class Oops(Exception):
        def __str__(self):
            raise RuntimeError("a str that fails")

    back = answers.remote_error(answers.error(Oops("x" * 10_000)))
    assert type(back).__name__ == "Oops" and isinstance(back, Exception) and not isinstance(back, ValueError)
    assert len(repr(back)) <= answers.MAX_TEXT and str(back) == "Oops"


def channel_pair(limit=answers.MAX_MESSAGE_BYTES):
    a_r, b_w = os.pipe()
    b_r, a_w = os.pipe()
    return answers.Channel(a_r, a_w, limit), answers.Channel(b_r, b_w, limit), (a_r, b_w, b_r, a_w)


def test_the_channel_carries_messages_and_gives_up_on_a_silent_closed_or_flooding_side():
    a, b, fds = channel_pair(limit=1000)
    try:
        sender = threading.Thread(target=lambda: [b.send({"n": i, "text": "x\ny"}) for i in range(50)])
        sender.start()
        assert [a.receive(5)["n"] for _ in range(50)] == list(range(50))
        sender.join()
        with pytest.raises(answers.ChannelClosed, match="no answer"):
            a.receive(0.2)
        with pytest.raises(ValueError, match="more than"):
            b.send({"text": "x" * 2000})
        os.write(fds[1], b"y" * 1500)  # no newline, more than the limit
        with pytest.raises(answers.ChannelClosed, match="longer than"):
            a.receive(1)
    finally:
        for fd in fds:
            os.close(fd)
    a, b, fds = channel_pair()
    os.write(fds[1], b"[1, 2]\n")
    os.close(fds[1])
    with pytest.raises(answers.ChannelClosed, match="not a JSON object"):
        a.receive(1)
    with pytest.raises(answers.ChannelClosed, match="ended"):
        a.receive(1)
    for fd in (fds[0], fds[2], fds[3]):
        os.close(fd)
