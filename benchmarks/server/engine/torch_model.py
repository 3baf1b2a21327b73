"""A Llama-architecture decoder in plain torch, with a slot-based KV cache we control.

Why not ``transformers``' own model classes: continuous batching needs every running sequence
to decode in one forward pass while each sits at its own length, and prefix reuse needs KV
blocks copied between sequences. Both are natural with a preallocated cache indexed by slot,
and awkward through the library's cache objects (whose API changes between major versions).
The parameter names are those of Hugging Face's ``LlamaForCausalLM``, so a local checkpoint
(``config.json`` + ``*.safetensors``) loads with ``load_state_dict``; configurations use the
same field names as ``transformers.LlamaConfig``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class ModelConfig:
    vocab_size: int = 32000
    hidden_size: int = 2048
    intermediate_size: int = 8192
    num_hidden_layers: int = 16
    num_attention_heads: int = 32
    num_key_value_heads: int = 8
    max_position_embeddings: int = 8192
    rms_norm_eps: float = 1e-5
    rope_theta: float = 500000.0
    tie_word_embeddings: bool = True

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelConfig:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def parameter_count(self) -> int:
        h, i, v, n = self.hidden_size, self.intermediate_size, self.vocab_size, self.num_hidden_layers
        kv = self.num_key_value_heads * self.head_dim
        per_layer = h * h * 2 + h * kv * 2 + 3 * h * i + 2 * h
        return v * h * (1 if self.tie_word_embeddings else 2) + n * per_layer + h


# Named configurations. "1b" has the shape of Llama 3.2 1B (hidden 2048, 16 layers, 32 heads,
# 8 KV heads, MLP 8192; huggingface.co/meta-llama/Llama-3.2-1B config.json, read 2026-12) with
# the project tokenizer's 32k vocabulary instead of 128k. "tiny" is for CPU tests.
CONFIGS: dict[str, ModelConfig] = {
    "tiny": ModelConfig(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
    ),
    "small": ModelConfig(
        hidden_size=512, intermediate_size=1536, num_hidden_layers=8,
        num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=4096,
    ),
    "1b": ModelConfig(),
}


def load_config(spec: str) -> tuple[ModelConfig, Path | None]:
    """A named configuration, or a checkpoint directory holding ``config.json``."""
    if spec in CONFIGS:
        return CONFIGS[spec], None
    path = Path(spec)
    if (path / "config.json").is_file():
        return ModelConfig.from_dict(json.loads((path / "config.json").read_text())), path
    raise ValueError(
        f"unknown model config {spec!r}: use one of {sorted(CONFIGS)} or a checkpoint directory "
        "with config.json"
    )


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


def rope_tables(cfg: ModelConfig, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    inv = 1.0 / (cfg.rope_theta ** (torch.arange(0, cfg.head_dim, 2, device=device).float() / cfg.head_dim))
    pos = torch.arange(cfg.max_position_embeddings, device=device).float()
    freqs = torch.outer(pos, inv)
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos(), emb.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x: [B, H, T, D]; cos/sin: [B, 1, T, D] (already gathered at each token's position)."""
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos.to(x.dtype) + rotated * sin.to(x.dtype)


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        h, d = cfg.hidden_size, cfg.head_dim
        self.n_heads, self.n_kv, self.head_dim = cfg.num_attention_heads, cfg.num_key_value_heads, d
        self.q_proj = nn.Linear(h, self.n_heads * d, bias=False)
        self.k_proj = nn.Linear(h, self.n_kv * d, bias=False)
        self.v_proj = nn.Linear(h, self.n_kv * d, bias=False)
        self.o_proj = nn.Linear(self.n_heads * d, h, bias=False)


class MLP(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.self_attn = Attention(cfg)
        self.mlp = MLP(cfg)
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)


