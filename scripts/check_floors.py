#!/usr/bin/env python3
"""No include goes up a floor: the folder map of docs/architecture.md, checked against the code.

Every folder of src/ (and apps/, tools/) sits on one floor. A file may include its own folder and any folder on a
lower floor; never a higher floor, and never a sibling on its own floor (siblings stay independent, so either
can move without the other). This script reads every `#include "..."` in src/, apps/ and tools/, maps both
ends to folders, and exits 1 naming each file:line and include that breaks the rule. It also fails when a folder of
src/ is on no floor, and when the floor table in docs/architecture.md differs from FLOORS below: the map is
defined here, once, and the page must say the same.

    python3 scripts/check_floors.py          # CTest runs it (test check_floors, label fast)
    python3 scripts/check_floors.py --map    # each folder's floor and the lower folders it really includes

Standard library only.
"""

import os
import re
import sys

# Lowest first. Folders on one floor do not include each other. Keep docs/architecture.md's table in step.
FLOORS = [
    ["util"],                                   # status, files, hashing, rng, bf16, the cache directory
    ["config", "reference"],                    # TOML configs and schemas; scalar reference ops (header-only)
    ["kernels"],                                # fast kernels per ISA tier, checked against reference/
    ["calibrate"],                              # the machine's measured ceilings
    ["autograd"],                               # the tape and the differentiable ops over kernels/
    ["model"],                                  # the GPT: shapes, parameters, forward, sampler
    ["optim"],                                  # Muon + AdamW
    ["dist"],                                   # data-parallel pieces: comm, gradient exchange, shard plan
    ["tokenizer"],                              # BPE training and encoding
    ["data"],                                   # corpus readers, prepare, shards, loader
    ["eval"],                                   # CORE and scoring
    ["train"],                                  # a training run, checkpoints, identities
    ["export", "profile", "bench", "research"],  # tools over training: formats, profiles, benchmarks, loops
    ["advise", "arena"],                        # advise uses research; the arena scores submissions
    ["apps", "tools"],                          # the CLI; standalone measuring programs
]

# Upward includes left in the tree, one line each with its reason:
#     ("src/<folder>/<file>", "<included path>"): "why it cannot go yet",
# Empty: there are none. An exception that no longer occurs is an error, so the list cannot rot.
EXCEPTIONS = {
}

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCE = (".h", ".hpp", ".cpp", ".cc")
DOC = os.path.join("docs", "architecture.md")


def floor_of():
    return {folder: i for i, floor in enumerate(FLOORS) for folder in floor}


def folder_of(rel):
    """The folder of a path relative to ROOT: src/<folder>/..., apps/... or tools/..."""
    parts = rel.split("/")
    if parts[0] in ("apps", "tools"):
        return parts[0]
    return parts[1] if parts[0] == "src" and len(parts) > 2 else None


def source_files():
    for top in ("src", "apps", "tools"):
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, top)):
            dirnames.sort()
            for name in sorted(filenames):
                if name.endswith(SOURCE):
                    yield os.path.relpath(os.path.join(dirpath, name), ROOT).replace(os.sep, "/")


def target_folder(rel, inc, src_folders):
    """The folder an include names: src/<first component>/ (the include root), else the including file's own
    directory; None for a header outside the tree (a vendored or system header in quotes)."""
    first = inc.split("/")[0]
    if "/" in inc and first in src_folders:
        return first
    local = os.path.normpath(os.path.join(os.path.dirname(rel), inc)).replace(os.sep, "/")
    if os.path.exists(os.path.join(ROOT, local)):
        return folder_of(local)
    return None


def doc_floors():
    """docs/architecture.md's floor table: rows `| <floor> | `a/`, `b/` | ... |` after the floors marker."""
    path = os.path.join(ROOT, DOC)
    if not os.path.exists(path):
        return None
    rows, in_table = {}, False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if "<!-- floors:" in line:
                in_table = True
                continue
            if in_table:
                m = re.match(r"^\|\s*(\d+)\s*\|([^|]*)\|", line)
                if m:
                    rows[int(m.group(1))] = re.findall(r"`([a-z0-9_]+)/?`", m.group(2))
                elif rows and not line.startswith("|"):
                    break
    return [rows.get(i, []) for i in range(max(rows) + 1)] if rows else []


def main():
    show_map = "--map" in sys.argv[1:]
    floors = floor_of()
    src = os.path.join(ROOT, "src")
    src_folders = {d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d))}
    errors, n_files, n_includes, used_exceptions = [], 0, 0, set()
    edges = {}
    for folder in sorted(src_folders - floors.keys()):
        errors.append(f"src/{folder}/ is on no floor: add it to FLOORS in scripts/check_floors.py and {DOC}")
    for rel in source_files():
        here = folder_of(rel)
        if here not in floors:
            continue
        n_files += 1
        with open(os.path.join(ROOT, rel), encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                inc = m.group(1)
                there = target_folder(rel, inc, src_folders)
                if there is None or there == here:
                    continue
                n_includes += 1
                edges.setdefault(here, set()).add(there)
                if there not in floors:
                    continue  # reported above as a folder on no floor
                if floors[there] < floors[here]:
                    continue
                if (rel, inc) in EXCEPTIONS:
                    used_exceptions.add((rel, inc))
                    continue
                how = "a higher floor" if floors[there] > floors[here] else "a sibling on its own floor"
                errors.append(f'{rel}:{lineno}: includes "{inc}": {here}/ (floor {floors[here]}) may not '
                              f"include {there}/ (floor {floors[there]}, {how}); move the code down or pass "
                              "it in")
    for rel, inc in sorted(EXCEPTIONS.keys() - used_exceptions):
        errors.append(f'exception {rel} -> "{inc}" no longer occurs: remove it from EXCEPTIONS')
    documented = doc_floors()
    if documented is None:
        errors.append(f"{DOC} is missing: it holds the floor table this script checks")
    elif documented != FLOORS:
        errors.append(f"{DOC}'s floor table {documented} differs from FLOORS {FLOORS}: make them the same")

    if show_map:
        for i, floor in reversed(list(enumerate(FLOORS))):
            for folder in floor:
                below = sorted(edges.get(folder, ()), key=lambda d: (-floors.get(d, -1), d))
                print(f"{i:3d}  {folder:10s} -> {' '.join(below)}")
    for e in errors:
        print(f"check_floors: {e}", file=sys.stderr)
    if errors:
        return 1
    print(f"check_floors: {n_files} files, {n_includes} includes across folders, none going up "
          f"({len(EXCEPTIONS)} listed exceptions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
