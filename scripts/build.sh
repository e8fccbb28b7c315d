#!/usr/bin/env bash
# Configures and builds Frontier (Release, -O3 -march=native) into build/.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING="${BUILD_TESTING:-ON}" >/dev/null
cmake --build build -j"$(nproc)"
