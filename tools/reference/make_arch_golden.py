#!/usr/bin/env python3
"""Writes the architecture golden data under tests/golden/data/<arch>/ (qwen3, phi3).

For each architecture the script builds a tiny random model with transformers, whose weights come
from the formula of formula_weights.py (implemented bit for bit by tests/golden/formula_weights.cpp),
so no weights are committed. It saves the checkpoint to a temporary folder, loads it back with
`from_pretrained`, and computes reference logits and greedy tokens in float64 on CPU with one
thread and eager attention. It commits only config.json, the tiny tokenizer (tokenizer.json,
tokenizer_config.json) and golden.json (prompts, HF's token ids, last-position logits, greedy ids).

Checks before anything is written (any failure exits non-zero and leaves the data untouched):
the checkpoint loads with no missing or unexpected keys and holds exactly the formula values;
AutoTokenizer gives the `tokenizers` ids; a float32 run agrees with the float64 one; a KV-cache
greedy decode picks the same ids as the full-forward one; and `novaserve convert` of the same
checkpoint, run through the independent numpy forward of numpy_arch.py, reproduces HF's logits at
every prompt position. Format and usage: tools/reference/README.md, "Architecture golden data".
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import safetensors.numpy
import tokenizers
import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

import formula_weights
import tiny_tokenizers
from formula_weights import fnv1a64_bytes, formula_tensor
from golden_common import fail, full_logits, greedy, greedy_kv_cache, top2_gap, topk_pairs
from numpy_arch import NumpyArch

FORMAT_VERSION = 1
REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPO_ROOT / "tests" / "golden" / "data"
DEFAULT_NOVASERVE = REPO_ROOT / "build" / "novaserve"
VOCAB_SIZE = 384
N_GREEDY = 16
TOPK = 5
# Exact-mode bound of the C++ test (max |ours - ref| / max |ref|), and the smallest top-2 gap of
# any greedy step, in units of that bound times max |ref|, that a prompt may have: near-ties would
# let a legitimate flip cut the greedy comparison short.
EXACT_BOUND = 1e-3
MIN_GAP_IN_BOUNDS = 4.0

# LongRoPE factors: non-trivial and exact in float32 (multiples of 2^-5 and 2^-3).
SHORT_FACTOR = [1.0 + k / 32 for k in range(32)]
LONG_FACTOR = [1.0 + k / 8 for k in range(32)]

CONFIGS = {
    # head_dim 64 (what the GPU attention kernels take) with 8 heads: q_dim 512 != hidden 256, as
    # in real Qwen3 checkpoints, whose head_dim does not follow from hidden_size.
    "qwen3": {
        "architectures": ["Qwen3ForCausalLM"],
        "model_type": "qwen3",
        "vocab_size": VOCAB_SIZE,
        "hidden_size": 256,
        "intermediate_size": 512,
        "num_hidden_layers": 2,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 64,
        "hidden_act": "silu",
        "max_position_embeddings": 256,
        "rms_norm_eps": 1e-6,
        "rope_theta": 1000000.0,
        "rope_scaling": None,
        "attention_bias": False,
        "attention_dropout": 0.0,
        "use_sliding_window": False,
        "sliding_window": None,
        "max_window_layers": 2,
        "tie_word_embeddings": True,
        "bos_token_id": 0,
        "eos_token_id": 2,
        "pad_token_id": 0,
        "torch_dtype": "float32",
    },
    # LongRoPE: original context 128 stretched to 512 (attn_factor = sqrt(1 + ln 4 / ln 128)).
    # Prompts plus greedy steps stay within 128 positions, where the short factors apply.
    "phi3": {
        "architectures": ["Phi3ForCausalLM"],
        "model_type": "phi3",
        "vocab_size": VOCAB_SIZE,
        "hidden_size": 256,
        "intermediate_size": 512,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "hidden_act": "silu",
        "max_position_embeddings": 512,
        "original_max_position_embeddings": 128,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "rope_scaling": {
            "type": "longrope",
            "short_factor": SHORT_FACTOR,
            "long_factor": LONG_FACTOR,
        },
        "partial_rotary_factor": 1.0,
        "sliding_window": None,
        "attention_dropout": 0.0,
        "embd_pdrop": 0.0,
        "resid_pdrop": 0.0,
        "tie_word_embeddings": False,
        "bos_token_id": 1,
        "eos_token_id": 380,
        "pad_token_id": 380,
        "torch_dtype": "float32",
    },
}

# The texts differ a little between the architectures only where a reference greedy step fell
# into a near-tie (MIN_GAP_IN_BOUNDS).
CODE = "def add(a, b):\n    return a + b\n\nprint(add(2, 3))  # café 日本 ☕ 3.14159"
PROMPTS = {
    "qwen3": [
        ("english", "The capital of France is"),
        ("chat", "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"),
        ("code_unicode", CODE.replace("# café", "# prints 5, café")),
    ],
    "phi3": [
        ("english", "The capital of France is"),
        ("chat", "<|user|>\nHello, how are you?<|end|>\n<|assistant|>\n"),
        ("code_unicode", CODE),
    ],
}

MAKE_TOKENIZER = {
    "qwen3": tiny_tokenizers.make_qwen3_tokenizer,
    "phi3": tiny_tokenizers.make_phi3_tokenizer,
}


def write_checkpoint(arch: str, tok, folder: Path) -> list[dict]:
    """config.json, tokenizer files and the formula model.safetensors; returns the tensor list."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(CONFIGS[arch], indent=2) + "\n")
    (folder / "tokenizer.json").write_text(tiny_tokenizers.tokenizer_json_text(tok))
    (folder / "tokenizer_config.json").write_text(
        json.dumps(tiny_tokenizers.tokenizer_config(arch), indent=2) + "\n"
    )
    config = AutoConfig.from_pretrained(folder)
    skeleton = AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    tied = bool(config.tie_word_embeddings)
    tensors, listing = {}, []
    for name, value in skeleton.state_dict().items():
        if tied and name == "lm_head.weight":
            continue  # stored once, as transformers saves tied weights
        shape = tuple(int(d) for d in value.shape)
        tensors[name] = formula_tensor(name, shape)
        listing.append({"name": name, "shape": list(shape),
                        "fnv1a64": f"{fnv1a64_bytes(tensors[name].tobytes()):016x}"})
    safetensors.numpy.save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    return listing


