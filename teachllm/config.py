"""ModelConfig: the numbers that fix a Llama-family decoder's shape.

One dataclass for every supported checkpoint (SmolLM2, TinyLlama, Llama 2, Llama 3.x, Mistral,
Qwen2/2.5, Qwen3). The differences between these families are a handful of switches:
Qwen2 adds a bias to the q/k/v projections, Qwen3 normalises q and k per head, Llama 3 stretches
the RoPE frequencies, Mistral limits attention to a sliding window. Everything else is shared.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .units import is_id

SUPPORTED_MODEL_TYPES = ("llama", "mistral", "qwen2", "qwen3")
SUPPORTED_ROPE_TYPES = ("default", "llama3")


@dataclass(frozen=True)
class ModelConfig:
    vocab_size: int  # V: number of token ids the embedding and the LM head know
    hidden_size: int  # h: width of the residual stream
    intermediate_size: int  # f: width of the SwiGLU MLP
    n_layers: int  # L: number of decoder layers
    n_heads: int  # n_h: query heads per layer
    n_kv_heads: int  # n_kv: key/value heads per layer (n_kv < n_h is grouped-query attention)
    head_dim: int  # d: width of one head (usually h / n_h; Qwen3 sets it separately)
    max_position_embeddings: int  # context window the model was trained for
    rope_theta: float = 10000.0  # base of the RoPE frequencies
    # Llama-3 RoPE frequency scaling: factor, low_freq_factor, high_freq_factor, original_max_position_embeddings
    rope_scaling: dict | None = None
    rms_norm_eps: float = 1e-6  # epsilon inside every RMSNorm
    tie_word_embeddings: bool = False  # LM head shares its matrix with the token embedding
    qkv_bias: bool = False  # q/k/v projections have a bias (Qwen2)
    o_bias: bool = False  # output projection has a bias (Llama with attention_bias)
    mlp_bias: bool = False  # MLP projections have a bias (rare)
    qk_norm: bool = False  # RMSNorm on each query and key head before RoPE (Qwen3)
    sliding_window: int | None = None  # each token attends to at most this many tokens (Mistral)
    model_type: str = "llama"  # which checkpoint family this came from
    bos_token_id: int | None = None  # id of the beginning-of-sequence token, if any
    eos_token_ids: tuple[int, ...] = field(default_factory=tuple)  # ids that end generation

    def __post_init__(self):
        for name in ("vocab_size", "hidden_size", "intermediate_size", "n_layers", "n_heads",
                     "n_kv_heads", "head_dim", "max_position_embeddings"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"ModelConfig.{name} must be a positive integer, got {value!r}")
        bad = next((i for i in self.eos_token_ids if not (is_id(i) and 0 <= i < self.vocab_size)), None)
        if bad is not None:
            raise ValueError(f"ModelConfig.eos_token_ids={self.eos_token_ids!r} holds {bad!r}, outside the vocabulary: "
                             f"token ids must be in 0 .. {self.vocab_size - 1}")
        if self.n_heads % self.n_kv_heads != 0:
            raise ValueError(
                f"ModelConfig: n_heads ({self.n_heads}) must be a multiple of n_kv_heads ({self.n_kv_heads}), "
                "so that each key/value head serves the same number of query heads")
        if self.rope_theta <= 0:
            raise ValueError(f"ModelConfig.rope_theta must be > 0, got {self.rope_theta}")
        if self.rms_norm_eps <= 0:
            raise ValueError(f"ModelConfig.rms_norm_eps must be > 0, got {self.rms_norm_eps}")
        if self.sliding_window is not None and self.sliding_window < 1:
            raise ValueError(f"ModelConfig.sliding_window must be None or >= 1, got {self.sliding_window}")
        if self.model_type not in SUPPORTED_MODEL_TYPES:
            raise ValueError(f"ModelConfig.model_type {self.model_type!r} is not supported; "
                             f"supported: {', '.join(SUPPORTED_MODEL_TYPES)}")
        if self.rope_scaling is not None:
            missing = {"factor", "low_freq_factor", "high_freq_factor",
                       "original_max_position_embeddings"} - set(self.rope_scaling)
            if missing:
                raise ValueError(f"ModelConfig.rope_scaling (Llama-3 style) is missing {sorted(missing)}")

    @property
    def n_groups(self) -> int:
        """Query heads that share one key/value head (1 = plain multi-head attention)."""
        return self.n_heads // self.n_kv_heads

    @property
    def n_params(self) -> int:
        """Number of parameters, counting a tied embedding/LM-head matrix once."""
        h, f, d = self.hidden_size, self.intermediate_size, self.head_dim
        q_out, kv_out = self.n_heads * d, self.n_kv_heads * d
        attn = h * q_out + 2 * h * kv_out + q_out * h
        attn += (q_out + 2 * kv_out) * self.qkv_bias + h * self.o_bias + 2 * d * self.qk_norm
        mlp = 3 * h * f + (2 * f + h) * self.mlp_bias
        per_layer = attn + mlp + 2 * h  # + the two RMSNorm weight vectors
        embed = self.vocab_size * h
        head = 0 if self.tie_word_embeddings else self.vocab_size * h
        return self.n_layers * per_layer + embed + head + h  # + the final norm

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_hf(cls, hf, eos_token_ids=None) -> ModelConfig:
        """Build from a transformers config object (LlamaConfig, MistralConfig, Qwen2Config, Qwen3Config)."""
        model_type = hf.model_type
        if model_type not in SUPPORTED_MODEL_TYPES:
            raise UnsupportedModelError(model_type)
        rope = dict(getattr(hf, "rope_parameters", None) or {})
        rope_type = rope.get("rope_type", rope.get("type", "default"))
        if rope_type not in SUPPORTED_ROPE_TYPES:
            raise UnsupportedModelError(f"{model_type} with rope_type={rope_type!r}",
                                        detail=f"supported RoPE types: {', '.join(SUPPORTED_ROPE_TYPES)}")
        rope_theta = rope.get("rope_theta", getattr(hf, "rope_theta", 10000.0))
        scaling = None
        if rope_type == "llama3":
            scaling = {key: rope[key] for key in ("factor", "low_freq_factor", "high_freq_factor",
                                                  "original_max_position_embeddings")}
        sliding_window = getattr(hf, "sliding_window", None)
        layer_types = getattr(hf, "layer_types", None) or []
        if model_type in ("qwen2", "qwen3") and sliding_window is not None:
            if any(t != "sliding_attention" for t in layer_types):
                raise UnsupportedModelError(
                    f"{model_type} with use_sliding_window on some layers only",
                    detail="teachllm applies one attention window to every layer")
        # Llama and Qwen3 put a bias on all four attention projections when attention_bias is set;
        # Qwen2 always has one on q/k/v and never on o; Mistral never has one.
        attention_bias = model_type in ("llama", "qwen3") and bool(getattr(hf, "attention_bias", False))
        head_dim = getattr(hf, "head_dim", None) or hf.hidden_size // hf.num_attention_heads
        if eos_token_ids is None:
            eos_token_ids = hf.eos_token_id
        if isinstance(eos_token_ids, int):
            eos_token_ids = [eos_token_ids]
        return cls(
            vocab_size=hf.vocab_size,
            hidden_size=hf.hidden_size,
            intermediate_size=hf.intermediate_size,
            n_layers=hf.num_hidden_layers,
            n_heads=hf.num_attention_heads,
            n_kv_heads=getattr(hf, "num_key_value_heads", None) or hf.num_attention_heads,
            head_dim=head_dim,
            max_position_embeddings=hf.max_position_embeddings,
            rope_theta=float(rope_theta),
            rope_scaling=scaling,
            rms_norm_eps=float(hf.rms_norm_eps),
            tie_word_embeddings=bool(getattr(hf, "tie_word_embeddings", False)),
            qkv_bias=model_type == "qwen2" or attention_bias,
            o_bias=attention_bias,
            mlp_bias=model_type == "llama" and bool(getattr(hf, "mlp_bias", False)),
            qk_norm=model_type == "qwen3",
            sliding_window=sliding_window,
            model_type=model_type,
            bos_token_id=getattr(hf, "bos_token_id", None),
            eos_token_ids=tuple(int(i) for i in (eos_token_ids or [])),
        )

    @classmethod
    def from_pretrained(cls, folder: str | Path) -> ModelConfig:
        """Read `config.json` (and `generation_config.json` for the end-of-sequence ids) from a checkpoint folder.
        What a file says is checked before transformers reads it: an error names the file, the key and the fix."""
        folder = Path(folder)
        config_file = folder / "config.json"
        if not config_file.is_file():
            raise FileNotFoundError(f"{folder} has no config.json; a checkpoint folder needs config.json "
                                    "and *.safetensors weights")
        raw = read_json_object(config_file)
        model_type = raw.get("model_type")
        if model_type not in SUPPORTED_MODEL_TYPES:
            raise UnsupportedModelError(model_type, detail=f"architectures: {raw.get('architectures')}")
        _check_sizes(raw, config_file)
        # here, not at the top: transformers is slow to import. AutoConfig fills in each family's defaults
        from transformers import AutoConfig

        hf = AutoConfig.from_pretrained(folder, trust_remote_code=False)  # a checkpoint's own code never runs
        eos, eos_file = None, config_file
        generation_file = folder / "generation_config.json"
        if generation_file.is_file():
            eos = read_json_object(generation_file).get("eos_token_id")
        if eos is None:
            eos = hf.eos_token_id
        else:
            eos_file = generation_file
        _check_eos(eos, hf.vocab_size, eos_file)
        try:
            return cls.from_hf(hf, eos_token_ids=eos)
        except UnsupportedModelError:
            raise
        except ValueError as error:
            raise ValueError(f"{config_file} describes a decoder teachllm cannot build: {error}; correct "
                             "config.json, or use the checkpoint's own") from None


# ---- a checkpoint's JSON files, checked before transformers reads them ------------------------------------
SIZES = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
         "num_key_value_heads", "head_dim", "max_position_embeddings")  # config.json's names; null = the default


def read_json_object(path: Path) -> dict:
    """A checkpoint's config.json or generation_config.json as a dict, or ValueError naming the file and the fix."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise ValueError(f"{path} is not valid JSON ({error}); restore the checkpoint's {path.name}") from None
    if not isinstance(raw, dict):
        what = "an array" if isinstance(raw, list) else f"{raw!r:.40}"
        raise ValueError(f"{path} holds {what}, not a JSON object of settings ({{\"key\": value, ...}}); restore "
                         f"the checkpoint's {path.name}")
    return raw


