# %% [markdown] slideshow={"slide_type": "slide"} slide={"say": ["**What you will see.**"]}
# # Chapter 2 · Tokens
#
# **What you will see.** The first and last stages of the pipeline from chapter 1: the tokenizer that turns
# text into ids before prefill, and the detokenizer that turns generated ids back into text. We take
# SmolLM2's real tokenizer apart, then train a byte-pair encoding (BPE) tokenizer ourselves — first on the
# three words "low lower lowest", then on a few paragraphs of English — and compare it with the real one.
#
# **What you will learn.**
# - A token is an entry of a fixed vocabulary; the model sees only its **id**. `encode`, `pieces`,
#   `decode` and `token_text` move between text, ids and vocabulary entries.
# - **Special tokens** and the **chat template** mark where turns begin and end.
# - Why today's tokenizers split text into **subwords**, and how **BPE** learns its merges from counts.
# - Why a Chinese character or an emoji can take several tokens (**byte-level** BPE), and what that means
#   for printing tokens one at a time.

# %% slide={"code": [14, 15]}
import json
from collections import Counter

import torch

import teachllm as tl
from teachllm import viz
from teachllm.bpe import bpe_encode, split_words, train_bpe
from teachllm.viz import BPEStepper, bpe_pieces_figure

viz.show_figures_offline()  # figures are drawn by JupyterLab's own plotly, nothing from a CDN
torch.manual_seed(0)
lm = tl.load()  # the bundled SmolLM2-135M-Instruct
tok = lm.tokenizer  # the tokenizer that came with the checkpoint
tok

# %% [markdown] slideshow={"slide_type": "slide"} slide={"say": ["The tokenization example"]}
# ## 2.1 Text → ids → pieces → text
#
# Four calls cover everything a student needs:
#
# | call | gives |
# | --- | --- |
# | `tok.encode(text)` | the token ids, what the model actually receives |
# | `tok.pieces(ids)` | the vocabulary entry of each id, as stored |
# | `tok.token_text(id)` | what one id turns into on its own |
# | `tok.decode(ids)` | the text of a list of ids |
#
# The tokenization example of *LLM Generation Process* (《LLM 生成过程》, §2.1) is `"Hello, how are you?"`.

# %% slide={"title": {"en": "\"Hello, how are you?\" in ids and pieces", "zh": "“Hello, how are you?” 的 id 与词表条目"}, "code": [[1, 2], [5, 6]]}
text = "Hello, how are you?"
ids = tok.encode(text)
print("ids:", ids)
print(viz.tr("    id  piece    text"))
for token_id, piece in zip(ids, tok.pieces(ids), strict=True):
    print(f"{token_id:>6}  {piece:<8} {tok.token_text(token_id)!r}")
assert tok.decode(ids) == text  # the round trip loses nothing
print(viz.tr("decoded: {text!r}", text=tok.decode(ids)))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"say": ["*LLM Generation Process*"]}
# A space belongs to the word **after** it: `' how'` is one token, and the vocabulary stores it as `'Ġhow'`.
# SmolLM2 works on bytes (section 2.7), and stores each byte as a printable character; the space byte is
# shown as `Ġ`. `token_text` turns it back into a real space.
#
# ## 2.2 The same sentence, another tokenizer *(optional)*
#
# *LLM Generation Process* §2.1 and *LLM Inference Flow* (《LLM 推理流程》) §2.1 tokenize their examples with
# Llama 2's tokenizer. Here are those ids next to SmolLM2's:

# %% slide={"code": [[1, 9]], "output": [[1, 6]]}
llama2 = {  # copied from the course notes: LLM Generation Process §2.1, LLM Inference Flow §2.1
    "Hello, how are you?": [1, 15043, 29892, 920, 526, 366, 29973],
    "What is artificial intelligence?": [1, 1724, 338, 23116, 21082, 29973],
}
for text, theirs in llama2.items():
    ours = tok.encode(text)
    print(repr(text))
    print(f"  Llama 2 : {theirs}")
    print(f"  SmolLM2 : {ours}  {tok.pieces(ours)}")
    assert len(ours) == len(theirs) - 1  # as many pieces; Llama 2 has one id more: BOS
