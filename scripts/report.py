#!/usr/bin/env python3
"""Writes README.md's results table from checked-in result files, so that no figure in it is typed by hand.

  python3 scripts/report.py            rewrite the table between <!-- results:begin --> and <!-- results:end -->
  python3 scripts/report.py --check    exit 1, with a diff, when README.md's table is not what the files give
                                       (the docs test, Docs.ReadmeResultsAreGenerated, runs this)
  python3 scripts/report.py --print    print the table

Sources, each row naming its file, machine and date:
  docs/bench-*.json                         `frontier bench --torch --json` (date from the file name)
  docs/codesign/30min/validations.jsonl     `frontier advise` validations (date from each entry's "when")
  docs/results/*.json                       converted from checked-in text outputs by the converters below

Converters (text output -> docs/results/NAME.json; the text file stays the record, the JSON names it):
  python3 scripts/report.py convert-advise docs/codesign/wiki-300.txt --date 2026-12-04 --out docs/results/advise-wiki-300.json
      `frontier advise` output: the machine line, the advice line, the `validate CONFIG ... measured X` lines and,
      when the architecture stage took levers, its decision line.
  python3 scripts/report.py convert-summary docs/results/quickstart-2026-12-06.txt --date 2026-12-06 \\
      --machine "Intel Xeon | avx512bf16 | 2 threads" --what "..." --out docs/results/quickstart-2026-12-06.json
      a `frontier train` summary (the `key: value` lines after `---`).

Standard library only.
"""
import argparse
import datetime
import difflib
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"


