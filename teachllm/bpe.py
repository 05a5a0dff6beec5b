"""Byte-pair encoding, small enough to read: learn merges from a text, then split text with them.

Training (Sennrich et al. 2016):
    1. split the text into words (a space stays attached to the word after it: "low lower" → "low", " lower");
    2. start with every word as a sequence of single characters; the vocabulary is the set of characters;
    3. count every adjacent pair of symbols over all words (a word that occurs 5 times counts 5 times);
    4. merge the most frequent pair everywhere it occurs, add the merged symbol to the vocabulary;
    5. repeat 3–4 for the number of merges asked for.
Ties between equally frequent pairs go to the pair whose symbols entered the vocabulary first
(characters in code-point order, then merged symbols in the order they were made), which is how
the `tokenizers` library breaks them, so both learn the same merges.

Encoding a new word applies the learned merges in the order they were learned.
Real tokenizers (GPT-2, Llama 3, SmolLM2) do the same on bytes instead of characters, so any
text, in any script, can be split without an unknown token.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

WORD = re.compile(r" ?[^ ]+| +(?! |$)| +$")  # a word with the space before it; runs of spaces kept


def split_words(text: str) -> list[str]:
    """Pre-tokenize: 'low lower lowest' → ['low', ' lower', ' lowest']."""
    return WORD.findall(text)


@dataclass
class Merge:
    pair: tuple[str, str]  # the two symbols merged
    count: int  # how often the pair occurred when it was chosen

    @property
    def result(self) -> str:
        return self.pair[0] + self.pair[1]


def _merge_word(symbols: tuple[str, ...], pair: tuple[str, str]) -> tuple[str, ...]:
    """Replace every occurrence of `pair` in `symbols`, left to right."""
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            out.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return tuple(out)


def train_bpe(text: str, n_merges: int) -> tuple[list[str], list[Merge]]:
    """Learn up to `n_merges` merges from `text`. Returns the starting alphabet and the merges, in order."""
    words = Counter(tuple(w) for w in split_words(text))  # each word as characters, with its frequency
    vocab = sorted({c for w in words for c in w})  # the alphabet, in code-point order
    rank = {symbol: i for i, symbol in enumerate(vocab)}  # when each symbol entered the vocabulary
    alphabet, merges = list(vocab), []
    for _ in range(n_merges):
        pairs = Counter()
        for word, freq in words.items():
            for pair in zip(word, word[1:], strict=False):  # adjacent symbols
                pairs[pair] += freq
        if not pairs:
            break  # every word is a single symbol: nothing left to merge
        best = max(pairs, key=lambda p: (pairs[p], -rank[p[0]], -rank[p[1]]))
        merges.append(Merge(best, pairs[best]))
        merged = best[0] + best[1]
        rank.setdefault(merged, len(rank))
        words = Counter({_merge_word(w, best): f for w, f in words.items()})
    return alphabet, merges


def bpe_encode(text: str, merges: list[Merge] | list[tuple[str, str]]) -> list[str]:
    """Split `text` into symbols by applying `merges` to each word, in the order they were learned."""
    pairs = [m.pair if isinstance(m, Merge) else tuple(m) for m in merges]
    pieces = []
    for word in split_words(text):
        symbols = tuple(word)
        for pair in pairs:
            symbols = _merge_word(symbols, pair)
        pieces.extend(symbols)
    return pieces