llama2_pieces = ["<s>", "Hello", ",", "how", "are", "you", "?"]  # LLM Generation Process §2.1 prints these
assert [p.lstrip("Ġ") for p in tok.pieces(tok.encode("Hello, how are you?"))] == llama2_pieces[1:]  # same pieces
print(viz.tr("SmolLM2 vocabulary size: {n}", n=tok.vocab_size))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Why the ids differ", "zh": "为什么 id 不同"}}
# Two reasons the numbers differ:
# - **Every tokenizer has its own vocabulary.** Llama 2 has 32,000 entries (`'▁how'` is 920 there);
#   SmolLM2 has 49,152 (`'Ġhow'` is 638 here). An id means nothing without its tokenizer: never feed one
#   model's ids to another.
# - **Llama 2 puts a BOS token first** (`<s>`, id 1, "beginning of sequence"). SmolLM2 does not: its
#   `encode` returns only the text's own tokens. Both tokenizers cut these two sentences into equally many
#   pieces, so apart from BOS the lengths agree. For the first sentence *LLM Generation Process* §2.1 also prints
#   Llama 2's pieces (without its `▁` marks), and they are SmolLM2's (the cell above asserts it).

# %%
print(viz.tr("SmolLM2's BOS token: {id} {pieces}", id=tok.bos_token_id, pieces=tok.pieces([tok.bos_token_id])))
print(viz.tr("Does encode put it first? {answer}", answer=tok.encode("Hi")[0] == tok.bos_token_id))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2.3 Special tokens and the chat template
#
# A **special token** is a vocabulary entry that no BPE merge builds: the tokenizer finds its whole string
# before it splits the rest of the text, and turns it into one id. It marks a piece of structure. SmolLM2 has 17 of them. `<|im_start|>` and
# `<|im_end|>` are the chat template's, `<|endoftext|>` separates documents in the pretraining data, and the
# others mark code files, GitHub issues and Jupyter cells in the training data.

# %% slide={"output": [[1, 4], -1]}
for text, token_id in tok.special_tokens.items():  # every special token, by text
    print(f"{token_id:>3}  {text}")
print(viz.tr("{n} special tokens", n=len(tok.special_tokens)))
special_ids = set(tok.special_tokens.values())

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The chat template", "zh": "对话模板"}}
# An instruct model was trained on conversations written in one fixed format, its **chat template**.
# SmolLM2 uses ChatML: each turn is `<|im_start|>role\n…<|im_end|>\n`, and a system turn is added when the
# conversation has none. The prompt ends with an open assistant turn, so the next token the model
# predicts is the first token of its answer. When it writes `<|im_end|>` (id 2, the EOS token) the
# answer is over (chapter 9).

# %%
messages = [{"role": "user", "content": "What is artificial intelligence?"}]
prompt = tok.apply_chat_template(messages)
print(prompt)

# %% slide={"title": {"en": "The template's ids", "zh": "模板的 id"}}
ids = tok.encode(prompt)
print(viz.tr("{n} ids; the special ones are marked with *", n=len(ids)))
print(" ".join(f"{i}*" if i in special_ids else str(i) for i in ids))
print(tok.pieces(ids)[:4], "...", tok.pieces(ids)[-9:])
print(viz.tr("decoded without special tokens: {text!r}", text=tok.decode(ids, skip_special_tokens=True)))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"say": ["The three approaches under", "| **BPE** (byte", "The lengths of"]}
# `<|im_start|>` is one id (1), not the twelve characters it is written with; the role name after it is made
# of ordinary tokens (`'assistant'` is even two: `'ass'` + `'istant'`). The template begins with
# `<|im_start|>`, which SmolLM2's configuration also names its BOS token — so for this model "BOS" comes from
# the template, not from `encode`.
#
# ## 2.4 Words, characters, subwords
#
# How should text be cut into units? *LLM Inference Flow* (§2.2) draws the answers as an evolution: word-level →
# character-level → subword, with BPE, WordPiece and SentencePiece under subword. The descriptions in the two
# tables are this chapter's:
#
# | method | unit | vocabulary | what it gains | what it costs |
# | --- | --- | --- | --- | --- |
# | word-level | whole words | every word seen: hundreds of thousands | short sequences, one token per word | unseen words become `<unk>`; "low", "lower", "lowest" share nothing |
# | character-level | characters | tiny (letters, digits, punctuation) | no unknown words | long sequences (attention grows with the square of the length); one character carries little meaning |
# | subword | frequent words whole, rare words in pieces | chosen size, 30k–150k | both: short sequences and no unknowns | the split depends on training data; ids are tokenizer-specific |
#
# The three approaches under subwords:
#
# | subword method | how it builds the vocabulary | used by |
# | --- | --- | --- |
# | **BPE** (byte pair encoding) | start from characters (or bytes); repeatedly merge the most frequent adjacent pair | GPT-2, Llama 3, SmolLM2 (byte-level) |
# | **WordPiece** | like BPE, but merge the pair with the highest $\mathrm{count}(ab) / (\mathrm{count}(a)\,\mathrm{count}(b))$; word-inner pieces marked `##` | BERT |
# | **SentencePiece** | a library, not a rule: works on raw text with the space as the symbol `▁`, trains BPE or a unigram model | Llama 2, T5 |
#
# The lengths of one sentence under each choice (the subword column is SmolLM2's tokenizer):

