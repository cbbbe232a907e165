#!/usr/bin/env python3
"""novaserve against the peer (llama.cpp) for run.sh --peer, as markdown for summary.md.

  peer_summary.py bench OUTDIR PRESET
      novaserve: OUTDIR/bench-PRESET-b1.json (run.sh's bench at batch 1, prompts 16, 2048,
      2048): decode tok/s after the 16-token prompt (llama-bench's tg128 starts from an empty
      context) and prefill tok/s of the last 2048-token prompt (pp2048, warm: the first one
      after start-up pays one-time costs). llama.cpp: OUTDIR/peer-bench-PRESET.md
      (llama-bench -o md, -p 2048 -n 128): the t/s of its tg128 and pp2048 rows. Batch 32:
      OUTDIR/bench-PRESET-b32.json's generation-phase tok/s (prompt 1024, 128 generated) against
      OUTDIR/peer-batched-PRESET.log (llama-batched-bench -npp 1024 -ntg 128 -npl 32): the S_TG
      t/s of its B = 32 row. Prints a table with the ratio novaserve/llama.cpp.
  peer_summary.py types OUTDIR PRESET TAG...
      run.sh --types: for each file PRESET-TAG (TAG e.g. q4_k_m, q4_0-ffn16), novaserve's
      OUTDIR/types-PRESET-TAG-b1.json (batch 1, prompts 16 and 1024, 128 generated) and
      -b32.json (batch 32, prompt 1024) against OUTDIR/types-peer-batched-PRESET-TAG.log
      (llama-batched-bench -npp 1024 -ntg 128 -npl 1,32): generation-phase tok/s (S_TG) at
      batch 1 and 32 and their ratios, the batch-1 ratio at llama.cpp's shape (prompt 1024), and
      the "device weight memory" line of novaserve's start-up log (OUTDIR/types-PRESET-TAG.log).
  peer_summary.py serve OUTDIR PRESET
      OUTDIR/loadgen-PRESET.json (novaserve) and OUTDIR/loadgen-peer-PRESET.json (llama-server),
      both `novaserve loadgen --find-max-qps` reports: the confirmed max QPS of each, the probes,
      and the ratio.

A missing or unreadable input prints "missing" in its place (exit status 0): the peer runs are
independent of novaserve's, and either may have failed. Bad arguments: the usage, exit status 2.
"""
import json
import re
import sys
from pathlib import Path


def novaserve_bench(out, preset):
    """{"tg128": decode tok/s at prompt 16, "pp2048": prefill tok/s of the last prompt 2048}."""
    rows = json.loads((out / f"bench-{preset}-b1.json").read_text())["results"]
    got = {}
    for r in rows:
        if r["prompt"] == 16 and "tg128" not in got:
            got["tg128"] = float(r["decode_tok_s"])
        if r["prompt"] == 2048:
            got["pp2048"] = float(r["prefill_tok_s"])  # the last one wins
    return got


def novaserve_b32(out, preset):
    """{"b32": the generation-phase tok/s of run.sh's batch-32 bench (prompt 1024)}."""
    rows = json.loads((out / f"bench-{preset}-b32.json").read_text())["results"]
    return {"b32": float(rows[0]["decode_phase_tok_s"])}


def batched_s_tg(path):
    """{B: S_TG t/s} over the rows of a llama-batched-bench table (the first row of each B)."""
    header, got = None, {}
    for line in path.read_text().splitlines():
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if "S_TG t/s" in cells:
            header = cells
        elif header and len(cells) == len(header) and cells[header.index("B")].isdigit():
            got.setdefault(int(cells[header.index("B")]), float(cells[header.index("S_TG t/s")]))
    return got


def llamacpp_batched(out, preset):
    """{"b32": S_TG t/s} from llama-batched-bench's table row with B = 32."""
    got = batched_s_tg(out / f"peer-batched-{preset}.log")
    return {"b32": got[32]} if 32 in got else {}


def llamacpp_bench(out, preset):
    """{"tg128": t/s, "pp2048": t/s} from llama-bench's markdown table."""
    got = {}
    for line in (out / f"peer-bench-{preset}.md").read_text().splitlines():
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        for test in ("tg128", "pp2048"):
            if test in cells and test not in got:
                m = re.match(r"([0-9]+(?:\.[0-9]*)?)", cells[-1])  # "10693.12 ± 12.34"
                if m:
                    got[test] = float(m.group(1))
    return got


def load(fn, *args):
    try:
        return fn(*args)
    except (OSError, KeyError, ValueError, TypeError) as e:
        print(f"peer_summary: {fn.__name__}: {e}", file=sys.stderr)
        return {}


def fmt(v):
    return "missing" if v is None else f"{v:,.1f}"


def ratio(a, b):
    return "-" if a is None or b is None or b == 0 else f"{a / b:.2f}x"


