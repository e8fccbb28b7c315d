#!/usr/bin/env bash
# Configures and builds Frontier (Release, -O3, a portable baseline plus per-tier kernels dispatched at run time) into build/.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING="${BUILD_TESTING:-ON}" >/dev/null
cmake --build build -j"$(nproc)"
