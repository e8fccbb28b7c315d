#!/usr/bin/env bash
# Configures and builds Frontier (Release, -O3, a portable baseline plus per-tier kernels dispatched at run time) into
# build/, tests included. BUILD_TESTING=OFF ./scripts/build.sh skips the tests (scripts/quickstart.sh builds only the
# frontier target).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING="${BUILD_TESTING:-ON}" >/dev/null
cmake --build build -j"$(nproc)"
