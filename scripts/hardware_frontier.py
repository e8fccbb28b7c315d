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
    p["measured"] = [dict(depth=int(v.group(1)), T=int(v.group(2)), bpb=float(v.group(3))) for v in re.finditer(
        r"^validate\s+depth (\d+) T (\d+)\s+\d+ steps .*?measured ([\d.]+)", text, re.M)]
    m = re.search(r"^advice: depth (\d+) T (\d+).*?predicted val_bpb ([\d.]+), measured ([\d.]+)", text, re.M)
    if m:
        p["advice"] = dict(depth=int(m.group(1)), T=int(m.group(2)), predicted=float(m.group(3)),
                           measured=float(m.group(4)))
    if not p["cands"]:
        sys.exit(f"{path}: no candidates table")
    return p


def label(p, cpu=False):
    s = f"{p['isa']} {p['precision']}, {p['threads']} thread{'s' if p['threads'] > 1 else ''}"
    return s + f" ({p['cpu']})" if cpu else s


def table(profiles):
    print("| profile | peak (unit) | advised shape | tokens/s | steps | tokens | MFU | predicted | measured | "
          "runner-up |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---|")
    for p in profiles:
        a = p["advice"]
        best = next((c for c in p["cands"] if a and c["depth"] == a["depth"] and c["T"] == a["T"]), p["cands"][0])
        others = [v for v in p["measured"] if (v["depth"], v["T"]) != (best["depth"], best["T"])]
        other = next((c for c in p["cands"] if c is not best), None)
        ru = (f"depth {others[0]['depth']} T {others[0]['T']}: measured {others[0]['bpb']:.4f}" if others
              else f"depth {other['depth']}: predicted {other['predicted']:.4f}" if other else "-")
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
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.4))
    cpus = {p["cpu"] for p in profiles}
    for p in profiles:
        T = p["advice"]["T"] if p["advice"] else p["cands"][0]["T"]  # one line per profile: the advice's length
        cs = sorted((c for c in p["cands"] if c["T"] == T), key=lambda c: c["depth"])
        d = [c["depth"] for c in cs]
        line, = ax1.plot(d, [c["predicted"] for c in cs], marker="o", markersize=4,
                         label=label(p, len(cpus) > 1) + f", T {T}")
        ax2.plot(d, [c["tps"] for c in cs], marker="o", markersize=4, color=line.get_color())
        ms = [v for v in p["measured"] if v["T"] == T]
        ax1.plot([v["depth"] for v in ms], [v["bpb"] for v in ms], linestyle="none", marker="s", markersize=7,
                 markerfacecolor="none", color=line.get_color())
        a = p["advice"]
        if a:
            ax1.plot([a["depth"]], [a["measured"]], marker="*", markersize=15, color=line.get_color(),
                     markeredgecolor="black", linestyle="none")
    ax1.set_xlabel("depth (the width follows from it)")
    ax1.set_ylabel("val_bpb at %d s" % profiles[0]["budget"])
    ax1.set_title("line: predicted; square: trained; star: the advice", fontsize=9)
    ax1.legend(fontsize=7)
    ax2.set_yscale("log")
    ax2.set_xlabel("depth")
    ax2.set_ylabel("training tokens/s (measured step)")
    ax2.set_title("what the step costs on each profile", fontsize=9)
    where = f"one CPU ({cpus.pop()})" if len(cpus) == 1 else "several CPUs"
    fig.suptitle(f"frontier advise on Wikipedia at {profiles[0]['budget']} s: the best shape per hardware profile, "
                 f"{where}", fontsize=10)
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
