#!/usr/bin/env bash
# The README's second command: install what is needed, build, run the whole test suite (CTest + GoogleTest).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install_deps.sh
./scripts/build.sh
# Every test, both labels (`fast` and `slow`, CMakeLists.txt); the developer loop is `ctest --test-dir build -L fast`
# (docs/architecture.md).
ctest --test-dir build --output-on-failure -j"$(nproc)"
./scripts/sanitize.sh  # ASan + UBSan build, fuzz regressions and a short fuzz of every parser (docs/fuzzing.md)