def load_and_verify(folder: Path, listing: list[dict]):
    model, info = AutoModelForCausalLM.from_pretrained(
        folder, dtype=torch.float32, attn_implementation="eager", device_map="cpu",
        output_loading_info=True,
    )
    if any(info.get(k) for k in ("missing_keys", "unexpected_keys", "mismatched_keys")):
        fail(f"{folder}: loading info {info}")
    state = model.state_dict()
    for t in listing:
        want = formula_tensor(t["name"], tuple(t["shape"]))
        if not np.array_equal(state[t["name"]].numpy(), want):
            fail(f"{t['name']}: loaded values differ from the formula")
    if model.config.tie_word_embeddings:
        if model.lm_head.weight.data_ptr() != model.model.embed_tokens.weight.data_ptr():
            fail("lm_head is not tied to embed_tokens")
    return model.eval()


def convert_with_novaserve(binary: Path, folder: Path, out: Path) -> None:
    cmd = [str(binary), "convert", str(folder), str(out), "--type", "f32"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        fail(f"{' '.join(cmd)}: exit {done.returncode}: {done.stderr.strip()}")
    print(f"  {done.stdout.strip()}")


def make_arch(arch: str, args, work: Path) -> tuple[dict, dict]:
    """Returns golden.json's object and the files to commit (name -> text)."""
    print(f"== {arch}")
    tok = MAKE_TOKENIZER[arch](VOCAB_SIZE)
    folder = work / arch
    listing = write_checkpoint(arch, tok, folder)
    model32 = load_and_verify(folder, listing)
    model64 = load_and_verify(folder, listing).double()
    auto_tok = AutoTokenizer.from_pretrained(folder)
    numpy_model = None
    if not args.skip_numpy:
        gguf_path = work / f"{arch}.f32.gguf"
        convert_with_novaserve(args.novaserve, folder, gguf_path)
        numpy_model = NumpyArch(str(gguf_path))

    checks = {"numpy_max_rel_diff": {}, "f32_max_rel_diff": {}, "kv_cache_ids_equal": {},
              "auto_tokenizer_ids_equal": {}, "min_top2_gap_in_bounds": {}}
    prompts = []
    add_bos = bool(tiny_tokenizers.tokenizer_config(arch)["add_bos_token"])
    for name, text in PROMPTS[arch]:
        encoding = tok.encode(text)  # special tokens of the post-processor included
        ids = encoding.ids
        plain = tok.encode(text, add_special_tokens=False).ids
        if ids != ([tok.token_to_id("<s>")] if add_bos else []) + plain:
            fail(f"{arch}/{name}: automatic special tokens disagree with add_bos={add_bos}")
        auto_ids = auto_tok(text)["input_ids"]
        checks["auto_tokenizer_ids_equal"][name] = auto_ids == ids
        if auto_ids != ids:
            fail(f"{arch}/{name}: AutoTokenizer ids {auto_ids} != tokenizers ids {ids}")
        if len(ids) + N_GREEDY - 1 > CONFIGS[arch].get("original_max_position_embeddings", 1 << 30):
            fail(f"{arch}/{name}: {len(ids)} ids + {N_GREEDY} steps leave the short-factor range")

        logits = full_logits(model64, ids)
        scale = float(np.max(np.abs(logits[-1])))
        f32_diff = float(np.max(np.abs(full_logits(model32, ids) - logits))) / scale
        checks["f32_max_rel_diff"][name] = f32_diff
        if f32_diff > 1e-4:
            fail(f"{arch}/{name}: float32 HF run differs from float64 by {f32_diff:.2e} (relative)")
        if numpy_model is not None:
            ref = numpy_model.logits(ids)
            diff = float(np.max(np.abs(ref - logits))) / scale
            checks["numpy_max_rel_diff"][name] = diff
            if diff > 1e-5 or not np.array_equal(np.argmax(ref, -1), np.argmax(logits, -1)):
                fail(f"{arch}/{name}: numpy forward of the converted GGUF differs from HF by "
                     f"{diff:.2e} (relative)")
        greedy_ids, step_logits = greedy(model64, ids, N_GREEDY)
        kv_ids, _ = greedy_kv_cache(model64, ids, N_GREEDY)
        checks["kv_cache_ids_equal"][name] = kv_ids == greedy_ids
        if kv_ids != greedy_ids:
            fail(f"{arch}/{name}: KV-cache greedy {kv_ids} != full-forward greedy {greedy_ids}")
        if not np.array_equal(step_logits[0], logits[-1]):
            fail(f"{arch}/{name}: first greedy step logits differ from the last prompt position")
        min_gap = min(top2_gap(r) for r in step_logits) / (EXACT_BOUND * scale)
        checks["min_top2_gap_in_bounds"][name] = min_gap
        if min_gap < MIN_GAP_IN_BOUNDS:
            fail(f"{arch}/{name}: a greedy step's top-2 gap is only {min_gap:.1f} x the exact "
                 f"bound; choose another prompt")
        greedy_text = tok.decode(greedy_ids, skip_special_tokens=False)
        print(f"  [{name}] {len(ids)} ids, f32 {f32_diff:.1e}, numpy "
              f"{checks['numpy_max_rel_diff'].get(name, float('nan')):.1e}, "
              f"smallest gap {min_gap:.1f} bounds: {greedy_text!r}")
        prompts.append({
            "name": name,
            "text": text,
            "add_bos": add_bos,
            "prompt_ids": ids,
            "prompt_tokens": encoding.tokens,
            "last_logits": [float(x) for x in logits[-1]],
            "position_topk": [topk_pairs(row, TOPK) for row in logits],
            "greedy_ids": greedy_ids,
            "greedy_text": greedy_text,
            "top2_gap": [top2_gap(row) for row in step_logits],
            "greedy_topk": [topk_pairs(row, TOPK) for row in step_logits],
        })

    golden = {
        "format_version": FORMAT_VERSION,
        "arch": arch,
        "hf_arch": CONFIGS[arch]["architectures"][0],
        "created_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "generator": "tools/reference/make_arch_golden.py",
        "formula": formula_weights.__doc__.strip(),
        "n_vocab": VOCAB_SIZE,
        "n_greedy": N_GREEDY,
        "topk": TOPK,
        "reference": "transformers from_pretrained(dtype=float32).double(), CPU, 1 thread, eager "
        "attention; logits rounded to float32",
        "versions": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "tokenizers": tokenizers.__version__,
            "numpy": np.__version__,
        },
        "checks": checks,
        "tensors": listing,
        "prompts": prompts,
    }
    files = {name: (folder / name).read_text()
             for name in ("config.json", "tokenizer.json", "tokenizer_config.json")}
    return golden, files