class Body(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList(Layer(cfg) for _ in range(cfg.num_hidden_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)


class Decoder(nn.Module):
    """``model.*`` and ``lm_head`` as in Hugging Face's LlamaForCausalLM."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.model = Body(cfg)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        if cfg.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight


class KVCache:
    """Preallocated keys and values: [layers][slots, kv_heads, max_len, head_dim]."""

    def __init__(self, cfg: ModelConfig, slots: int, max_len: int, device: torch.device, dtype: torch.dtype) -> None:
        shape = (slots, cfg.num_key_value_heads, max_len, cfg.head_dim)
        self.k = [torch.zeros(shape, device=device, dtype=dtype) for _ in range(cfg.num_hidden_layers)]
        self.v = [torch.zeros(shape, device=device, dtype=dtype) for _ in range(cfg.num_hidden_layers)]
        self.max_len = max_len

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (*self.k, *self.v))

    def copy_prefix(self, src: list[tuple[torch.Tensor, torch.Tensor]], slot: int, n: int) -> int:
        """Put the first ``n`` positions of saved per-layer (k, v) into ``slot``; returns n."""
        for layer, (k, v) in enumerate(src):
            self.k[layer][slot, :, :n] = k[:, :n]
            self.v[layer][slot, :, :n] = v[:, :n]
        return n

    def snapshot(self, slot: int, length: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        return [(self.k[i][slot, :, :length].clone(), self.v[i][slot, :, :length].clone()) for i in range(len(self.k))]


@torch.inference_mode()
def forward(
    net: Decoder,
    cache: KVCache,
    rope: tuple[torch.Tensor, torch.Tensor],
    slots: list[int],
    tokens: torch.Tensor,
    starts: list[int],
) -> torch.Tensor:
    """Run ``tokens`` ([B, T]) for sequences in ``slots`` whose caches hold ``starts[b]`` tokens.

    Writes the new keys/values into the cache and returns the logits of each row's last token
    ([B, vocab]). With T == 1 this is one decode step for a whole batch at different lengths;
    with B == 1 it is (chunked) prefill. Row b attends to cache positions < starts[b] + t + 1.
    """
    cfg = net.cfg
    bsz, t = tokens.shape
    device = tokens.device
    start_t = torch.tensor(starts, device=device)
    positions = start_t[:, None] + torch.arange(t, device=device)[None, :]  # [B, T]
    cos = rope[0][positions][:, None]  # [B, 1, T, D]
    sin = rope[1][positions][:, None]
    total = max(starts) + t
    keys = torch.arange(total, device=device)
    # mask[b, 0, i, j]: key j visible to query i of row b
    mask = keys[None, None, None, :] <= positions[:, None, :, None]
    slot_t = torch.tensor(slots, device=device)
    rows = slot_t[:, None].expand(bsz, t)
    x = net.model.embed_tokens(tokens)
    groups = cfg.num_attention_heads // cfg.num_key_value_heads
    for i, layer in enumerate(net.model.layers):
        assert isinstance(layer, Layer)
        attn = layer.self_attn
        h = layer.input_layernorm(x)
        q = attn.q_proj(h).view(bsz, t, attn.n_heads, attn.head_dim).transpose(1, 2)
        k = attn.k_proj(h).view(bsz, t, attn.n_kv, attn.head_dim).transpose(1, 2)
        v = attn.v_proj(h).view(bsz, t, attn.n_kv, attn.head_dim).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        # One scatter per layer for the whole batch ([B, T] positions of [B] slots): a copy per
        # sequence was B kernel launches per layer, which is most of a decode step's time
        # where launches are slow.
        cache.k[i][rows, :, positions] = k.transpose(1, 2)
        cache.v[i][rows, :, positions] = v.transpose(1, 2)
        kk = cache.k[i][slot_t, :, :total]
        vv = cache.v[i][slot_t, :, :total]
        if groups > 1:
            kk = kk.repeat_interleave(groups, dim=1)
            vv = vv.repeat_interleave(groups, dim=1)
        out = F.scaled_dot_product_attention(q, kk, vv, attn_mask=mask)
        x = x + attn.o_proj(out.transpose(1, 2).reshape(bsz, t, -1))
        x = x + layer.mlp(layer.post_attention_layernorm(x))
    x = net.model.norm(x[:, -1])
    return net.lm_head(x).float()


def build(cfg: ModelConfig, checkpoint: Path | None, device: torch.device, dtype: torch.dtype, seed: int = 0) -> Decoder:
    """Random weights of the configured shape (seeded), or a checkpoint's when given."""
    torch.manual_seed(seed)
    with torch.device(device):
        net = Decoder(cfg)
    std = 1.0 / math.sqrt(cfg.hidden_size)
    with torch.no_grad():
        for p in net.parameters():
            if p.dim() > 1:
                p.normal_(0.0, std)
    if checkpoint is not None:
        from safetensors.torch import load_file  # shipped with transformers

        state: dict[str, torch.Tensor] = {}
        for file in sorted(checkpoint.glob("*.safetensors")):
            state.update(load_file(str(file), device=str(device)))
        if not state:
            raise ValueError(f"no *.safetensors weights in {checkpoint}")
        missing, _unexpected = net.load_state_dict(state, strict=False)
        if [m for m in missing if m != "lm_head.weight"]:
            raise ValueError(f"checkpoint {checkpoint} lacks weights: {missing[:5]}")
    return net.to(dtype).eval()