def _check_sizes(raw: dict, path: Path) -> None:
    """config.json's sizes are positive integers (0 attention heads would end in a ZeroDivisionError)."""
    for key in SIZES:
        value = raw.get(key)
        if value is not None and not (is_id(value) and value >= 1):
            raise ValueError(f"{path}: {key}={value!r} must be a positive integer (≥ 1); correct {key} in "
                             f"{path.name}, or use the checkpoint's own {path.name}")


def _check_eos(eos, vocab_size: int, path: Path) -> None:
    """eos_token_id (an id or a list of ids) within the vocabulary: one outside it would fail during generation."""
    ids = eos if isinstance(eos, list) else [] if eos is None else [eos]
    bad = next((i for i in ids if not (is_id(i) and 0 <= i < vocab_size)), None)
    if bad is not None:
        raise ValueError(f"{path}: eos_token_id={eos!r} holds {bad!r}, which is not a token id of this model "
                         f"(0 .. {vocab_size - 1}); correct eos_token_id in {path.name}")


class UnsupportedModelError(ValueError):
    """A checkpoint whose architecture teachllm's decoder does not implement."""

    def __init__(self, what, detail: str = ""):
        message = (f"unsupported model: {what!r}. teachllm implements the Llama family: model_type "
                   f"{', '.join(SUPPORTED_MODEL_TYPES)} (SmolLM2, TinyLlama, Llama 2/3.x, Mistral, Qwen2/2.5, Qwen3)")
        if detail:
            message += f"; {detail}"
        super().__init__(message)
