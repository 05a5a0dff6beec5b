"""Speculative decoding, with the model drafting for itself from its first layers.

Decode is memory-bound: a forward call over 5 tokens costs little more than over 1, because the
weights are read once either way. Speculative decoding (Leviathan et al. 2023; Chen et al. 2023) spends
that slack: a cheap draft model proposes γ tokens one by one, and the target model checks all of them
in one call over γ + 1 tokens. With greedy decoding the rule is simple:

    target's choices t_0 … t_γ after  [last token, p_1, …, p_γ]
    accept p_1 … p_a while p_i = t_{i−1};  then append t_a (a correction, or a bonus token if a = γ)

so every call yields between 1 and γ + 1 tokens, and the output is exactly the target's own greedy
output. The draft here is the same model running only some of its layers, so no second checkpoint is
needed and every weight is shared: either its first k layers (early exit: the final norm and LM head
read layer k's output, as in LayerSkip), or a set of layers with some in the middle skipped
(Draft & Verify, Zhang et al. 2024). Without training for it, an early exit drafts poorly; skipping
middle layers keeps the last layers, which turn the residual stream into next-token logits.

    acceptance rate = accepted proposals / proposals              (every proposal counted, judged or not)
    tokens per target call = generated tokens / target forward calls   ≈ 1 + γ · acceptance rate
    judged acceptance α = accepted / (accepted + rejected)         (only the proposals the target judged)

The papers' formula, E[tokens per call] = (1 − α^(γ+1)) / (1 − α), takes α as the chance that a proposal
is accepted once every proposal before it was: the judged rate, not the first one (proposals after the
first mismatch are never judged). It also assumes each proposal is accepted independently.

Both caches roll back by moving `KVCache.length`: rejected tokens' slots are simply overwritten later.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import asdict, dataclass

import torch
from torch import nn

from ..lm import LanguageModel
from ..model import Transformer
from ..sampling import SamplingParams


def layer_list(lm, draft_layers) -> list[int]:
    """`draft_layers` as a list of layer indices: an int k means the first k layers."""
    L = lm.config.n_layers
    layers = list(range(draft_layers)) if isinstance(draft_layers, int) else sorted(set(draft_layers))
    if not layers or layers[0] < 0 or layers[-1] >= L:
        raise ValueError(f"draft_layers must be an int in 1 … {L} or layer indices in 0 … {L - 1}, "
                         f"got {draft_layers!r}")
    return layers


def draft_model(lm, draft_layers) -> LanguageModel:
    """The same model running only some of its layers; every module is shared with `lm`, none copied.
    Each kept layer writes its K and V to its own index of the cache, so the draft uses a cache made by
    `lm.new_cache` (the skipped layers' slots stay empty)."""
    layers = layer_list(lm, draft_layers)
    target = lm.model
    config = dataclasses.replace(lm.config, n_layers=len(layers))
    with torch.device("meta"):  # shapes only; the modules are replaced by the target's
        draft = Transformer(config)
    draft.embed_tokens, draft.norm, draft.lm_head = target.embed_tokens, target.norm, target.lm_head
    draft.layers = nn.ModuleList(target.layers[i] for i in layers)
    draft.inv_freq = target.inv_freq
    return LanguageModel(draft.eval(), lm.tokenizer if lm.has_tokenizer else None, name=f"{lm.name} (layers {layers})")


@dataclass
class SpeculativeResult:
    token_ids: list[int]  # the generated tokens (equal to greedy decoding with the target)
    draft_layers: list[int]  # the layers the draft runs
    gamma: int  # tokens proposed per round
    proposed: int  # draft tokens proposed
    accepted: int  # of those, accepted by the target
    rejected: int  # rounds that ended at a mismatch (the proposals after it were never judged)
    target_calls: int  # target forward calls after the prefill
    seconds: float  # wall-clock, prefill included

    @property
    def acceptance_rate(self) -> float:
        return self.accepted / self.proposed if self.proposed else float("nan")

    @property
    def judged_acceptance(self) -> float:
        """α: accepted proposals / proposals the target judged (accepted ones + one mismatch per round)."""
        judged = self.accepted + self.rejected
        return self.accepted / judged if judged else float("nan")

    @property
    def tokens_per_target_call(self) -> float:
        return (len(self.token_ids) - 1) / self.target_calls if self.target_calls else float("nan")

    def to_dict(self) -> dict:
        return asdict(self) | {"acceptance_rate": self.acceptance_rate, "judged_acceptance": self.judged_acceptance,
                               "tokens_per_target_call": self.tokens_per_target_call}


@torch.no_grad()
def speculative_generate(lm, prompt_ids: list[int], max_tokens: int, draft_layers=8,
                         gamma: int = 4) -> SpeculativeResult:
    """Greedy decoding of `max_tokens` tokens (no stop rules) with a self-drafting model.
    draft_layers: an int k (the first k layers) or a list of layer indices."""
    if gamma < 1 or max_tokens < 1:
        raise ValueError(f"gamma and max_tokens must be ≥ 1, got {gamma} and {max_tokens}")
    draft = draft_model(lm, draft_layers)
    size = len(prompt_ids) + max_tokens + gamma + 1
    target_cache, draft_cache = lm.new_cache(max_len=size), lm.new_cache(max_len=size)
    start = time.perf_counter()
    out = [int(lm.prefill(prompt_ids, target_cache).argmax(-1))]  # the first token comes from the target
    draft.prefill(prompt_ids, draft_cache)
    proposed = accepted = rejected = calls = 0
    while len(out) < max_tokens:
        ids = prompt_ids + out
        # the draft catches up on what it has not read (1 or 2 tokens), then proposes gamma tokens
        logits = draft.prefill(ids[draft_cache.length:], draft_cache)  # [1, V]
        proposals = [int(logits.argmax(-1))]
        for _ in range(gamma - 1):
            proposals.append(int(draft.decode_step(proposals[-1], draft_cache).argmax(-1)))
        # the target reads [last token, p_1 … p_γ] in one call: γ + 1 next-token choices
        n_before = target_cache.length
        verify = torch.tensor([[out[-1]] + proposals], device=lm.device)  # [1, γ + 1]
        choices = lm.model(verify, target_cache)[0].argmax(-1).tolist()  # [γ + 1]
        calls += 1
        a = 0
        while a < gamma and proposals[a] == choices[a]:
            a += 1
        proposed, accepted, rejected = proposed + gamma, accepted + a, rejected + (a < gamma)
        out += proposals[:a] + [choices[a]]
        # keep the K and V of the last token and of the accepted proposals; forget the rest
        target_cache.truncate(n_before + 1 + a)
        draft_cache.truncate(min(draft_cache.length, n_before + 1 + a))
    return SpeculativeResult(out[:max_tokens], layer_list(lm, draft_layers), gamma, proposed, accepted, rejected, calls,
                             time.perf_counter() - start)


def expected_tokens_per_call(alpha: float, gamma: int) -> float:
    """Tokens per target call if each proposal is accepted with probability α, independently, once all
    before it were: 1 + α + α² + … + α^γ = (1 − α^(γ+1)) / (1 − α) (Leviathan et al. 2023)."""
    return sum(alpha**i for i in range(gamma + 1))


def acceptance_table(lm, prompt_ids: list[int], max_tokens: int = 32, drafts=(8, 16, 24), gammas=(2, 4)) -> list[dict]:
    """Acceptance rate and tokens per target call for each draft (an int k or a list of layers, as in
    `speculative_generate`) and γ, with the wall-clock time of plain greedy decoding for comparison."""
    start = time.perf_counter()
    greedy = lm.generate(prompt_ids, SamplingParams(temperature=0, max_tokens=max_tokens, ignore_eos=True))
    greedy_s = time.perf_counter() - start
    rows = []
    for draft in drafts:
        for gamma in gammas:
            result = speculative_generate(lm, prompt_ids, max_tokens, draft, gamma)
            rows.append(result.to_dict() | {"same_as_greedy": result.token_ids == greedy.token_ids,
                                            "greedy_seconds": greedy_s, "speedup": greedy_s / result.seconds})
    return rows
