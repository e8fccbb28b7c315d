#!/usr/bin/env python3
"""The table of scripts/levers_wiki.sh's runs (docs/codesign.md "Architecture and recipe levers"): the base on its
seeds (mean, sample s.d.: the seed spread), each lever on the first seed with its paired gain (base seed 42 minus
the lever's val_bpb) and the advisor's verdict (src/advise/advise.cpp lever_stage: a lever that beats the base on
the first seed goes into the combination), then the combination (and any lever trained on every seed) against the
base seed by seed: the mean of the paired differences and its standard error (taken when the difference exceeds
twice it), as the advisor decides.

  scripts/levers_table.py docs/levers/wiki-60
"""
import math
import os
import re
import sys


def summary(path):
    vals = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"^([a-z_]+):\s+(\S+)", line)
            if m:
                vals[m.group(1)] = m.group(2)
    return vals


def mean_sd(xs):
    m = sum(xs) / len(xs)
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else 0.0
    return m, sd


def main():
    out = sys.argv[1]
    runs = {}
    for name in sorted(os.listdir(out)):
        m = re.match(r"^(.+)-s(\d+)\.txt$", name)
        if not m:
            continue
        s = summary(os.path.join(out, name))
        if "val_bpb" in s:
            runs.setdefault(m.group(1), {})[int(m.group(2))] = (float(s["val_bpb"]), s.get("num_steps", "?"),
                                                                float(s.get("tokens_per_sec", "nan")))
    base = runs.get("base", {})
    if not base:
        sys.exit(f"{out}: no base runs")
    seeds = sorted(base)
    bm, spread = mean_sd([base[s][0] for s in seeds])
    first = seeds[0]
    print(f"base: {', '.join(f'{base[s][0]:.4f}' for s in seeds)} (seeds {', '.join(map(str, seeds))}): "
          f"mean {bm:.4f}, seed spread (sample s.d.) {spread:.4f}; {base[first][1]} steps each\n")
    print("| lever | val_bpb (seed %d) | gain vs the base's %.4f | verdict |" % (first, base[first][0]))
    print("|---|---:|---:|---|")
    for name, r in runs.items():
        if name in ("base", "combo") or first not in r:
            continue
        v = r[first][0]
        gain = base[first][0] - v
        verdict = ("better, beyond the seed spread" if gain > spread else "better, within the seed spread") \
            if gain > 0 else ("no change" if gain == 0 else "worse")
        print(f"| {name} | {v:.4f} | {gain:+.4f} | {verdict} |")
    def paired(r):
        d = [base[s][0] - r[s][0] for s in seeds]
        m, sd = mean_sd(d)
        return m, sd / math.sqrt(len(d))

    for name, r in runs.items():  # levers also trained on every seed
        if name in ("base", "combo") or sorted(r) != seeds:
            continue
        lm, _ = mean_sd([r[s][0] for s in seeds])
        d, se = paired(r)
        print(f"\n{name} on every seed: {', '.join(f'{r[s][0]:.4f}' for s in seeds)}: mean {lm:.4f} vs the base's "
              f"{bm:.4f}, paired difference {d:+.4f} +- {se:.4f} (s.e.): "
              f"{'beyond' if d > 2 * se and d > 0 else 'not beyond'} twice its standard error")
    combo = runs.get("combo", {})
    if combo and sorted(combo) == seeds:
        keys = open(os.path.join(out, "combo.keys")).read().strip() if os.path.exists(
            os.path.join(out, "combo.keys")) else "?"
        cm, _ = mean_sd([combo[s][0] for s in seeds])
        d, se = paired(combo)
        print(f"\ncombination ({keys}): {', '.join(f'{combo[s][0]:.4f}' for s in seeds)}: mean {cm:.4f} vs the "
              f"base's {bm:.4f}, paired difference {d:+.4f} +- {se:.4f} (s.e.): "
              f"{'taken' if d > 2 * se and d > 0 else 'not beyond twice its standard error'}")


if __name__ == "__main__":
    main()
