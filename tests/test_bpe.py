"""The toy BPE trainer against the `tokenizers` library's BpeTrainer, and the course notes' example."""

import json

import pytest
from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

from teachllm import texts
from teachllm.bpe import WORD, bpe_encode, split_words, train_bpe

ENGLISH = ("The history of the printing press begins in the fifteenth century, when Johannes Gutenberg combined "
           "movable metal type, oil-based ink and a wooden screw press. Within fifty years presses had spread to "
           "more than two hundred cities across Europe, the price of books fell, and pamphlets carried news, "
           "sermons and arguments further than any handwritten copy ever had. The newest presses were the "
           "fastest and the lowest in cost.")
CHINESE = "大语言模型的推理分为预填充和解码两个阶段。预填充阶段并行处理所有输入，解码阶段逐个生成输出。"


def reference_merges(text: str, n_merges: int) -> list[tuple[str, str]]:
    """Train `tokenizers`' own BPE on the same words (same pre-tokenization) for the same number of merges."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(WORD.pattern), behavior="isolated")
    alphabet = set(text)
    trainer = trainers.BpeTrainer(vocab_size=len(alphabet) + n_merges, show_progress=False, special_tokens=[])
    tok.train_from_iterator([text], trainer=trainer)
    merges = json.loads(tok.to_str())["model"]["merges"]
    return [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in merges]


@pytest.mark.parametrize("text,n", [("low lower lowest", 10), (ENGLISH, 80), (CHINESE, 30),
                                    (ENGLISH + " " + CHINESE, 120)])
def test_same_merges_as_the_tokenizers_library(text, n):
    _, merges = train_bpe(text, n)
    assert [m.pair for m in merges] == reference_merges(text, n)


def test_seed_example_low_lower_lowest():
    """《LLM 推理流程》§2.3: initial vocabulary ['l','o','w','e','r','s','t',' ']; merges lo, low, er, es, …;
    final pieces low / er / est."""
    alphabet, merges = train_bpe("low lower lowest", 2)
    assert set(alphabet) == {"l", "o", "w", "e", "r", "s", "t", " "}
    assert [m.result for m in merges] == ["lo", "low"]  # the course notes' first two merges, each seen 3 times
    assert [m.count for m in merges] == [3, 3]
    # applying the course notes' merge list gives its final pieces
    notes_merges = [("l", "o"), ("lo", "w"), ("e", "r"), ("e", "s"), ("es", "t")]
    assert bpe_encode("low lower lowest", notes_merges) == ["low", " ", "low", "er", " ", "low", "est"]


def test_pre_tokenization_keeps_the_space_with_the_next_word():
    assert split_words("low lower lowest") == ["low", " lower", " lowest"]
    assert "".join(split_words("a  b ")) == "a  b "


def test_encode_with_learned_merges_reassembles_the_text():
    _, merges = train_bpe(ENGLISH, 100)
    pieces = bpe_encode(ENGLISH, merges)
    assert "".join(pieces) == ENGLISH
    assert len(pieces) < len(ENGLISH) / 2  # 100 merges already halve the number of symbols


def test_training_on_a_chinese_paragraph():
    text = texts.CHINESE + texts.ENGLISH
    _, merges = train_bpe(text, 40)
    assert [m.pair for m in merges] == reference_merges(text, 40)
