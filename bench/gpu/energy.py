#!/usr/bin/env python3
"""Energy per generated token on the GPU machine, the same way for novaserve and llama.cpp.

    energy.py run LOG LABEL -- COMMAND...
                                      runs COMMAND, reading GPU 0's energy counter (NVML
                                      nvmlDeviceGetTotalEnergyConsumption, mJ since the driver
                                      loaded) before and after; appends "LABEL joules seconds" to
                                      LOG
    energy.py diff LOG SHORT LONG TOKENS
                                      prints J/token = (E(LONG) - E(SHORT)) / TOKENS: two runs of
                                      the same benchmark that differ only in the tokens generated
                                      (TOKENS more in LONG), so model loading, prefill and warm-up
                                      cancel and what is left is the decode steps' energy.

Read-only: NVML is only queried (never nvmlDeviceSet*); clocks and power limits stay as found.
The counter is the board's, so it includes idle power during the extra steps, as a user pays it.
"""
import subprocess
import sys
import time


def run(log, label, cmd):
    import pynvml as nvml  # the nvidia-ml-py package of the GPU machine's image

    nvml.nvmlInit()
    handle = nvml.nvmlDeviceGetHandleByIndex(0)
    t0, e0 = time.time(), nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
    rc = subprocess.call(cmd)
    t1, e1 = time.time(), nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
    nvml.nvmlShutdown()
    with open(log, "a") as f:
        f.write(f"{label} {(e1 - e0) / 1000.0:.3f} {t1 - t0:.3f}\n")
    return rc


def diff(log, short, long_, tokens):
    runs = {}
    for line in open(log):
        label, joules, secs = line.split()
        runs.setdefault(label, []).append((float(joules), float(secs)))
    (e_s, t_s), (e_l, t_l) = runs[short][-1], runs[long_][-1]
    per_token = (e_l - e_s) / tokens
    print(f"{long_} - {short}: {e_l - e_s:.1f} J over {t_l - t_s:.2f} s for {tokens} tokens: "
          f"{per_token:.4f} J/token ({(e_l - e_s) / max(t_l - t_s, 1e-9):.0f} W)")


def main():
    if len(sys.argv) >= 5 and sys.argv[1] == "run" and "--" in sys.argv:
        sep = sys.argv.index("--")
        log, label = sys.argv[2], sys.argv[3]
        sys.exit(run(log, label, sys.argv[sep + 1:]))
    if len(sys.argv) == 6 and sys.argv[1] == "diff":
        diff(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
        return
    print(__doc__, file=sys.stderr)
    sys.exit(2)


if __name__ == "__main__":
    main()
