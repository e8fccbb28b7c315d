#!/usr/bin/env bash
# The README's first command: install what is needed, build the `frontier` binary only (the tests are built by
# scripts/test.sh, which runs them), prepare the built-in default corpus, run the main job (the quick-start model
# under its 60 s budget). Prints each stage's time and, at the end, what to try next.
#
# FRONTIER_BUILD_DIR (default build) is the CMake build directory. The run goes to runs/quickstart, replaced by the
# next quick start (--force).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${FRONTIER_BUILD_DIR:-build}"
start=$(date +%s)
stage_start=$start
stage() {  # stage NAME: the time since the previous stage ended
  local now; now=$(date +%s)
  echo "[quickstart] $1: $((now - stage_start)) s (total $((now - start)) s)"
  stage_start=$now
}

echo "[quickstart] 1/4 install (apt + npm; a second run only checks)"
./scripts/install_deps.sh
stage "install"

echo "[quickstart] 2/4 build: the frontier binary only, tests off (load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs)"
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)" --target frontier
stage "build"

echo "[quickstart] 3/4 prepare the built-in default corpus (Brown + nlp-corpus) into data/default"
"$BUILD_DIR"/frontier prepare --out data/default
"$BUILD_DIR"/frontier inspect --data data/default --seq-len 48
stage "prepare"

echo "[quickstart] 4/4 train configs/tiny.toml for its 60 s budget, then val_bpb and the summary"
"$BUILD_DIR"/frontier train --config configs/tiny.toml --data data/default --set train.run_dir=runs/quickstart --force
stage "train"

cat <<EOF
[quickstart] done in $(( $(date +%s) - start )) s: the model is runs/quickstart/model.ckpt
What next:
  $BUILD_DIR/frontier sample --checkpoint runs/quickstart/model.ckpt --prompt "The jury said" --tokens 40
  $BUILD_DIR/frontier train --config configs/tiny.toml --set model.mlp=swiglu --set train.run_dir=runs/swiglu --force
  $BUILD_DIR/frontier profile --config configs/tiny.toml --steps 2 --trace runs/tiny-trace.json
The whole test suite (it builds the tests): ./scripts/test.sh
Guides: docs/guide/participant.md (compete), docs/guide/organiser.md (host a competition).
EOF
