#!/usr/bin/env python3
"""The hardware-frontier table and chart (docs/hardware-frontier.md) from `frontier advise` outputs, one per
hardware profile (scripts/hardware_frontier.sh writes them).

  python3 scripts/hardware_frontier.py docs/hardware-frontier/*.txt [--out docs/hardware-frontier.svg]

Prints a Markdown table (one row per profile: its peak, the advised shape, steps, tokens, predicted and measured
val_bpb, the runner-up) and draws two panels: the predicted val_bpb of every candidate depth per profile (the
advised one marked with its measured val_bpb), and the step throughput behind it (tokens/s, log scale).
The chart needs matplotlib (Debian: apt-get install python3-matplotlib); the table does not.
"""
import argparse
import re
import sys


def parse(path):
    """One advise output: the profile, its candidates and the advice."""
    p = {"path": path, "cands": [], "advice": None}
    text = open(path, encoding="utf-8").read()
    m = re.search(r"^advise: machine (.+?) \| (\S+) \| (\d+) threads \| (\S+); peak (\d+) GFLOP/s \((.+?)\)"
                  r"(?:, memory ([\d.]+) GB/s)?", text, re.M)
    if not m:
        sys.exit(f"{path}: no 'advise: machine' line (is it the output of frontier advise?)")
    p.update(cpu=m.group(1), isa=m.group(2), threads=int(m.group(3)), precision=m.group(4),
             peak=int(m.group(5)), unit=m.group(6), bw=float(m.group(7)) if m.group(7) else None)
    m = re.search(r"^advise: budget (\d+) s", text, re.M)
    p["budget"] = int(m.group(1)) if m else 0
    # candidates table rows: "  depth 2 T 512      128  393.2k     15893     1164  4.77M   12.1   35%  2%  15.4%  1.8326"
    row = re.compile(r"^\s+depth (\d+) T (\d+)\s+(\d+)\s+(\S+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(\d+)%\s+(\d+)%\s+"
                     r"(\S+)%\s+([\d.]+)", re.M)
    for r in row.finditer(text):
        p["cands"].append(dict(depth=int(r.group(1)), T=int(r.group(2)), dim=int(r.group(3)), N=r.group(4),
                               tps=int(r.group(5)), steps=int(r.group(6)), tokens=r.group(7), mfu=int(r.group(9)),
                               predicted=float(r.group(12))))
    m = re.search(r"^advice: depth (\d+) T (\d+).*?predicted val_bpb ([\d.]+), measured ([\d.]+)", text, re.M)
    if m:
        p["advice"] = dict(depth=int(m.group(1)), T=int(m.group(2)), predicted=float(m.group(3)),
                           measured=float(m.group(4)))
    if not p["cands"]:
        sys.exit(f"{path}: no candidates table")
    return p


def label(p):
    return f"{p['isa']} {p['precision']}, {p['threads']} thread{'s' if p['threads'] > 1 else ''}"


def table(profiles):
    print("| profile | peak (unit) | advised shape | tokens/s | steps | tokens | MFU | predicted | measured | "
          "runner-up (predicted) |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---|")
    for p in profiles:
        a = p["advice"]
        best = next((c for c in p["cands"] if a and c["depth"] == a["depth"] and c["T"] == a["T"]), p["cands"][0])
        other = next((c for c in p["cands"] if c is not best), None)
        ru = f"depth {other['depth']} ({other['predicted']:.4f})" if other else "-"
        meas = f"**{a['measured']:.4f}**" if a else "-"
        print(f"| {label(p)} | {p['peak']:,} GFLOP/s ({p['unit']}) | depth {best['depth']} (dim {best['dim']}), "
              f"T {best['T']} | {best['tps']:,} | {best['steps']:,} | {best['tokens']} | {best['mfu']}% | "
              f"{best['predicted']:.4f} | {meas} | {ru} |")


def chart(profiles, out):
    try:
        import matplotlib
        matplotlib.use("svg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("the chart needs matplotlib: apt-get install python3-matplotlib (the table above needs nothing)")
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4.2))
    for p in profiles:
        cs = sorted(p["cands"], key=lambda c: c["depth"])
        d = [c["depth"] for c in cs]
        line, = ax1.plot(d, [c["predicted"] for c in cs], marker="o", label=label(p))
        ax2.plot(d, [c["tps"] for c in cs], marker="o", color=line.get_color(), label=label(p))
        a = p["advice"]
        if a:
            ax1.plot([a["depth"]], [a["measured"]], marker="*", markersize=14, color=line.get_color(),
                     markeredgecolor="black")
    ax1.set_xlabel("depth (width follows from it; T 512)")
    ax1.set_ylabel("val_bpb at %d s (line: predicted; star: the advice, measured)" % profiles[0]["budget"])
    ax1.set_title("the optimum moves with the hardware")
    ax1.legend(fontsize=8)
    ax2.set_yscale("log")
    ax2.set_xlabel("depth")
    ax2.set_ylabel("training tokens/s (measured step)")
    ax2.set_title("because the step's cost does")
    cpu = profiles[0]["cpu"]
    fig.suptitle(f"frontier advise on Wikipedia, one CPU ({cpu}), several hardware profiles", fontsize=10)
    fig.tight_layout()
    fig.savefig(out)
    print(f"\nwrote {out}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outputs", nargs="+", help="frontier advise outputs, one per profile")
    ap.add_argument("--out", help="write the chart (SVG) here")
    a = ap.parse_args()
    profiles = [parse(f) for f in a.outputs]
    table(profiles)
    if a.out:
        chart(profiles, a.out)


if __name__ == "__main__":
    main()