def dump_golden(obj: dict) -> str:
    """JSON with one key per line, one list row per line (prompts: one key per line)."""
    def rows(key, value, indent):
        if isinstance(value, list) and value and isinstance(value[0], (list, dict)):
            inner = ",\n".join(indent + "  " + json.dumps(r, ensure_ascii=False) for r in value)
            return f"{indent}{json.dumps(key)}: [\n{inner}\n{indent}]"
        return f"{indent}{json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}"

    lines = []
    for key, value in obj.items():
        if key == "prompts":
            blocks = []
            for p in value:
                body = ",\n".join(rows(k, v, "   ") for k, v in p.items())
                blocks.append("  {\n" + body + "\n  }")
            lines.append(' "prompts": [\n' + ",\n".join(blocks) + "\n ]")
        else:
            lines.append(rows(key, value, " "))
    text = "{\n" + ",\n".join(lines) + "\n}\n"
    if json.loads(text) != obj:
        fail("golden JSON writer did not round-trip")
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--novaserve", type=Path, default=DEFAULT_NOVASERVE,
                        help="binary whose `convert` feeds the numpy check")
    parser.add_argument("--skip-numpy", action="store_true",
                        help="skip the convert + numpy check (no novaserve build)")
    parser.add_argument("--keep", type=Path, help="also copy the checkpoints and GGUFs here")
    args = parser.parse_args()
    if not args.skip_numpy and not args.novaserve.exists():
        fail(f"{args.novaserve} not found: build novaserve or pass --skip-numpy")

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(0)
    work = Path(tempfile.mkdtemp(prefix="arch-golden-"))
    results = {arch: make_arch(arch, args, work) for arch in args.arch}
    if args.keep:
        shutil.copytree(work, args.keep, dirs_exist_ok=True)
    for arch, (golden, files) in results.items():
        out = args.out / arch
        out.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (out / name).write_text(text)
        (out / "golden.json").write_text(dump_golden(golden))
        total = sum(f.stat().st_size for f in out.iterdir())
        print(f"wrote {out} ({total} bytes)")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