# %% slide={"title": {"en": "One sentence, three ways", "zh": "同一句话，三种切法"}}
sentence = "The lowest price is lower than the low price."
n_words, n_chars, n_subwords = len(sentence.split()), len(sentence), len(tok.encode(sentence))
print(viz.tr("word-level: {words} tokens, character-level: {chars} tokens, subword (SmolLM2): {subwords} tokens",
             words=n_words, chars=n_chars, subwords=n_subwords))
print(tok.pieces(tok.encode(sentence)))

# %% [markdown] slideshow={"slide_type": "slide"} slide={"say": ["The example of"]}
# ## 2.5 BPE step by step: "low lower lowest"
#
# `teachllm.bpe` is a BPE trainer small enough to read (its test checks that it learns exactly the same
# merges as the `tokenizers` library). Training is:
# 1. split the text into words, each keeping the space before it;
# 2. start with every word as single characters — the characters are the first vocabulary;
# 3. count every adjacent pair of symbols, merge the most frequent one everywhere, add it to the vocabulary;
# 4. repeat.
#
# The example of *LLM Inference Flow* (§2.3) starts from the vocabulary `['l', 'o', 'w', 'e', 'r', 's', 't', ' ']`.

# %% slide={"code": [[1, 3]]}
text = "low lower lowest"
words = split_words(text)
alphabet, merges = train_bpe(text, n_merges=10)
print(viz.tr("words: {words}", words=words))
print(viz.tr("initial vocabulary: {alphabet}", alphabet=alphabet))
assert set(alphabet) == {"l", "o", "w", "e", "r", "s", "t", " "}  # the eight symbols of the course notes' example

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The merges, one at a time", "zh": "逐次合并"}, "say": true}
# Now the merges one at a time. Before each merge we count every adjacent pair ourselves, on the words as
# the merges so far have split them (`bpe_encode` applies a list of merges), and check that `train_bpe`
# chose the most frequent pair. When two pairs are equally frequent, the pair whose first symbol entered the
# vocabulary earlier wins; if the first symbols are the same, the second decides (characters in code-point order,
# then merged symbols in order of creation).

# %% slide={"code": [[1, 2], 6, 10], "output": [[1, 4], -1]}
for step, merge in enumerate(merges, start=1):
    pairs = Counter()
    for word in words:
        symbols = bpe_encode(word, merges[: step - 1])  # the word as the earlier merges split it
        pairs.update(zip(symbols, symbols[1:], strict=False))
    assert merge.count == max(pairs.values()) == pairs[merge.pair]  # train_bpe took a most frequent pair
    counts = ", ".join(f"{a!r}+{b!r}:{n}" for (a, b), n in pairs.most_common())
    print(viz.tr("merge {step}: {a!r} + {b!r} -> {result!r}   pair counts: {counts}", step=step, a=merge.pair[0],
                 b=merge.pair[1], result=merge.result, counts=counts))
print(viz.tr("after {n} merges: {pieces}", n=len(merges), pieces=bpe_encode(text, merges)))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The course notes' merges", "zh": "课程资料里的合并"}}
# Counting gives `lo` (3 times) and `low` (3 times), as in *LLM Inference Flow*. After that its example merges
# `er` and `es`, but on these three words alone that is not what the counts say: `e` always follows `' low'`
# (twice), while `er` and `es` occur once each, so BPE builds `' low'`, `' lowe'`, … and ends with each word
# as a single token. Seven merges and nothing is left to merge.
#
# Its `er` and `es` must come from counting over a larger text, in which many words end in *-er* and
# *-est* (exercise 1). Its four listed merges, plus the `es` + `t` its "..." must contain, applied with
# `bpe_encode`, do give its final pieces:

