"""A second, independent Llama forward pass in numpy (float64), straight from the GGUF tensors.

Why it exists: the golden data comes from Hugging Face transformers, which re-permutes the GGUF's
q/k weights and applies RoPE in its own "rotate half" convention. This module instead keeps the
tensors exactly as stored in the GGUF and applies RoPE to adjacent pairs (2i, 2i+1) -- the layout
llama.cpp's converter writes for the `llama` architecture and the one our C++ engine reads. If both
paths agree on the logits, the HF loader's handling of the permutation, RoPE base, norm epsilon and
tied embeddings is confirmed independently.

Formulas: RMSNorm (Zhang & Sennrich 2019), RoPE (Su et al. 2021, RoFormer, eq. 34), grouped-query
attention (Ainslie et al. 2023), SwiGLU FFN (Shazeer 2020). Dequantization uses the `gguf` Python
package (gguf.quants.dequantize), not transformers. The decoder loop (attention, residuals, LM
head) is numpy_decoder.py's, shared with numpy_arch.py; this module adds the GGUF loading, the
q/k/v and FFN projections and the adjacent-pair RoPE.
"""

from __future__ import annotations

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize

from numpy_decoder import NumpyDecoder


class NumpyLlama(NumpyDecoder):
    """Loads every tensor of a `llama`-architecture GGUF, dequantized to float64."""

    def __init__(self, path: str):
        reader = GGUFReader(path)
        fields = reader.fields
        self.n_layer = int(fields["llama.block_count"].contents())
        self.n_head = int(fields["llama.attention.head_count"].contents())
        self.n_head_kv = int(fields["llama.attention.head_count_kv"].contents())
        self.eps = float(fields["llama.attention.layer_norm_rms_epsilon"].contents())
        self.rope_base = float(fields["llama.rope.freq_base"].contents())
        # numpy shape of a GGUF tensor is (ne[1], ne[0]) = (out_features, in_features).
        self.w = {
            t.name: dequantize(t.data, t.tensor_type).astype(np.float64).reshape(
                [int(d) for d in reversed(t.shape)]
            )
            for t in reader.tensors
        }
        self.head_dim = self.w["token_embd.weight"].shape[1] // self.n_head

    def _rope(self, x: np.ndarray) -> np.ndarray:
        """x: [T, heads, head_dim]; rotates pairs (2i, 2i+1) by pos * base^(-2i/head_dim)."""
        t_len, _, dim = x.shape
        inv_freq = self.rope_base ** (-np.arange(0, dim, 2, dtype=np.float64) / dim)
        angle = np.arange(t_len, dtype=np.float64)[:, None] * inv_freq[None, :]  # [T, dim/2]
        cos, sin = np.cos(angle)[:, None, :], np.sin(angle)[:, None, :]
        even, odd = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = even * cos - odd * sin
        out[..., 1::2] = even * sin + odd * cos
        return out

    def _qkv(self, p: str, h: np.ndarray):
        t_len, hd = h.shape[0], self.head_dim
        q = (h @ self.w[p + "attn_q.weight"].T).reshape(t_len, self.n_head, hd)
        k = (h @ self.w[p + "attn_k.weight"].T).reshape(t_len, self.n_head_kv, hd)
        v = (h @ self.w[p + "attn_v.weight"].T).reshape(t_len, self.n_head_kv, hd)
        return q, k, v

    def _ffn(self, p: str, h: np.ndarray) -> np.ndarray:
        gate = h @ self.w[p + "ffn_gate.weight"].T
        up = h @ self.w[p + "ffn_up.weight"].T
        return (gate / (1.0 + np.exp(-gate)) * up) @ self.w[p + "ffn_down.weight"].T
