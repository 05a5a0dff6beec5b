"""Tokenizer: text ↔ token ids, a thin wrapper over the checkpoint's own Hugging Face tokenizer.

The model never sees text, only ids. This wrapper keeps the few calls a student needs in one
place and names them plainly; the byte-pair merges themselves run in the `tokenizers` library.
"""

from __future__ import annotations

from pathlib import Path


class Tokenizer:
    def __init__(self, hf_tokenizer):
        self.hf = hf_tokenizer  # the transformers tokenizer underneath, for anything not wrapped here

    @classmethod
    def from_pretrained(cls, folder: str | Path) -> Tokenizer:
        from transformers import AutoTokenizer

        return cls(AutoTokenizer.from_pretrained(str(folder)))

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
        """Special tokens by text, e.g. {'<|im_start|>': 1, '<|im_end|>': 2, ...}."""
        return {tok: self.hf.convert_tokens_to_ids(tok) for tok in self.hf.all_special_tokens}

    # ---- text ↔ ids ----------------------------------------------------------------------------
    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        """Token ids of `text`. With add_special_tokens, a BOS token is put first if this model expects one
        (Llama 2 and 3 do; SmolLM2 and Qwen do not)."""
        if not isinstance(text, str):
            raise TypeError(f"encode takes a str, got {type(text).__name__}")
        bos = self.hf.bos_token
        if bos and text.startswith(bos):  # a chat template already wrote the BOS token: don't add a second
            add_special_tokens = False
        return list(self.hf.encode(text, add_special_tokens=add_special_tokens))

    def decode(self, ids, skip_special_tokens: bool = False) -> str:
        """Text of a list of ids."""
        return self.hf.decode(_as_id_list(ids), skip_special_tokens=skip_special_tokens)

    def pieces(self, ids) -> list[str]:
        """The vocabulary entry of each id, as stored (byte-level BPE shows a leading space as 'Ġ')."""
        return self.hf.convert_ids_to_tokens(_as_id_list(ids))

    def token_text(self, token_id: int) -> str:
        """What one token decodes to on its own (a lone piece of a multi-byte character shows as '�')."""
        return self.hf.decode([int(token_id)])

    # ---- chat ----------------------------------------------------------------------------------
    def apply_chat_template(self, messages: list[dict], add_generation_prompt: bool = True) -> str:
        """The prompt text the model was trained to see for a conversation, e.g.
        [{"role": "user", "content": "Hi"}] → '<|im_start|>user\\nHi<|im_end|>\\n<|im_start|>assistant\\n'."""
        if self.hf.chat_template is None:
            raise ValueError("this tokenizer has no chat template; pass plain text instead")
        return self.hf.apply_chat_template(messages, add_generation_prompt=add_generation_prompt, tokenize=False)

    def __repr__(self) -> str:
        return f"Tokenizer(vocab_size={self.vocab_size}, bos={self.bos_token_id}, eos={self.eos_token_id})"


def _as_id_list(ids) -> list[int]:
    if hasattr(ids, "tolist"):
        ids = ids.tolist()
    if isinstance(ids, int):
        return [ids]
    return [int(i) for i in ids]
