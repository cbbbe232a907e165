#!/usr/bin/env python3
"""Writes the golden reference data under tests/golden/data/ (format: tools/reference/README.md).

The reference is Hugging Face transformers loading the GGUF with `gguf_file=`, which dequantizes
every weight to float32 (nn.Linear), run on CPU with one thread. Before anything is written the
script checks that the HF config matches the GGUF metadata, that the weights are plain float32, that
an independent numpy float64 forward (numpy_llama.py, GGUF tensor layout, adjacent-pair RoPE) gives
the same logits, that a KV-cache decode picks the same greedy tokens as full forward passes, and that
the chat prompt's answer mentions Paris. Any failed check exits non-zero without writing.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import platform
import shutil
import tempfile
from pathlib import Path

import gguf
import numpy as np
import tokenizers
import torch
import transformers
from tokenizers import pre_tokenizers
from transformers import AutoModelForCausalLM, AutoTokenizer

from golden_common import fail, full_logits, greedy, greedy_kv_cache, top2_gap, topk_pairs
from numpy_llama import NumpyLlama

FORMAT_VERSION = 1
REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_MODEL = REPO_ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_OUT = REPO_ROOT / "tests" / "golden" / "data"
CHAT_QUESTION = "What is the capital of France?"

# (name, text). Names become file names. The chat prompts are filled in from the tokenizer below.
PROMPTS = [
    ("english", "The capital of France is"),
    ("chinese", "北京是中国的首都，上海是中国最大的城市。杭州"),
    ("japanese", "東京は日本の首都です。こんにちは、私の名前はスミスです。カタカナとひらがな"),
    ("emoji", "I love 😀🎉 and my family 👨\u200d👩\u200d👧\u200d👦 waves 🏳️\u200d🌈 and 🇫🇷 plus 👍🏽!"),
    (
        "code",
        "def fibonacci(n):\n    if n < 2:\n        return n\n"
        "    return fibonacci(n - 1) + fibonacci(n - 2)\n\n\nprint(fibonacci(10))  # prints",
    ),
    ("numbers", "Mix 2 ½ cups of flour with 1¼ cups of milk, bake at 180°C for 25 minutes; x² = 3.14159"),
    ("chat", f"<|im_start|>user\n{CHAT_QUESTION}<|im_end|>\n<|im_start|>assistant\n"),
]


def gguf_metadata(path: Path) -> dict:
    reader = gguf.GGUFReader(str(path))
    keep = (
        "general.architecture", "llama.block_count", "llama.embedding_length",
        "llama.feed_forward_length", "llama.attention.head_count", "llama.attention.head_count_kv",
        "llama.rope.freq_base", "llama.attention.layer_norm_rms_epsilon", "llama.context_length",
        "llama.vocab_size", "llama.rope.dimension_count", "tokenizer.ggml.model",
        "tokenizer.ggml.pre", "tokenizer.ggml.add_bos_token", "tokenizer.ggml.bos_token_id",
        "tokenizer.ggml.eos_token_id", "tokenizer.chat_template",
    )
    meta = {k: reader.fields[k].contents() for k in keep if k in reader.fields}
    meta["has_output_weight"] = any(t.name == "output.weight" for t in reader.tensors)
    return meta


def load_tokenizer(model: Path):
    """HF's GGUF tokenizer, with the pre-tokenizer SmolLM2 really uses.

    transformers has no split for `tokenizer.ggml.pre = "smollm"` and falls back to plain GPT-2
    byte-level splitting. SmolLM2's own tokenizer.json (and llama.cpp's "smollm" pre-type) first
    isolates every number code point (\\p{N}), then applies the GPT-2 regex. Without the fix " ½"
    would be one pre-token instead of two, so we install the real sequence.
    """
    tok = AutoTokenizer.from_pretrained(str(model.parent), gguf_file=model.name)
    default = AutoTokenizer.from_pretrained(str(model.parent), gguf_file=model.name)
    tok.backend_tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True),
        ]
    )
    return tok, default


def verify_model(model, meta: dict) -> dict:
    cfg = model.config
    rope_params = getattr(cfg, "rope_parameters", None) or {}
    rope_theta = rope_params.get("rope_theta", getattr(cfg, "rope_theta", None))
    expected = {
        "num_hidden_layers": (cfg.num_hidden_layers, meta["llama.block_count"]),
        "hidden_size": (cfg.hidden_size, meta["llama.embedding_length"]),
        "intermediate_size": (cfg.intermediate_size, meta["llama.feed_forward_length"]),
        "num_attention_heads": (cfg.num_attention_heads, meta["llama.attention.head_count"]),
        "num_key_value_heads": (cfg.num_key_value_heads, meta["llama.attention.head_count_kv"]),
        "rope_theta": (rope_theta, meta["llama.rope.freq_base"]),
        "rms_norm_eps": (cfg.rms_norm_eps, meta["llama.attention.layer_norm_rms_epsilon"]),
        "vocab_size": (cfg.vocab_size, meta["llama.vocab_size"]),
        "tie_word_embeddings": (cfg.tie_word_embeddings, not meta["has_output_weight"]),
        "head_dim": (cfg.hidden_size // cfg.num_attention_heads, meta["llama.rope.dimension_count"]),
    }
    for key, (hf, file) in expected.items():
        print(f"  {key:22s} hf={hf!r:24s} gguf={file!r}")
        if hf != file:
            fail(f"HF config {key}={hf!r} but GGUF says {file!r}")
    rope_type = rope_params.get("rope_type", "default")
    if rope_type != "default" or cfg.hidden_act != "silu":
        fail(f"unexpected rope_type={rope_type} or hidden_act={cfg.hidden_act}")
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Linear) and type(module) is not torch.nn.Linear:
            fail(f"{name} is {type(module).__name__}, not a dequantized nn.Linear")
    if any(p.dtype != torch.float32 for p in model.parameters()):
        fail("a parameter is not float32")
    if model.lm_head.weight.data_ptr() != model.model.embed_tokens.weight.data_ptr():
        fail("lm_head is not tied to embed_tokens")
    return {k: v[0] for k, v in expected.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--n-greedy", type=int, default=32)
    parser.add_argument("--position-topk", type=int, default=20)
    parser.add_argument("--greedy-topk", type=int, default=5)
    args = parser.parse_args()

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(0)

    meta = gguf_metadata(args.model)
    tok, default_tok = load_tokenizer(args.model)
    add_bos = bool(meta.get("tokenizer.ggml.add_bos_token", False))
    model = AutoModelForCausalLM.from_pretrained(
        str(args.model.parent), gguf_file=args.model.name, dtype=torch.float32,
        attn_implementation="eager", device_map="cpu",
    ).eval()
    print("HF config vs GGUF metadata:")
    checked = verify_model(model, meta)

    prompts = list(PROMPTS)
    templated = tok.apply_chat_template(
        [{"role": "user", "content": CHAT_QUESTION}], tokenize=False, add_generation_prompt=True
    )
    prompts.append(("chat_template", templated))

    numpy_model = NumpyLlama(str(args.model))
    results = []
    checks = {"numpy_max_abs_diff": {}, "kv_cache_max_abs_diff": {}, "default_hf_tokenizer_differs": {}}
    for name, text in prompts:
        ids = tok(text, add_special_tokens=False)["input_ids"]
        with_specials = tok(text)["input_ids"]
        bos = tok.bos_token_id
        if with_specials != (([bos] if add_bos else []) + ids):
            fail(f"{name}: HF's automatic special tokens {with_specials[:3]} disagree with add_bos={add_bos}")
        if add_bos:
            ids = [bos] + ids
        default_ids = default_tok(text, add_special_tokens=False)["input_ids"]
        checks["default_hf_tokenizer_differs"][name] = default_ids != ids
        logits = full_logits(model, ids)
        ref = numpy_model.logits(ids)
        diff = float(np.max(np.abs(ref - logits)))
        checks["numpy_max_abs_diff"][name] = diff
        if diff > 1e-2 or not np.array_equal(np.argmax(ref, axis=-1), np.argmax(logits, axis=-1)):
            fail(f"{name}: numpy GGUF forward disagrees with HF (max abs diff {diff})")
        greedy_ids, step_logits = greedy(model, ids, args.n_greedy)
        kv_ids, kv_logits = greedy_kv_cache(model, ids, args.n_greedy)
        kv_diff = float(max(np.max(np.abs(a - b)) for a, b in zip(step_logits, kv_logits)))
        checks["kv_cache_max_abs_diff"][name] = kv_diff
        if kv_ids != greedy_ids:
            fail(f"{name}: KV-cache greedy {kv_ids} != full-forward greedy {greedy_ids}")
        if not np.array_equal(step_logits[0], logits[-1]):
            fail(f"{name}: first greedy step logits differ from the prompt's last-position logits")
        greedy_text = tok.decode(greedy_ids, skip_special_tokens=False)
        print(f"[{name}] {len(ids)} prompt ids, numpy diff {diff:.2e}, kv diff {kv_diff:.2e}")
        print(f"    greedy: {greedy_text!r}")
        results.append({
            "format_version": FORMAT_VERSION,
            "name": name,
            "text": text,
            "add_bos": add_bos,
            "prompt_ids": ids,
            "prompt_tokens": tok.convert_ids_to_tokens(ids),
            "n_vocab": int(logits.shape[-1]),
            "last_logits_file": f"{name}.last_logits.f32",
            "position_topk": [topk_pairs(row, args.position_topk) for row in logits],
            "greedy_ids": greedy_ids,
            "greedy_text": greedy_text,
            "top2_gap": [top2_gap(row) for row in step_logits],
            "greedy_topk": [topk_pairs(row, args.greedy_topk) for row in step_logits],
            "_last_logits": logits[-1].astype("<f4"),
        })

    chat = next(r for r in results if r["name"] == "chat")
    if "Paris" not in chat["greedy_text"]:
        fail(f"chat answer does not mention Paris: {chat['greedy_text']!r}")

    write_outputs(args, results, meta, checked, checks, add_bos)


def write_outputs(args, results, meta, checked, checks, add_bos) -> None:
    """Writes into a temporary folder first, so a failure never leaves a half-written data set."""
    staging = Path(tempfile.mkdtemp(prefix="golden-"))
    for r in results:
        (staging / r["last_logits_file"]).write_bytes(r.pop("_last_logits").tobytes())
        (staging / f"{r['name']}.json").write_text(dump_compact(r))
    sha = hashlib.sha256(args.model.read_bytes()).hexdigest()
    manifest = {
        "format_version": FORMAT_VERSION,
        "created_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "generator": "tools/reference/make_golden.py",
        "model_file": args.model.name,
        "model_sha256": sha,
        "vocab_size": checked["vocab_size"],
        "n_layers": checked["num_hidden_layers"],
        "n_embd": checked["hidden_size"],
        "n_ff": checked["intermediate_size"],
        "n_head": checked["num_attention_heads"],
        "n_head_kv": checked["num_key_value_heads"],
        "rope_theta": checked["rope_theta"],
        "rms_norm_eps": checked["rms_norm_eps"],
        "tied_embeddings": checked["tie_word_embeddings"],
        "add_bos": add_bos,
        "tokenizer_pre": meta.get("tokenizer.ggml.pre"),
        "n_greedy": args.n_greedy,
        "position_topk": args.position_topk,
        "greedy_topk": args.greedy_topk,
        "prompts": [r["name"] for r in results],
        "reference": "transformers AutoModelForCausalLM(gguf_file=..., dtype=float32), "
        "CPU, 1 thread, eager attention",
        "versions": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "tokenizers": tokenizers.__version__,
            "gguf": gguf_version(),
            "numpy": np.__version__,
        },
        "checks": checks,
    }
    (staging / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=1) + "\n")
    total = sum(f.stat().st_size for f in staging.iterdir())
    if total > 3 * 1024 * 1024:
        fail(f"golden data is {total} bytes, over the 3 MiB budget")
    args.out.mkdir(parents=True, exist_ok=True)
    for old in list(args.out.glob("*.json")) + list(args.out.glob("*.f32")):
        old.unlink()
    for f in staging.iterdir():
        shutil.move(str(f), args.out / f.name)
    staging.rmdir()
    print(f"wrote {len(results)} prompts, {total} bytes, to {args.out}")


def dump_compact(obj: dict) -> str:
    """JSON with one top-level key per line and one row per line for lists of rows, so that a
    regenerated file diffs line by line without tripling its size the way indent= would."""
    lines = []
    for key, value in obj.items():
        if isinstance(value, list) and value and isinstance(value[0], list):
            rows = ",\n".join("  " + json.dumps(row, ensure_ascii=False) for row in value)
            lines.append(f" {json.dumps(key)}: [\n{rows}\n ]")
        else:
            lines.append(f" {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}")
    text = "{\n" + ",\n".join(lines) + "\n}\n"
    if json.loads(text) != obj:
        fail("compact JSON writer did not round-trip")
    return text


def gguf_version() -> str:
    from importlib.metadata import version

    return version("gguf")


if __name__ == "__main__":
    main()
