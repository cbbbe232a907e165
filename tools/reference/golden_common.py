"""What make_golden.py and make_arch_golden.py share: the check failure exit, the top-k and top-2
gap summaries of a logits row, and greedy decoding by full forward passes (with a KV-cache decode to
cross-check it) through a Hugging Face causal LM on CPU. Format of what they produce:
tools/reference/README.md.
"""

from __future__ import annotations

import sys

import numpy as np
import torch


def fail(message: str) -> None:
    print(f"CHECK FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def topk_pairs(logits: np.ndarray, k: int) -> list[list]:
    """Top-k as [[id, logit], ...]: logit descending, ties broken by smaller id first."""
    order = np.argsort(-logits, kind="stable")[:k]
    return [[int(i), float(logits[i])] for i in order]


def top2_gap(logits: np.ndarray) -> float:
    order = np.argsort(-logits, kind="stable")[:2]
    return float(np.float32(logits[order[0]]) - np.float32(logits[order[1]]))


@torch.no_grad()
def full_logits(model, ids: list[int]) -> np.ndarray:
    """Logits of every position, as float32 (rounded once from the model's dtype)."""
    out = model(input_ids=torch.tensor([ids]), use_cache=False)
    return out.logits[0].to(torch.float32).numpy()


@torch.no_grad()
def greedy(model, ids: list[int], steps: int) -> tuple[list[int], list[np.ndarray]]:
    """Greedy decode by a full forward pass over the whole sequence at every step (no cache, no
    generation config, no EOS stop). Returns the ids and the logits each one was chosen from."""
    seq, picked, step_logits = list(ids), [], []
    for _ in range(steps):
        logits = full_logits(model, seq)[-1]
        token = int(np.argmax(logits))  # first index on ties
        picked.append(token)
        step_logits.append(logits)
        seq.append(token)
    return picked, step_logits


@torch.no_grad()
def greedy_kv_cache(model, ids: list[int], steps: int) -> tuple[list[int], list[np.ndarray]]:
    """The same greedy decode through HF's KV cache, only to cross-check `greedy`."""
    out = model(input_ids=torch.tensor([ids]), use_cache=True)
    picked, step_logits = [], []
    for _ in range(steps):
        logits = out.logits[0, -1].to(torch.float32).numpy()
        token = int(np.argmax(logits))
        picked.append(token)
        step_logits.append(logits)
        out = model(input_ids=torch.tensor([[token]]), cache=out.cache, use_cache=True)
    return picked, step_logits
