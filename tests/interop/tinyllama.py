"""A tiny llama-architecture GGUF model made here, deterministic, for real inference servers.

Random weights (seeded) over a word-level SentencePiece-style vocabulary: the model talks
nonsense, fast, on CPU, and always the same nonsense for the same prompt at temperature 0.
That is all an interoperability test needs from it: real tokenisation, real forward passes,
real sampling, real stop reasons (``length`` at ``max_tokens``, ``stop`` at end-of-sequence).
A few hundred KB; written with the ``gguf`` package (the llama.cpp project's own writer).
"""

from __future__ import annotations

from pathlib import Path

# Words the model says; each is one token, "▁"-prefixed like SentencePiece's word starts.
_TEXT = ("the quick brown fox jumps over lazy dog and a cat sat on mat while birds sing in trees "
         "river flows to sea under bright sun moon stars shine at night wind blows through tall "
         "grass rain falls soft upon hills children play games people talk about weather food "
         "tastes good bread milk honey apple orange green blue red yellow small big old new hello "
         "world hi there how are you fine thanks once upon time story tells")
WORDS = tuple(dict.fromkeys(_TEXT.split()))
N_EMBD = 32
N_HEAD = 4
N_LAYER = 2
N_FF = 64
N_CTX = 8192
CHAT_TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|>{% endif %}")


def vocabulary() -> tuple[list[str], list[float], list[int]]:
    """(tokens, scores, token types): <unk> <s> </s>, the 256 byte fallbacks, then the words."""
    import gguf

    tokens = ["<unk>", "<s>", "</s>"]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    tokens += [f"<0x{b:02X}>" for b in range(256)]
    types += [gguf.TokenType.BYTE] * 256
    pieces = ["▁", *(f"▁{w}" for w in WORDS), *"abcdefghijklmnopqrstuvwxyz.,!?'|<>"]
    tokens += pieces
    types += [gguf.TokenType.NORMAL] * len(pieces)
    scores = [0.0] * 259 + [-float(i) for i in range(len(pieces))]
    return tokens, scores, [int(t) for t in types]


def write_tiny_llama(path: Path, seed: int = 1234) -> Path:
    """Write the model to ``path`` (same bytes for the same seed) and return it."""
    import gguf
    import numpy as np

    tokens, scores, types = vocabulary()
    n_vocab = len(tokens)
    rng = np.random.default_rng(seed)

    def weight(*shape: int, scale: float = 0.3) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("llmclient-tiny-llama")
    w.add_context_length(N_CTX)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(N_LAYER)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD)
    w.add_rope_dimension_count(N_EMBD // N_HEAD)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_chat_template(CHAT_TEMPLATE)

    w.add_tensor("token_embd.weight", weight(n_vocab, N_EMBD, scale=1.0))
    for i in range(N_LAYER):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            w.add_tensor(f"blk.{i}.{name}.weight", weight(N_EMBD, N_EMBD))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        w.add_tensor(f"blk.{i}.ffn_gate.weight", weight(N_FF, N_EMBD))
        w.add_tensor(f"blk.{i}.ffn_up.weight", weight(N_FF, N_EMBD))
        w.add_tensor(f"blk.{i}.ffn_down.weight", weight(N_EMBD, N_FF))
    w.add_tensor("output_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    out = weight(n_vocab, N_EMBD)
    # Only whole words are ever likely: the byte fallbacks and control tokens (end of sequence
    # included) get no logit of their own, so an answer runs to max_tokens ("length").
    out[:259] = 0.0
    w.add_tensor("output.weight", out)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
