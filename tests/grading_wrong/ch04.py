"""Plausible wrong answers to chapter 4's exercises: the hidden tests must not give any of them full points."""

WRONG = {
    "ch04-ex1": [
        # reads the first row instead of the last
        """
def generate_without_cache(lm, ids, n):
    seq = list(ids)
    for _ in range(n):
        seq.append(int(lm.forward(seq)[0, 0].argmax()))
    return seq[len(ids):]
""",
        # never appends the chosen token: runs the same prompt every time
        """
def generate_without_cache(lm, ids, n):
    return [int(lm.forward(list(ids))[0, -1].argmax()) for _ in range(n)]
""",
    ],
    "ch04-ex2": [
        # counts every position where the tokens agree, not only the shared beginning
        """
def reusable_prefix(ids_a, ids_b):
    return sum(x == y for x, y in zip(ids_a, ids_b))
same_kv_for_shared_tokens = True
""",
        # as if every token of the shorter prompt could be reused
        """
def reusable_prefix(ids_a, ids_b):
    return min(len(ids_a), len(ids_b))
same_kv_for_shared_tokens = True
""",
    ],
    "ch04-ex3": [
        # forgets that both K and V are stored
        """
import dataclasses
import teachllm as tl
def tokens_that_fit(config, memory_bytes, dtype="float16"):
    free = memory_bytes - tl.cost.weight_bytes(config, dtype)
    return int(free // (config.n_layers * config.n_kv_heads * config.head_dim * tl.cost.element_size(dtype)))
llama2_7b = tl.ModelConfig(vocab_size=32000, hidden_size=4096, intermediate_size=11008, n_layers=32, n_heads=32,
                           n_kv_heads=32, head_dim=128, max_position_embeddings=4096)
my_tokens = tokens_that_fit(llama2_7b, 80e9)
my_tokens_8_kv_heads = tokens_that_fit(dataclasses.replace(llama2_7b, n_kv_heads=8), 80e9)
""",
        # query heads instead of KV heads: GQA makes no difference
        """
import dataclasses
import teachllm as tl
def tokens_that_fit(config, memory_bytes, dtype="float16"):
    free = memory_bytes - tl.cost.weight_bytes(config, dtype)
    return int(free // (2 * config.n_layers * config.n_heads * config.head_dim * tl.cost.element_size(dtype)))
llama2_7b = tl.ModelConfig(vocab_size=32000, hidden_size=4096, intermediate_size=11008, n_layers=32, n_heads=32,
                           n_kv_heads=32, head_dim=128, max_position_embeddings=4096)
my_tokens = tokens_that_fit(llama2_7b, 80e9)
my_tokens_8_kv_heads = tokens_that_fit(dataclasses.replace(llama2_7b, n_kv_heads=8), 80e9)
""",
        # leaves the weights out: the whole GPU for the cache
        """
import dataclasses
import teachllm as tl
def tokens_that_fit(config, memory_bytes, dtype="float16"):
    return int(memory_bytes // tl.cost.kv_cache_bytes(config, 1, dtype=dtype))
llama2_7b = tl.ModelConfig(vocab_size=32000, hidden_size=4096, intermediate_size=11008, n_layers=32, n_heads=32,
                           n_kv_heads=32, head_dim=128, max_position_embeddings=4096)
my_tokens = tokens_that_fit(llama2_7b, 80e9)
my_tokens_8_kv_heads = tokens_that_fit(dataclasses.replace(llama2_7b, n_kv_heads=8), 80e9)
""",
    ],
}
