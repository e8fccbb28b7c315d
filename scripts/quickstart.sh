#!/usr/bin/env bash
# The README's first command: install what is needed, build, prepare the built-in default corpus, run the main job.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install_deps.sh
./scripts/build.sh
./build/frontier prepare --out data/default
./build/frontier inspect --data data/default --seq-len 48
# The main job: train the quick-start model under its 60 s budget, then print val_bpb and the summary.
./build/frontier train --config configs/tiny.toml --data data/default
