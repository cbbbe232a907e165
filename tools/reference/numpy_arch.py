"""An independent float64 numpy forward pass of the `qwen3` and `phi3` GGUF architectures, reading
the f32 GGUF that `novaserve convert` wrote (make_arch_golden.py runs it).

Why it exists: if these logits equal Hugging Face's, then the converter's output (tensor names,
layouts, the fused phi3 tensors, the `<arch>.*` keys, LongRoPE factors and attention factor) and
the formula weights are confirmed by a second implementation that shares no code with transformers
or with our C++ forward. It reads only GGUF tensors and keys, never config.json.

Formulas: RMSNorm (Zhang & Sennrich 2019); RoPE (Su et al. 2021) in NeoX order, rotating dims
(i, i + n_rot/2) of the first n_rot dims; Qwen3's per-head RMSNorm of q and k before RoPE (Qwen3
technical report, 2025); LongRoPE (Ding et al. 2024): inverse frequencies divided by the short
factors while the sequence is at most rope.scaling.original_context_length tokens long (the long
factors beyond), and cos/sin multiplied by rope.scaling.attn_factor; grouped-query attention
(Ainslie et al. 2023); SwiGLU FFN (Shazeer 2020), phi3's ffn_up holding [gate; up] rows.
The decoder loop (attention, residuals, LM head) is numpy_decoder.py's, shared with
numpy_llama.py; this module adds the keys, the fused and per-head-normed projections and RoPE.
"""

from __future__ import annotations

import numpy as np
from gguf import GGUFReader

from numpy_decoder import NumpyDecoder


class NumpyArch(NumpyDecoder):
    """Every tensor of a qwen3 or phi3 GGUF (F32 only), as float64, and the keys the forward needs."""

    def __init__(self, path: str):
        reader = GGUFReader(path)
        fields = reader.fields

        def key(name: str, default=None):
            full = f"{self.arch}.{name}"
            if full not in fields:
                if default is None:
                    raise KeyError(f"{path}: no key {full}")
                return default
            return fields[full].contents()

        self.arch = fields["general.architecture"].contents()
        if self.arch not in ("qwen3", "phi3"):
            raise ValueError(f"{path}: architecture {self.arch} is not qwen3 or phi3")
        self.n_layer = int(key("block_count"))
        self.n_head = int(key("attention.head_count"))
        self.n_head_kv = int(key("attention.head_count_kv"))
        self.eps = float(key("attention.layer_norm_rms_epsilon"))
        self.rope_base = float(key("rope.freq_base"))
        self.n_rot = int(key("rope.dimension_count"))
        self.n_embd = int(key("embedding_length"))
        self.n_ff = int(key("feed_forward_length"))
        self.head_dim = int(key("attention.key_length", self.n_embd // self.n_head))
        self.attn_factor = float(key("rope.scaling.attn_factor", 1.0))
        self.n_ctx_orig = int(key("rope.scaling.original_context_length", 0))
        self.w = {}
        for t in reader.tensors:
            if t.tensor_type.name != "F32":
                raise ValueError(f"{path}: tensor {t.name} is {t.tensor_type.name}, not F32")
            shape = [int(d) for d in reversed(t.shape)]  # numpy order: (ne[1], ne[0])
            self.w[t.name] = np.asarray(t.data, dtype=np.float32).astype(np.float64).reshape(shape)

    def _rope(self, x: np.ndarray) -> np.ndarray:
        """x: [T, heads, head_dim]; rotates (i, i + n_rot/2), i < n_rot/2, by pos * inv_freq[i]."""
        t_len = x.shape[0]
        half = self.n_rot // 2
        inv_freq = self.rope_base ** (-np.arange(0, self.n_rot, 2, dtype=np.float64) / self.n_rot)
        scale = 1.0
        if "rope_factors_short.weight" in self.w:
            long = self.n_ctx_orig > 0 and t_len > self.n_ctx_orig
            factors = self.w["rope_factors_long.weight" if long else "rope_factors_short.weight"]
            inv_freq = inv_freq / factors
            scale = self.attn_factor
        angle = np.arange(t_len, dtype=np.float64)[:, None] * inv_freq[None, :]  # [T, half]
        cos = (np.cos(angle) * scale)[:, None, :]
        sin = (np.sin(angle) * scale)[:, None, :]
        out = x.copy()
        a, b = x[..., :half], x[..., half : self.n_rot]
        out[..., :half] = a * cos - b * sin
        out[..., half : self.n_rot] = b * cos + a * sin
        return out

    def _qkv(self, p: str, h: np.ndarray):
        t_len, hd = h.shape[0], self.head_dim
        q_dim, kv_dim = self.n_head * hd, self.n_head_kv * hd
        if self.arch == "phi3":
            qkv = h @ self.w[p + "attn_qkv.weight"].T
            q, k, v = qkv[:, :q_dim], qkv[:, q_dim : q_dim + kv_dim], qkv[:, q_dim + kv_dim :]
        else:
            q = h @ self.w[p + "attn_q.weight"].T
            k = h @ self.w[p + "attn_k.weight"].T
            v = h @ self.w[p + "attn_v.weight"].T
        q = q.reshape(t_len, self.n_head, hd)
        k = k.reshape(t_len, self.n_head_kv, hd)
        v = v.reshape(t_len, self.n_head_kv, hd)
        if self.arch == "qwen3":
            q = self._rms_norm(q, self.w[p + "attn_q_norm.weight"])
            k = self._rms_norm(k, self.w[p + "attn_k_norm.weight"])
        return q, k, v

    def _ffn(self, p: str, h: np.ndarray) -> np.ndarray:
        if self.arch == "phi3":
            gate_up = h @ self.w[p + "ffn_up.weight"].T
            gate, up = gate_up[:, : self.n_ff], gate_up[:, self.n_ff :]
        else:
            gate = h @ self.w[p + "ffn_gate.weight"].T
            up = h @ self.w[p + "ffn_up.weight"].T
        return (gate / (1.0 + np.exp(-gate)) * up) @ self.w[p + "ffn_down.weight"].T
