"""Chapter 2's computed answers: token counts of English, Chinese and an emoji under SmolLM2's tokenizer."""

SAMPLES = {"english": "Hello", "chinese": "大语言模型", "emoji": "🚀"}  # in the order of the question's options


def tokens_per_character(lm) -> dict:
    per_char = {name: len(lm.tokenizer.encode(text)) / len(text) for name, text in SAMPLES.items()}
    costliest = max(per_char, key=per_char.get)
    return {"answer": list(SAMPLES).index(costliest), **per_char}


def rocket_tokens(lm) -> dict:
    return {"answer": len(lm.tokenizer.encode("🚀")), "n_bytes": len("🚀".encode())}


def weather_tokens(lm) -> dict:
    return {"answer": len(lm.tokenizer.encode("今天天气"))}
