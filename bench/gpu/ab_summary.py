#!/usr/bin/env python3
"""Medians of run.sh --ab's interleaved runs: OUTDIR/ab-{old,new}-RUN-{b1,b32}.json -> a table.

decode b1: decode tok/s at batch 1 after a 16-token prompt (tg128); pp2048: prefill tok/s of one
2048-token prompt, warm (the last 2048 point of the run) and first in the process; decode b32: the
generation-phase tok/s at batch 32 after 1024-token prompts.
"""
import json
import statistics
import sys
from pathlib import Path


def metric(path, prompt, key, which):
    """`key` of the first (which=0) or last (which=-1) result with this prompt length."""
    rows = [r for r in json.loads(path.read_text())["results"] if r["prompt"] == prompt]
    if not rows:
        raise KeyError(f"{path}: no result for prompt {prompt}")
    return rows[which][key]


def main():
    out = Path(sys.argv[1])
    rows = [("decode b1 (tok/s)", "b1", 16, "decode_tok_s", 0),
            ("prefill pp2048, warm (tok/s)", "b1", 2048, "prefill_tok_s", -1),
            ("prefill pp2048, first in the process (tok/s)", "b1", 2048, "prefill_tok_s", 0),
            ("decode b32, generation phase (tok/s)", "b32", 1024, "decode_phase_tok_s", 0),
            ("decode b32, full batch (tok/s)", "b32", 1024, "full_batch_tok_s", 0),
            ("decode b32, whole run (tok/s)", "b32", 1024, "decode_tok_s", 0)]
    print("| figure | old runs | new runs | old median | new median | new/old |")
    print("| --- | --- | --- | --- | --- | --- |")
    for label, kind, prompt, key, pick in rows:
        vals = {}
        for which in ("old", "new"):
            vals[which] = []
            for p in sorted(out.glob(f"ab-{which}-*-{kind}.json")):
                try:
                    vals[which].append(metric(p, prompt, key, pick))
                except (OSError, KeyError, ValueError) as e:
                    print(f"missing: {p} ({e})", file=sys.stderr)
        if not vals["old"] or not vals["new"]:
            print(f"| {label} | missing | missing | | | |")
            continue
        mo, mn = statistics.median(vals["old"]), statistics.median(vals["new"])
        fmt = lambda v: ", ".join(f"{x:.1f}" for x in v)
        print(f"| {label} | {fmt(vals['old'])} | {fmt(vals['new'])} | {mo:.1f} | {mn:.1f} | "
              f"{mn / mo:.3f} |")


if __name__ == "__main__":
    main()
