"""The table of scripts/variants.sh: one row per variant from its run's output (docs/variants/<B>s/<name>.txt).

    python3 scripts/variants_table.py OUT "name|config|sets" ...
"""
import json
import os
import re
import sys


def value(text, key):
    m = re.search(rf"^{key}:\s*(\S+)", text, re.M)
    return float(m.group(1)) if m else None


def main():
    out, variants = sys.argv[1], sys.argv[2:]
    rows, base = [], None
    for v in variants:
        name, cfg, sets = v.split("|")
        path = os.path.join(out, name + ".txt")
        if not os.path.exists(path):
            continue
        t = open(path).read()
        bpb = value(t, "val_bpb")
        if bpb is None:
            continue
        row = dict(name=name, cfg=os.path.basename(cfg), sets=sets or "-", bpb=bpb, steps=value(t, "num_steps"),
                   step_s=value(t, "probe_step_seconds"), tokens=value(t, "total_tokens_M"),
                   params=value(t, "num_params_M"), mfu=value(t, "mfu_percent"), se=value(t, "val_bpb_se"))
        paired = os.path.join(out, name + ".paired")  # scripts/variants_paired.sh
        m = re.search(r"^difference: ([-+0-9.]+)  \(paired standard error ([0-9.]+)", open(paired).read(), re.M) \
            if os.path.exists(paired) else None
        row["diff"], row["dse"] = (float(m.group(1)), float(m.group(2))) if m else (None, None)
        # Training loss over steps 41-60: the same batches in every run (same seed and data order), so a per-step
        # comparison free of the step count (the learning-rate schedule still follows each run's own length).
        budget = os.path.basename(out.rstrip("/")).rstrip("s")  # docs/variants/300s -> runs/variants-300 (from the root)
        log = os.path.join("runs", "variants-" + budget, name, "log.jsonl")
        try:
            losses = [json.loads(line)["loss"] for line in open(log)]
            row["loss41_60"] = sum(losses[40:60]) / 20 if len(losses) >= 60 else None
        except OSError:
            row["loss41_60"] = None
        rows.append(row)
        if name == "baseline":
            base = row
    print("| variant | keys | step (s) | steps | tokens (M) | params (M) | val_bpb (± sample s.e.) | vs baseline "
          "| paired difference (s.e.) | train loss, steps 41-60 |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        delta = f"{100 * (r['bpb'] - base['bpb']) / base['bpb']:+.2f}%" if base and r is not base else ""
        keys = r["sets"] if r["cfg"] == "baseline.toml" else r["cfg"]
        se = f" ± {r['se']:.4f}" if r["se"] else ""
        paired = f"{r['diff']:+.4f} ({r['dse']:.4f})" if r["diff"] is not None else ""
        loss = f"{r['loss41_60']:.4f}" if r.get("loss41_60") is not None else ""
        print(f"| {r['name']} | `{keys}` | {r['step_s']:.3f} | {r['steps']:.0f} | {r['tokens']:.2f} | "
              f"{r['params']:.2f} | {r['bpb']:.4f}{se} | {delta} | {paired} | {loss} |")


if __name__ == "__main__":
    main()
