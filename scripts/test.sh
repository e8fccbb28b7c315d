#!/usr/bin/env bash
# The README's second command: install what is needed, build, run the whole test suite (CTest + GoogleTest).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install_deps.sh
./scripts/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)"
./scripts/sanitize.sh  # ASan + UBSan build, fuzz regressions and a short fuzz of every parser (docs/fuzzing.md)