# %%
notes_merges = [("l", "o"), ("lo", "w"), ("e", "r"), ("e", "s"), ("es", "t")]
pieces = bpe_encode(text, notes_merges)
print(pieces)
assert [p for p in pieces if p != " "] == ["low", "low", "er", "low", "est"]  # low / er / est

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2.6 BPE on a real text, against SmolLM2's tokenizer
#
# A few merges learned from three words do not make a tokenizer. Here are five paragraphs of English (about 290
# words), written for this course. We learn merges from them and split three sentences that are **not** in the text.

# %% slide={"code": [[26, 30]]}
corpus = """\
A river begins as rain on a hillside. The water gathers in small streams, the streams join, and within a few \
miles there is a river wide enough to carry a boat. For most of history, rivers were the roads of the world: \
they carried grain to the cities, timber to the coast and news from one town to the next.

The people who lived beside a river learned to read it. They knew which banks were firm and which were soft, \
where the water ran deep and where it ran fast, and in which months it would rise over the fields. A flood \
could ruin a harvest, but it also left behind the dark soil that made the next harvest possible.

Mills were built where the current was strongest. A wooden wheel turned in the water, the wheel turned a \
shaft, and the shaft turned a stone that ground the grain into flour. The miller kept part of the flour as \
payment, and the mill became the place where farmers met, traded and talked about the weather.

Bridges changed the river towns. Before a bridge was built, travellers waited for a ferry or walked many \
miles to the nearest ford. After it was built, the town became a crossing, markets grew on both banks, and \
the bridge itself became a place to stand and watch the water go by.

Today most goods travel by road and by rail, and many mills have become houses or museums. The rivers are \
still there. They still rise in the spring and fall in the summer, and they still carry the rain from the \
hills down to the sea, as they did long before the first boat was built."""
held_out = [
    "The farmers carried their grain across the bridge to the mill.",
    "After the flood, the river was wider and the water ran faster.",
    "Travellers waited on the bank while the ferry crossed the deep water.",
]
alphabet, merges = train_bpe(corpus, n_merges=300)
print(viz.tr("{words} words, {chars} characters in the alphabet, {merges} merges learned",
             words=len(corpus.split()), chars=len(alphabet), merges=len(merges)))
print(viz.tr("first 12 merges: {merges}", merges=[(m.result, m.count) for m in merges[:12]]))
print(viz.tr("'er' is merge number {n}", n=[m.result for m in merges].index("er") + 1))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "SmolLM2's own first merges", "zh": "SmolLM2 自己的前几次合并"}}
# The first merges are the most frequent pairs of English: `' t'`, `'he'`, `' the'`, `' a'`, mostly a space with
# the next letter, or the letters of *the*. The `er` of *LLM Inference Flow* appears early too — on a real text, BPE
# does learn it.
# SmolLM2's own merge list (stored with the tokenizer) starts the same way:

# %%
smol_merges = json.loads(tok.hf.backend_tokenizer.to_str())["model"]["merges"]
print(viz.tr("SmolLM2: {n} merges; the first 8: {first}", n=len(smol_merges), first=[a + b for a, b in smol_merges[:8]]))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Held-out sentences: our merges against SmolLM2's", "zh": "未见过的句子：我们的合并与 SmolLM2 的"}}
# Now the held-out sentences: our 300 merges against SmolLM2's list, in tokens per word.

# %% slide={"code": [[1, 4], [6, 7]], "output": [[1, 3]]}
for sentence in held_out:
    ours = bpe_encode(sentence, merges)
    theirs = tok.pieces(tok.encode(sentence))
    n = len(sentence.split())
    print(sentence)
    print(viz.tr("  our BPE : {per_word:.2f} tokens/word  {pieces}", per_word=len(ours) / n, pieces=ours))
    print(viz.tr("  SmolLM2 : {per_word:.2f} tokens/word  {pieces}", per_word=len(theirs) / n, pieces=theirs))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Watch the merges build a sentence", "zh": "看合并一步步拼出句子"}, "say": true}
