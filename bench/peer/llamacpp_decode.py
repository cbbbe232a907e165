"""Decode/prefill speed of llama.cpp's CPU build (via the llama-cpp-python package from PyPI) on a
GGUF file, measured the same way as `novaserve generate --ignore-eos`: greedy, batch 1, a fixed
number of generated tokens. Prints one JSON line.

Usage: python llamacpp_decode.py MODEL.gguf --threads 2 --prompt "..." --gen 128
"""
import argparse
import json
import time

import numpy as np
from llama_cpp import Llama


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt", default="The history of the city of Paris")
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    llm = Llama(model_path=args.model, n_ctx=2048, n_threads=args.threads,
                n_threads_batch=args.threads, n_batch=512, logits_all=False, verbose=False)
    prompt_ids = llm.tokenize(args.prompt.encode(), add_bos=True, special=False)
    best_decode = 0.0
    best_prefill = 0.0
    for _ in range(args.repeats):
        llm.reset()
        t0 = time.perf_counter()
        llm.eval(prompt_ids)
        t1 = time.perf_counter()
        tok = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        t2 = time.perf_counter()
        for _ in range(args.gen):
            llm.eval([tok])
            tok = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        t3 = time.perf_counter()
        best_prefill = max(best_prefill, len(prompt_ids) / (t1 - t0))
        best_decode = max(best_decode, args.gen / (t3 - t2))
    print(json.dumps({"engine": "llama.cpp (llama-cpp-python)", "threads": args.threads,
                      "prompt_tokens": len(prompt_ids), "gen_tokens": args.gen,
                      "prefill_tok_s": round(best_prefill, 2),
                      "decode_tok_s": round(best_decode, 2)}))


if __name__ == "__main__":
    main()
