"""Chapter 11 quiz keys, run on teachllm.serving: iterations of static and continuous batching for the
slot example of 11.3 (a tiny random model: only iteration counts matter), iterations with one slot,
whether batching changes a request's tokens, and decode bytes at batch 32 against batch 1 (teachllm.cost)."""
import teachllm as tl
from teachllm.lm import LanguageModel
from teachllm.model import Transformer
from teachllm.serving import ServingConfig, ServingEngine
from teachllm.serving.workload import PROMPTS


def _slot_iterations(policy):
    """Requests A, B, C, D of 100, 50, 200 and 50 output tokens, three slots (chapter 11, section 11.3)."""
    tiny = tl.ModelConfig(vocab_size=97, hidden_size=48, intermediate_size=128, n_layers=2, n_heads=4, n_kv_heads=2,
                          head_dim=12, max_position_embeddings=512)
    tiny_lm = LanguageModel(Transformer(tiny).eval(), tokenizer=None, name="tiny, random weights")
    params = [tl.SamplingParams(temperature=0, max_tokens=n, ignore_eos=True) for n in (100, 50, 200, 50)]
    engine = ServingEngine(tiny_lm, ServingConfig(policy=policy, max_num_seqs=3, block_size=16, num_blocks=64))
    return engine.run([[5, 6, 7, 8]] * 4, params).iterations


def static_slots(lm):
    return {"answer": _slot_iterations("static")}


def continuous_slots(lm):
    return {"answer": _slot_iterations("continuous")}


def one_slot(lm):
    params = [tl.SamplingParams(temperature=0, max_tokens=m, ignore_eos=True) for m in (3, 5, 2, 4)]
    runs = [ServingEngine(lm, ServingConfig(policy=p, max_num_seqs=1)).run(PROMPTS[:4], params).iterations
            for p in ("static", "continuous")]
    assert runs[0] == runs[1]
    return {"answer": runs[0]}


def batching_same_tokens(lm):
    tok = lm.tokenizer
    chats = [tok.apply_chat_template([{"role": "user", "content": q}])
             for q in ("What is the capital of France?", "What colour is the sky?", "What is 2 + 2?")]
    greedy = tl.SamplingParams(temperature=0, max_tokens=6)
    run = ServingEngine(lm, ServingConfig(max_num_seqs=4)).run(chats, greedy)
    same = all(o.token_ids == lm.generate(c, greedy).token_ids for c, o in zip(chats, run.outputs, strict=True))
    return {"answer": 0 if same else 1}  # the YAML's options: 0 = the same tokens, 1 = different tokens


def decode_bytes_ratio(lm):
    one, many = (tl.cost.decode_cost(lm.config, context_len=33, batch_size=b, dtype="float32") for b in (1, 32))
    return {"answer": round(many.bytes / one.bytes, 3), "flops_ratio": many.flops / one.flops,
            "weights_mb": one.weight_bytes / 1e6, "kv_mb": many.kv_read_bytes / 1e6,
            "kv_write_mb": many.kv_write_bytes / 1e6}
