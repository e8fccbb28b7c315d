#!/usr/bin/env bash
# The README's first command: install what is needed, build, prepare the built-in default corpus, run the main job.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install_deps.sh
./scripts/build.sh
./build/frontier prepare --out data/default
./build/frontier inspect --data data/default --seq-len 48
if ./build/frontier --help | grep -q "^  train"; then
  ./build/frontier train --data data/default
else
  echo "quickstart: data/default is prepared. \`frontier train\` is not built yet (see README: Status)."
fi
