"""Tokenizer: text ↔ token ids, a thin wrapper over the checkpoint's own Hugging Face tokenizer.

The model never sees text, only ids. This wrapper keeps the few calls a student needs in one
place and names them plainly; the byte-pair merges themselves run in the `tokenizers` library.
"""

from __future__ import annotations

from pathlib import Path

from . import inputs


class Tokenizer:
    def __init__(self, hf_tokenizer):
        self.hf = hf_tokenizer  # the transformers tokenizer underneath, for anything not wrapped here

    @classmethod
    def from_pretrained(cls, folder: str | Path) -> Tokenizer:
        """The tokenizer files of a checkpoint folder. Code shipped with a checkpoint never runs: a tokenizer
        that needs its own Python class is refused."""
        from transformers import AutoTokenizer  # here: transformers takes seconds to import

        try:
            return cls(AutoTokenizer.from_pretrained(str(folder), trust_remote_code=False))
        except ValueError as error:
            if "trust_remote_code" not in str(error):
                raise
            raise ValueError(f"the tokenizer in {folder} needs Python code shipped with the checkpoint "
                             "(auto_map in tokenizer_config.json); teachllm never runs a checkpoint's code. "
                             "Use a checkpoint whose tokenizer is a tokenizer.json") from None

    # ---- the vocabulary ------------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        """Number of ids the tokenizer can produce (added special tokens included)."""
        return len(self.hf)

    @property
    def bos_token_id(self) -> int | None:
        return self.hf.bos_token_id

    @property
    def eos_token_id(self) -> int | None:
        return self.hf.eos_token_id

    @property
    def pad_token_id(self) -> int | None:
        return self.hf.pad_token_id

    @property
    def special_tokens(self) -> dict[str, int]:
        """Every special token by text, e.g. {'<|endoftext|>': 0, '<|im_start|>': 1, '<|im_end|>': 2, ...}."""
        return {t.content: i for i, t in sorted(self.hf.added_tokens_decoder.items()) if t.special}

    # ---- text ↔ ids ----------------------------------------------------------------------------
    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        """Token ids of `text`. With add_special_tokens, a BOS token is put first if this model expects one
        (Llama 2 and 3 do; SmolLM2 and Qwen do not)."""
        if not isinstance(text, str):
            raise TypeError(f"encode takes text (a str), got {type(text).__name__}"
                            + ("; to turn token ids into text use decode" if isinstance(text, (list, tuple)) else ""))
        bos = self.hf.bos_token
        if bos and text.startswith(bos):  # a chat template already wrote the BOS token: don't add a second
            add_special_tokens = False
        return list(self.hf.encode(text, add_special_tokens=add_special_tokens))

    def decode(self, ids, skip_special_tokens: bool = False) -> str:
        """Text of a list of ids."""
        return self.hf.decode(inputs.token_list(ids, self.vocab_size), skip_special_tokens=skip_special_tokens)

    def pieces(self, ids) -> list[str]:
        """The vocabulary entry of each id, as stored (byte-level BPE shows a leading space as 'Ġ')."""
        return self.hf.convert_ids_to_tokens(inputs.token_list(ids, self.vocab_size))

    def token_text(self, token_id: int) -> str:
        """What one token decodes to on its own (a lone piece of a multi-byte character shows as '�')."""
        ids = inputs.token_list(token_id, self.vocab_size)
        if len(ids) != 1:
            raise TypeError(f"token_text takes one token id, got {len(ids)}; use decode for a list")
        return self.hf.decode(ids)

    # ---- chat ----------------------------------------------------------------------------------
    def apply_chat_template(self, messages: list[dict], add_generation_prompt: bool = True) -> str:
        """The prompt text the model was trained to see for a conversation, e.g.
        [{"role": "user", "content": "Hi"}] → '<|im_start|>user\\nHi<|im_end|>\\n<|im_start|>assistant\\n'."""
        if (not isinstance(messages, (list, tuple)) or not messages
                or not all(isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
                           for m in messages)):
            raise TypeError("apply_chat_template takes a non-empty list of messages, each a dict with a 'role' and a "
                            f"'content' string, e.g. [{{'role': 'user', 'content': 'Hi'}}]; got {messages!r:.80}")
        if self.hf.chat_template is None:
            raise ValueError("this tokenizer has no chat template; pass plain text instead")
        return self.hf.apply_chat_template(messages, add_generation_prompt=add_generation_prompt, tokenize=False)

    def __repr__(self) -> str:
        return f"Tokenizer(vocab_size={self.vocab_size}, bos={self.bos_token_id}, eos={self.eos_token_id})"