def load(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return json.load(f)


def load_jsonl(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def link(rel):
    return "[%s](%s)" % (os.path.basename(rel), rel)


# --- rows: each returns (result, figure, machine, date, source) ---------------------------------------------------

def row_quickstart(rel):
    d = load(rel)
    s = d["summary"]
    figure = "val_bpb %.4f (%s steps, %s, %s tokens/s)" % (float(s["val_bpb"]), s["num_steps"], s["precision"],
                                                         "{:,}".format(int(s["tokens_per_sec"])))
    return (d["what"], figure, d["machine"], d["date"], link(rel))


def row_advise(rel, what):
    d = load(rel)
    figure = "val_bpb %.4f (%s)" % (d["advice"]["measured"], d["advice"]["shape"])
    if "levers" in d:
        lv = d["levers"]
        figure = "val_bpb %.4f (%s + %s; mean of %d seeds); the shape alone %.4f: %.2f%% lower, %.0f s.e." % (
            lv["mean"], d["advice"]["shape"], lv["names"].replace("+", ", "), lv["seeds"], lv["base_mean"],
            100 * lv["paired_diff"] / lv["base_mean"], lv["paired_diff"] / lv["se"])
    for c in d["compare"]:
        figure += "; %s %.4f" % (os.path.basename(c["config"]), c["measured"])
    return (what % d["budget_s"], figure, d["machine"], d["date"], link(rel))


def row_validations(rel, what):
    rows = load_jsonl(rel)
    advice = [r for r in rows if r.get("advice")][-1]  # the last advice is the final one
    base = [r for r in rows if r["label"] == "configs/baseline.toml"][-1]
    day = datetime.datetime.fromtimestamp(advice["when"], datetime.timezone.utc).strftime("%Y-%m-%d")
    figure = "val_bpb %.4f (%s); baseline.toml %.4f" % (advice["val_bpb"], advice["shape"], base["val_bpb"])
    return (what % int(advice["budget"] // 60), figure, advice["machine"], day, link(rel))


def row_bench(rel, depth, precision):
    d = load(rel)
    m = d["machine"]
    t = [r for r in d["train"] if r["depth"] == depth and r["precision"] == precision][0]
    day = re.search(r"(\d{4}-\d{2}-\d{2})", rel).group(1)
    figure = "%s tokens/s, MFU %.1f%% of the %s peak, %.2fx PyTorch's best (%s)" % (
        "{:,}".format(round(t["tokens_per_sec"])), t["mfu_pct"], t.get("peak_unit", "unit's"), t["ratio_vs_torch_best"],
        t["torch_best"])
    machine = "%s | %s | %d threads | %s" % (m["cpu"], m["isa"], m["threads"], precision)
    what = "Training speed, depth %d (%.1fM parameters), T %d" % (depth, t["params_M"], t["seq_len"])
    return (what, figure, machine, day, link(rel))


ROWS = [
    lambda: row_quickstart("docs/results/quickstart-2026-12-06.json"),
    lambda: row_advise("docs/results/advise-default-60.json", "Advisor's pick for the built-in corpus, %d s (configs/tiny.toml)"),
    lambda: row_advise("docs/results/advise-wiki-300.json", "Advisor's pick for Wikipedia, %d s"),
    lambda: row_advise("docs/results/advise-wiki-300-arch.json", "Advisor's pick for Wikipedia, %d s, shape and levers"),
    lambda: row_validations("docs/codesign/30min/validations.jsonl", "Advisor's pick for Wikipedia, %d min"),
    lambda: row_bench("docs/bench-2026-12-03-s4.json", 8, "bf16"),
    lambda: row_bench("docs/bench-2026-12-07-s18d.json", 8, "bf16"),
    lambda: row_bench("docs/bench-2026-12-08-s21.json", 8, "fp32"),
]


def table():
    out = ["| result | figure | machine | date | source |", "|---|---|---|---|---|"]
    for make in ROWS:
        result, figure, machine, date, source = make()
        machine = machine.replace(" | ", ", ")  # the sources write "CPU | tier | threads"; | would split the cell
        out.append("| " + " | ".join((result, figure, machine, date, source)) + " |")
    return "\n".join(out)


def readme_block(text):
    b, e = text.find(BEGIN), text.find(END)
    if b < 0 or e < b:
        sys.exit("README.md has no %s ... %s markers" % (BEGIN, END))
    return b + len(BEGIN), e


# --- converters ------------------------------------------------------------------------------------------------------

def convert_advise(path, date):
    text = open(path, encoding="utf-8").read()
    machine = re.search(r"^advise: machine (.*?);", text, re.M).group(1)
    budget = float(re.search(r"^advise: budget ([\d.]+) s on (\S+)", text, re.M).group(1))
    data = re.search(r"^advise: budget [\d.]+ s on (\S+)", text, re.M).group(1)
    adv = re.search(r"^advice: (.*?), seq_len .*?measured ([\d.]+)", text, re.M)
    compare = [{"config": c, "measured": float(v)} for c, v in
               re.findall(r"^validate  (configs/\S+|docs/\S+\.toml)\s.*?measured ([\d.]+)", text, re.M)]
    d = {"source": os.path.relpath(os.path.abspath(path), ROOT), "date": date, "machine": machine,
         "budget_s": int(budget) if budget == int(budget) else budget, "data": data,
         "advice": {"shape": adv.group(1), "measured": float(adv.group(2))}, "compare": compare,
         "converted_by": "scripts/report.py convert-advise"}
    # The architecture stage's decision, when it took a combination of levers.
    lv = re.search(r"^(\S+): mean val_bpb ([\d.]+) vs the base's ([\d.]+) over (\d+) seed\(s\), paired difference "
                   r"([\d.]+) \+- ([\d.]+) \(s\.e\.\): taken", text, re.M)
    if lv:
        d["levers"] = {"names": lv.group(1), "mean": float(lv.group(2)), "base_mean": float(lv.group(3)),
                       "seeds": int(lv.group(4)), "paired_diff": float(lv.group(5)), "se": float(lv.group(6))}
    return d


def convert_summary(path, date, machine, what):
    lines = open(path, encoding="utf-8").read().split("\n")
    start = max(i for i, l in enumerate(lines) if l.strip() == "---")
    summary = {}
    for l in lines[start + 1:]:
        m = re.match(r"^(\w+):\s+(.*)$", l)
        if m:
            summary[m.group(1)] = m.group(2).strip()
    return {"source": os.path.relpath(os.path.abspath(path), ROOT), "date": date, "machine": machine,
            "what": what, "summary": summary, "converted_by": "scripts/report.py convert-summary"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--print", action="store_true")
    sub = ap.add_subparsers(dest="cmd")
    ca = sub.add_parser("convert-advise")
    ca.add_argument("txt")
    ca.add_argument("--date", required=True)
    ca.add_argument("--out", required=True)
    cs = sub.add_parser("convert-summary")
    cs.add_argument("txt")
    cs.add_argument("--date", required=True)
    cs.add_argument("--machine", required=True)
    cs.add_argument("--what", required=True)
    cs.add_argument("--out", required=True)
    a = ap.parse_args()

    if a.cmd:
        d = convert_advise(a.txt, a.date) if a.cmd == "convert-advise" else \
            convert_summary(a.txt, a.date, a.machine, a.what)
        with open(a.out, "w", encoding="utf-8") as f:
            f.write(json.dumps(d, indent=1, sort_keys=True) + "\n")
        return 0

    t = table()
    if a.print:
        print(t)
        return 0
    text = open(README, encoding="utf-8").read()
    b, e = readme_block(text)
    want = "\n" + t + "\n"
    if a.check:
        if text[b:e] == want:
            return 0
        sys.stdout.writelines(difflib.unified_diff(text[b:e].splitlines(True), want.splitlines(True),
                                                   "README.md (results table)", "scripts/report.py"))
        print("\nREADME.md's results table is not what scripts/report.py generates: run python3 scripts/report.py")
        return 1
    with open(README, "w", encoding="utf-8") as f:
        f.write(text[:b] + want + text[e:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
