"""The float64 numpy decoder loop that numpy_llama.py and numpy_arch.py share: token embedding,
per layer RMSNorm -> attention -> residual -> RMSNorm -> FFN -> residual, final RMSNorm and the LM
head (tied to the token embedding when the GGUF has no output.weight).

Each subclass loads its GGUF and supplies what differs between architectures: `_qkv` (the q, k, v
projections, [T, heads, head_dim] each, with any per-head norm), `_rope` (its RoPE convention) and
`_ffn` (the SwiGLU feed-forward of a normed input). Attention is causal grouped-query attention
(Ainslie et al. 2023) with a float64 softmax; RMSNorm as Zhang & Sennrich 2019.
"""

from __future__ import annotations

import numpy as np


class NumpyDecoder:
    """Subclasses set w (GGUF tensor name -> float64 array, numpy order (ne[1], ne[0])), n_layer,
    n_head, n_head_kv, head_dim and eps, and implement _qkv, _rope and _ffn."""

    w: dict[str, np.ndarray]
    n_layer: int
    n_head: int
    n_head_kv: int
    head_dim: int
    eps: float

    def _qkv(self, p: str, h: np.ndarray):
        raise NotImplementedError

    def _rope(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _ffn(self, p: str, h: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _rms_norm(self, x: np.ndarray, weight: np.ndarray) -> np.ndarray:
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps) * weight

    def logits(self, ids: list[int]) -> np.ndarray:
        """Causal forward over `ids`; returns float64 logits [T, n_vocab]."""
        w, hd = self.w, self.head_dim
        t_len = len(ids)
        x = w["token_embd.weight"][np.asarray(ids)]
        mask = np.triu(np.full((t_len, t_len), -np.inf), k=1)
        group = self.n_head // self.n_head_kv
        for layer in range(self.n_layer):
            p = f"blk.{layer}."
            h = self._rms_norm(x, w[p + "attn_norm.weight"])
            q, k, v = self._qkv(p, h)
            q, k = self._rope(q), self._rope(k)
            heads = []
            for head in range(self.n_head):
                kv = head // group
                scores = q[:, head, :] @ k[:, kv, :].T / np.sqrt(hd) + mask
                scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
                scores /= scores.sum(axis=-1, keepdims=True)
                heads.append(scores @ v[:, kv, :])
            x = x + np.concatenate(heads, axis=-1) @ w[p + "attn_output.weight"].T
            x = x + self._ffn(p, self._rms_norm(x, w[p + "ffn_norm.weight"]))
        h = self._rms_norm(x, w["output_norm.weight"])
        head = w.get("output.weight", w["token_embd.weight"])  # tied when absent
        return h @ head.T
