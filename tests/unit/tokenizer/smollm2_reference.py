#!/usr/bin/env python3
"""Writes smollm2_reference.json: token ids for a few strings from Hugging Face transformers'
own GGUF tokenizer loader (an implementation independent of ours) for the default model.

Usage: <venv with transformers, tokenizers, gguf>/bin/python smollm2_reference.py MODEL.gguf
Every case is encoded with add_special_tokens=False. HF always matches added (special) tokens
in the text, which is our parse_special=true; for parse_special=false the reference uses
split_special_tokens=True, which treats their text as ordinary characters.
"""
import json
import os
import sys

import transformers
from transformers import AutoTokenizer

TEXTS = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "  leading spaces and trailing  ",
    "numbers: 12345 and 3.14159",
    "tabs\tand\nnewlines\n\n",
    "I'm sure they've said it's fine, we'll see.",
    "naïve café — Zürich 東京 🦙🚀",
    "def f(x):\n    return x ** 2  # square",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    "text with <|endoftext|> inside",
]


def main() -> None:
    path = sys.argv[1]
    tok = AutoTokenizer.from_pretrained(os.path.dirname(os.path.abspath(path)),
                                        gguf_file=os.path.basename(path))
    split_tok = AutoTokenizer.from_pretrained(os.path.dirname(os.path.abspath(path)),
                                              gguf_file=os.path.basename(path),
                                              split_special_tokens=True)
    cases = []
    for text in TEXTS:
        cases.append({"text": text, "parse_special": True,
                      "ids": tok.encode(text, add_special_tokens=False)})
        cases.append({"text": text, "parse_special": False,
                      "ids": split_tok.encode(text, add_special_tokens=False)})
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "smollm2_reference.json")
    with open(out, "w", encoding="utf-8") as f:
        # One case per line keeps diffs readable.
        f.write('{"model": %s,\n "generator": %s,\n "cases": [\n' % (
            json.dumps(os.path.basename(path)),
            json.dumps("transformers " + transformers.__version__)))
        f.write(",\n".join("  " + json.dumps(c, ensure_ascii=False) for c in cases))
        f.write("\n ]}\n")
    print(f"wrote {len(cases)} cases to {out}")


if __name__ == "__main__":
    main()