def bench(out, preset):
    ns, lc = load(novaserve_bench, out, preset), load(llamacpp_bench, out, preset)
    ns.update(load(novaserve_b32, out, preset))
    lc.update(load(llamacpp_batched, out, preset))
    print(f"| {preset} Q4_0, same file | novaserve | llama.cpp | novaserve/llama.cpp |")
    print("|---|---|---|---|")
    for key, label in (("tg128", "decode batch 1, tg128 (tok/s)"),
                       ("pp2048", "prefill pp2048 (tok/s)"),
                       ("b32", "decode batch 32, generation phase (tok/s)")):
        a, b = ns.get(key), lc.get(key)
        print(f"| {label} | {fmt(a)} | {fmt(b)} | {ratio(a, b)} |")


def novaserve_types(out, preset, tag):
    """{"b1_16", "b1_1024", "b32": generation-phase tok/s} of run.sh --types' bench runs."""
    got = {}
    for r in json.loads((out / f"types-{preset}-{tag}-b1.json").read_text())["results"]:
        got.setdefault(f"b1_{r['prompt']}", float(r["decode_phase_tok_s"]))
    rows = json.loads((out / f"types-{preset}-{tag}-b32.json").read_text())["results"]
    got["b32"] = float(rows[0]["decode_phase_tok_s"])
    return got


def llamacpp_types(out, preset, tag):
    """{"b1", "b32": S_TG t/s} of llama-batched-bench -npl 1,32 on the same file."""
    got = batched_s_tg(out / f"types-peer-batched-{preset}-{tag}.log")
    return {f"b{b}": got[b] for b in (1, 32) if b in got}


def weight_memory(out, preset, tag):
    """{"line": novaserve's first "device weight memory" start-up line, without its prefix}."""
    for line in (out / f"types-{preset}-{tag}.log").read_text().splitlines():
        m = re.search(r"device weight memory (.*)", line)
        if m:
            return {"line": m.group(1)}
    return {}


def types(out, preset, tags):
    print(f"| {preset} file | novaserve b1, prompt 16 (tok/s) | novaserve b1, prompt 1024 | "
          "llama.cpp S_TG npl 1 (prompt 1024) | b1 ratio | novaserve b32 (prompt 1024) | "
          "llama.cpp S_TG npl 32 | b32 ratio |")
    print("|---|---|---|---|---|---|---|---|")
    memory = []
    for tag in tags:
        ns, lc = load(novaserve_types, out, preset, tag), load(llamacpp_types, out, preset, tag)
        b1, b1_peer = ns.get("b1_1024"), lc.get("b1")
        b32, b32_peer = ns.get("b32"), lc.get("b32")
        print(f"| {tag} | {fmt(ns.get('b1_16'))} | {fmt(b1)} | {fmt(b1_peer)} | "
              f"{ratio(b1, b1_peer)} | {fmt(b32)} | {fmt(b32_peer)} | {ratio(b32, b32_peer)} |")
        memory.append((tag, load(weight_memory, out, preset, tag).get("line", "missing")))
    print()
    print("Rates are generation-phase tok/s (bench's decode_phase_tok_s, llama-batched-bench's "
          "S_TG), 128 tokens generated; ratios are novaserve/llama.cpp at the same shape (batch 1 "
          "and 32 after a 1024-token prompt).")
    print()
    print("Device weight memory (novaserve's start-up log):")
    print()
    for tag, line in memory:
        print(f"- {tag}: {line}")


def search(path):
    j = json.loads(path.read_text())["find_max_qps"]
    probes = ", ".join(
        f"{p['qps']:g}{'(re)' if p.get('reprobe') else ''} {'ok' if p['met'] else 'miss'}"
        for p in j["probes"])
    confs = ", ".join(f"{p['qps']:g} {'ok' if p['met'] else 'miss'}" for p in j["confirmations"])
    # max_qps is null when no rate was confirmed (0 in reports before that change).
    return {"max": float(j["max_qps"] or 0), "probes": probes, "confirmations": confs or "none"}


def serve(out, preset):
    ns = load(search, out / f"loadgen-{preset}.json")
    lc = load(search, out / f"loadgen-peer-{preset}.json")
    print(f"| {preset} Q4_0 fin-qa, same loadgen | max QPS (confirmed) | probes | confirmations |")
    print("|---|---|---|---|")
    for name, r in (("novaserve", ns), ("llama-server", lc)):
        # Rates as loadgen gives them (:g, like the probes): a window cap of 1.65 is not 1.6.
        best = "missing" if r.get("max") is None else "none" if r["max"] == 0 else f"{r['max']:g}"
        print(f"| {name} | {best} | {r.get('probes', 'missing')} | "
              f"{r.get('confirmations', 'missing')} |")
    print(f"| novaserve/llama-server | {ratio(ns.get('max'), lc.get('max'))} | | |")


def main():
    args = sys.argv[1:]
    if len(args) == 3 and args[0] in ("bench", "serve"):
        (bench if args[0] == "bench" else serve)(Path(args[1]), args[2])
    elif len(args) >= 4 and args[0] == "types":
        types(Path(args[1]), args[2], args[3:])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