# Watch the first held-out sentence being built, one merge at a time: drag the **merges** slider from 0 (single
# characters) to 300 (all our merges). Each box is one piece; the title names the latest merge (it need not change this sentence).

# %% slide={"code": [3]}
for n in (0, 10, 50, 300):
    print(viz.tr("{n:>3} merges: {pieces:>2} pieces", n=n, pieces=len(bpe_encode(held_out[0], merges[:n]))))
BPEStepper(held_out[0], merges, start=10)

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "After all 300 merges", "zh": "300 次合并之后"}, "say": true}
# The same sentence after all 300 merges, as a static figure:

# %%
bpe_pieces_figure(held_out[0], merges, len(merges))

# %% [markdown] slideshow={"slide_type": "subslide"}
# Words that were frequent in our text (`' the'`, `' river'`, `' water'`, `' bridge'`) are single tokens;
# words that were rare or absent fall apart into small pieces (`' car'` + `'ried'`, `' ban'` + `'k'`).
# SmolLM2 learned its merges from a huge amount of text, so almost every common English word is one token
# and it needs about 1.1–1.3 tokens per word. The more merges (the larger the vocabulary), the shorter the
# sequences — and the larger the embedding table and the LM head, which have one row per vocabulary entry.
#
# ## 2.7 Byte-level BPE: Chinese and emoji
#
# Our toy BPE starts from characters, so a character it never saw has no symbol. SmolLM2's BPE starts from
# the 256 possible values of a **byte** instead. Every text, written in UTF-8, is a sequence of bytes, so nothing
# is ever unknown. The price: an English letter is one byte, but a common Chinese character is three bytes and a
# common emoji four, and when a character was rare in the training data its bytes are not merged into one token.

# %% slide={"title": {"en": "Three texts in bytes and tokens", "zh": "三段文字的字节与 token"}, "output": [1, [5, 12]]}
for text in ["Hello", "大语言模型", "🚀"]:
    ids = tok.encode(text)
    print(viz.tr("{text!r}: characters {chars}, UTF-8 bytes {n_bytes}, tokens {tokens}", text=text, chars=len(text),
                 n_bytes=len(text.encode("utf-8")), tokens=len(ids)))
    print("   ids        :", ids)
    print("   token_text :", [tok.token_text(i) for i in ids])
    print("   decode     :", repr(tok.decode(ids)))
    assert tok.decode(ids) == text

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "Half a character cannot be shown", "zh": "半个字符无法单独显示"}}
# `'大'` and `'型'` are single tokens, but `'语'`, `'言'` and `'模'` take two tokens each, and the rocket
# takes three. A token that holds only part of a character's bytes cannot be shown on its own:
# `token_text` prints `'�'` (U+FFFD, the replacement character). Decoding the whole list puts the bytes
# back together. Watch the rocket being assembled, one token at a time:

# %%
ids = tok.encode("🚀")
for n in range(1, len(ids) + 1):
    print(f"decode(ids[:{n}]) = {tok.decode(ids[:n])!r}")

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "What this model does with Chinese", "zh": "这个模型怎样处理中文"}, "say": ["This matters in", "**What does this"]}
# This matters in the decode loop: a program that prints each new token with `token_text` as it arrives
# shows `'�'` in the middle of Chinese text. Chapter 9 shows how streaming holds back an unfinished
# character until its last byte arrives.
#
# **What does this model do with Chinese?** The interview answer's example is 今天天气 ("today's weather"),
# continued by a model. Here is SmolLM2's greedy continuation, and its answer to the question in its chat
# template:

# %%
weather = tok.encode("今天天气")
print(viz.tr("{text}: {chars} characters, {n} tokens", text="今天天气", chars=4, n=len(weather)), tok.pieces(weather))
print(viz.tr("continued: {text!r}", text=lm.generate(weather, tl.SamplingParams(temperature=0, max_tokens=16)).text))
question = tok.apply_chat_template([{"role": "user", "content": "今天天气怎么样？"}])
print(viz.tr("chat answer: {text!r}", text=lm.generate(question, tl.SamplingParams(temperature=0, max_tokens=24)).text))