class IncrementalDetokenizer:
    """Turns generated ids into text as they arrive, for streaming and for stop strings.

    Two problems it solves:
    - a Chinese character or an emoji is 3–4 bytes, and byte-level BPE may split it over several
      tokens; until the last piece arrives, decoding shows '�'. Text holds only complete characters,
      so neither a stream nor the final text (cut off by max_tokens mid-character) shows half of one;
    - a stop string can span several tokens ("\\n\\n" = "\\n" + "\\n"). After every token the text is
      searched from len(stop) − 1 characters before the new text, and the last len(stop) − 1
      characters are held back from the stream, since they may be the start of a stop string.

    Each token costs a bounded amount of work, as in vLLM: only the window `ids[prefix:]` is decoded,
    where `ids[prefix:read]` is the last stretch already turned into text (kept as context, because
    some tokenizers write a token differently at the start of a text) and `ids[read:]` the new ids.
    The new text is what the window decodes to beyond its context; once it ends on a complete
    character, the window moves on (prefix ← read, read ← the end).
    """

    def __init__(self, tokenizer: Tokenizer, stop: list[str] = (), include_stop: bool = False):
        self.tokenizer = tokenizer
        self.stop = list(stop)
        self.include_stop = include_stop
        self.ids: list[int] = []
        self.text = ""  # all text decoded so far (complete characters only, cut at a stop string once found)
        self.stop_found: str | None = None  # the stop string that ended the output, if any
        self.sent = 0  # characters already handed out by `release`
        self.prefix = 0  # ids[prefix:read]: context for the next decode, already in `text`
        self.read = 0  # ids[read:]: not yet settled into complete characters
        self.settled = ""  # the text of ids[:read]

    def add(self, token_id: int, check_stop: bool = True) -> None:
        """Append one token; look for a stop string ending in its text unless `check_stop` is False."""
        if self.stop_found is not None:
            raise ValueError("this output already ended at a stop string; no token can follow it")
        self.ids.append(int(token_id))
        before = len(self.text)
        decode = self.tokenizer.decode
        context = decode(self.ids[self.prefix:self.read], skip_special_tokens=True)
        window = decode(self.ids[self.prefix:], skip_special_tokens=True)
        complete = window.rstrip("\ufffd")  # '�' at the end: a character still waiting for its bytes
        self.text = self.settled + complete[len(context):]
        if complete == window:  # every byte so far is a whole character: move the window on
            self.settled, self.prefix, self.read = self.text, self.read, len(self.ids)
        if check_stop and self.stop:
            self._find_stop(before)

    def _find_stop(self, new_from: int) -> None:
        """Find the first stop string that ends in the text added since `new_from` (it may begin earlier)."""
        hits = [(self.text.find(s, max(0, new_from - len(s) + 1)), s) for s in self.stop]
        hits = [(i, s) for i, s in hits if i >= 0]
        if hits:
            index, stop = min(hits)
            self.stop_found = stop
            self.text = self.text[: index + len(stop) if self.include_stop else index]

    def release(self, final: bool = False) -> str:
        """The new text that is safe to show now."""
        hold = 0 if (final or self.stop_found is not None or not self.stop) else max(map(len, self.stop)) - 1
        end = max(self.sent, len(self.text) - hold)
        piece, self.sent = self.text[self.sent:end], end
        return piece
