#!/usr/bin/env python3
"""Rows for `frontier advise --chart` from an advise cache copied to DIR (points.jsonl, validations.jsonl,
speed.json): docs/codesign.md's 30-minute chart (scripts/codesign.sh).

A sweep point of S steps of a shape is the run probe mode trains for a budget of S x that shape's measured step
time (same recipe, same schedule on step progress, same steps), so each swept shape becomes a line of val_bpb
against the budget, "width C, depth L", ending at its full-budget validation if it had one. The validations'
other rows (the advice rows, "advised (...)", and the compared configs) are passed through as they are. Prints
JSON Lines.
"""
import json
import os
import sys


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    d = sys.argv[1]
    speed = json.load(open(os.path.join(d, "speed.json")))
    points = read_jsonl(os.path.join(d, "points.jsonl"))
    validations = read_jsonl(os.path.join(d, "validations.jsonl"))

    def step_s(machine, depth, T, B):
        want = [k for k in speed if k.startswith(machine + " | ") and f" depth {depth} " in k and
                f" T {T} B {B} " in k]
        if len(want) != 1:
            sys.exit(f"codesign_rows: {len(want)} step times for depth {depth} T {T} B {B} on {machine} in speed.json")
        return speed[want[0]]["step_s"]

    data = next((v["data"] for v in validations if "data" in v), "?")
    out = []
    for p in points:
        s = step_s(p["machine"], p["depth"], p["seq_len"], p["micro_batch"])
        out.append({"label": f"width {p['dim']}, depth {p['depth']}", "data": data, "budget": p["steps"] * s,
                    "val_bpb": p["val_bpb"], "steps": p["steps"], "from": "sweep point"})
    dims = {(p["depth"], p["seq_len"]): p["dim"] for p in points}
    for v in validations:
        label = v.get("label", "")
        if label.startswith("depth ") and v.get("lr_scale", 1.0) == 1.0:
            depth, T = int(label.split()[1]), int(label.split()[3])
            if (depth, T) in dims:
                out.append({"label": f"width {dims[(depth, T)]}, depth {depth}", "data": data,
                            "budget": v["budget"], "val_bpb": v["val_bpb"], "from": "validation"})
        elif not label.startswith("depth "):
            out.append(v)
    for r in out:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