# %% [markdown] slideshow={"slide_type": "subslide"} slide={"title": {"en": "The verdict", "zh": "结论"}, "say": ["After each exercise,", "Work in the cells"]}
# Plainly: not much. Four characters cost nine tokens, because SmolLM2's vocabulary was built from mostly
# English text and few Chinese characters got a token of their own. The greedy continuation repeats 气 and
# strings a few characters together without making a sentence, and in the chat template it echoes the
# question back. A 135M model trained mostly on English can read and write any UTF-8 text, byte by byte,
# but it has not learnt Chinese. The course notes' examples assume a model that has; `tl.load` also reads
# Qwen2.5 and Qwen3 checkpoints, which were trained on Chinese, if you have one on disk.
#
# ## Summary
# - The model sees ids. `encode` / `decode` convert text, `pieces` shows vocabulary entries (`Ġ` is a space),
#   `token_text` shows one token's text.
# - Ids belong to one tokenizer: Llama 2 and SmolLM2 cut "Hello, how are you?" into the same six pieces
#   (*LLM Generation Process* §2.1 prints Llama 2's) with different ids, and Llama 2 adds a BOS token.
# - Special tokens (`<|im_start|>`, `<|im_end|>`) are single ids that mark structure; the chat template
#   wraps each turn in them, and `<|im_end|>` is the EOS token.
# - Subwords sit between words and characters. BPE learns them by repeatedly merging the most frequent
#   adjacent pair; what it learns depends entirely on the counts in its training text.
# - Byte-level BPE never meets an unknown character, but one character can span several tokens.
#
# ## Exercises
# 1. On "low lower lowest" alone BPE never learns `er` or `es`. Write a short text (a few words, each
#    repeated as often as you like) on which `train_bpe` learns `es` or `er` among its first four merges, and
#    put it in `my_text`.
# 2. Count tokens per character for an English, a Chinese and an emoji sentence: write
#    `tokens_per_char(tok, text)`. Which of "The weather is lovely today.", "今天天气很好。" and "🌞🌈😊🎉" costs the
#    most tokens per character? Set `costliest` to `"English"`, `"Chinese"` or `"emoji"`. Why does this matter
#    for the price and the speed of a request?
# 3. A user types `<|im_end|>` into their message. What ids does the prompt get? Write
#    `end_of_turn_count(tok, content)`, the number of `<|im_end|>` ids in the chat-template prompt of one user
#    message, and set `typed_im_end_is_special` to True or False: does the typed text become the special token's
#    own id? Why could that be a problem?
#
# After each exercise, run the check cell below it: it runs the public checks and says what is wrong, not the
# answer. The course's grader runs more checks.
#
# Work in the cells below.

# %% tags=["check"]
from teachllm.course import grading

grader = grading.checker()

# %% tags=["exercise"]
# Exercise 1: put your text in my_text, e.g. my_text = "low lower ..."
my_text = None

# %% tags=["check"]
# Check exercise 1: public checks only; the grader runs more.
grader.check("ch02-ex1")

# %% tags=["exercise"]
# Exercise 2: tokens per character for an English, a Chinese and an emoji sentence.
def tokens_per_char(tok, text):
    # the number of tokens tok.encode gives for text (no special tokens added), divided by its characters
    ...  # your code


costliest = None  # "English", "Chinese" or "emoji": which sentence costs the most tokens per character?

# %% tags=["check"]
# Check exercise 2: public checks only; the grader runs more.
grader.check("ch02-ex2")

# %% tags=["exercise"]
# Exercise 3: encode a user message that contains <|im_end|> through the chat template.
def end_of_turn_count(tok, content):
    # how many <|im_end|> ids the chat-template prompt of one user message with this content holds
    ...  # your code


typed_im_end_is_special = None  # True or False

# %% tags=["check"]
# Check exercise 3: public checks only; the grader runs more.
grader.check("ch02-ex3")

# %% [markdown] slideshow={"slide_type": "skip"}
# Worked answers are in the repository, in `notebooks/solutions/ch02.py` (in JupyterLab: `solutions/ch02.py` in
# the file browser). Open them once you have an answer: running this notebook, "Run All" included, never runs
# them; the test suite does.

# %% [markdown] slideshow={"slide_type": "skip"}
# ## Quiz
# Check yourself on this chapter. Choose or type an answer and press *Check*: the quiz says whether it is
# right and explains why. The answers that are facts about the model were computed by teachllm on the
# bundled model when the quiz was built.

# %% slideshow={"slide_type": "skip"}
from teachllm import viz

viz.Quiz(2)
