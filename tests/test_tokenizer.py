"""The tokenizer wrapper against the checkpoint's own transformers tokenizer."""

import pytest
from transformers import AutoTokenizer

import teachllm as tl

TEXTS = [
    "Hello, world! How are you today?",
    "大语言模型的推理分为预填充和解码两个阶段。",
    "Emoji too: 🚀🔥 and mixed 中文 + English 😀👍🏽.",
    "  leading spaces, tabs\tand\nnewlines  ",
]


@pytest.fixture(scope="module")
def hf_tokenizer(lm):
    return AutoTokenizer.from_pretrained(tl.checkpoints.loading.checkpoint_folder(progress=False))


@pytest.mark.parametrize("text", TEXTS)
def test_round_trip(lm, text):
    ids = lm.tokenizer.encode(text)
    assert all(isinstance(i, int) for i in ids)
    assert lm.tokenizer.decode(ids) == text


@pytest.mark.parametrize("text", TEXTS)
def test_same_ids_as_transformers(lm, hf_tokenizer, text):
    assert lm.tokenizer.encode(text) == hf_tokenizer.encode(text)


def test_bos_follows_the_model(lm, hf_tokenizer):
    # SmolLM2's tokenizer adds no BOS token; the wrapper must not invent one
    ids = lm.tokenizer.encode("Hi")
    assert ids == hf_tokenizer("Hi")["input_ids"]
    assert ids[0] != lm.tokenizer.bos_token_id


@pytest.mark.parametrize("text", ["模型", "🚀"])
def test_a_character_can_span_several_tokens(lm, text):
    ids = lm.tokenizer.encode(text)
    assert len(ids) > len(text)  # byte-level BPE: a 3- or 4-byte character takes several tokens
    # decoding one token alone can cut a character in half ('�'); decoding the whole list cannot
    assert "\ufffd" in "".join(lm.tokenizer.token_text(i) for i in ids)
    assert lm.tokenizer.decode(ids) == text


def test_special_tokens_are_all_listed(lm, hf_tokenizer):
    special = lm.tokenizer.special_tokens
    assert {"<|endoftext|>": 0, "<|im_start|>": 1, "<|im_end|>": 2}.items() <= special.items()
    assert set(hf_tokenizer.all_special_tokens) <= set(special)
    for text, token_id in special.items():
        assert lm.tokenizer.encode(text) == [token_id]  # each is one id, never split


def test_chat_template(lm, hf_tokenizer):
    messages = [{"role": "user", "content": "What is 2 + 2?"}]
    text = lm.tokenizer.apply_chat_template(messages)
    assert text == hf_tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert text.endswith("<|im_start|>assistant\n")


def test_encode_rejects_non_text(lm):
    with pytest.raises(TypeError, match="str"):
        lm.tokenizer.encode([1, 2, 3])


def test_detokenizer_never_ends_on_half_a_character(lm):
    """Generation cut off (max_tokens) inside an emoji: the text keeps only the complete characters."""
    from teachllm.tokenizer import IncrementalDetokenizer

    ids = lm.tokenizer.encode("Hi 🚀")
    assert len(ids) > 2  # the emoji takes several tokens
    detok = IncrementalDetokenizer(lm.tokenizer)
    pieces = []
    for token in ids[:-1]:  # the last byte of the emoji never arrives
        detok.add(token)
        pieces.append(detok.release())
    pieces.append(detok.release(final=True))
    assert detok.text == "Hi " and "".join(pieces) == "Hi "
    detok.add(ids[-1])
    assert detok.text == "Hi 🚀" and detok.release(final=True) == "🚀"


@pytest.mark.parametrize("text", TEXTS)
def test_detokenizer_text_equals_decoding_everything(lm, text):
    """After every token, the windowed detokenizer holds what decoding the whole output gives, minus an
    unfinished character at the end: the reference is the tokenizer's own decode of all ids so far."""
    from teachllm.tokenizer import IncrementalDetokenizer

    ids = lm.tokenizer.encode(text)
    detok = IncrementalDetokenizer(lm.tokenizer)
    pieces = []
    for n, token in enumerate(ids, start=1):
        detok.add(token)
        pieces.append(detok.release())
        whole = lm.tokenizer.hf.decode(ids[:n], skip_special_tokens=True)
        assert detok.text == whole.rstrip("\ufffd")
        assert "\ufffd" not in pieces[-1]  # never half a character
    assert "".join(pieces) == text


def test_detokenizer_work_per_token_is_bounded(lm):
    """Each new token decodes a window of a few ids, not the whole output again (which grows quadratically)."""
    from teachllm.tokenizer import IncrementalDetokenizer

    ids = lm.tokenizer.encode(" ".join(TEXTS) * 10)
    assert len(ids) > 300
    widths = []

    class Counting:
        def decode(self, window, skip_special_tokens=False):
            widths.append(len(window))
            return lm.tokenizer.decode(window, skip_special_tokens=skip_special_tokens)

    detok = IncrementalDetokenizer(Counting())
    for token in ids:
        detok.add(token)
    assert detok.text == lm.tokenizer.decode(ids, skip_special_tokens=True)
    assert max(widths) <= 8  # a 4-byte character split into single bytes, plus the context before it
