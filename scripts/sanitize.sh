#!/usr/bin/env bash
# Issue 17's bad-input checks (docs/fuzzing.md): builds build-san/ with clang, ASan + UBSan and libFuzzer
# (-DFRONTIER_SANITIZE=ON), then
#   1. replays every input kept in fuzz/regressions/<target>/ through its target: each once crashed a parser,
#   2. fuzzes every fuzz/<target>.cpp for FRONTIER_FUZZ_SECONDS (default 20) from its seeds (fuzz/corpus/<target>/
#      plus a real checkpoint made here), two targets at a time; new inputs go to build-san/fuzz-corpus/, never
#      into the tree,
#   3. runs a fast subset of the unit suite under ASan + UBSan (SUBSET below).
# Any finding makes it exit non-zero and print the input that caused it. FRONTIER_FUZZ_SECONDS=600 is the long run.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD="${FRONTIER_SAN_BUILD:-build-san}"
[[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"
FUZZ_SECONDS="${FRONTIER_FUZZ_SECONDS:-20}"
FUZZ_JOBS="${FRONTIER_FUZZ_JOBS:-2}"

t0=$(date +%s)
echo "[sanitize] building $BUILD (clang, ASan + UBSan, libFuzzer)"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ -DFRONTIER_SANITIZE=ON \
  -DBUILD_TESTING=ON >/dev/null
cmake --build "$BUILD" -j"$(nproc)" >"$BUILD/build.log" 2>&1 || { tail -40 "$BUILD/build.log"; exit 1; }
echo "[sanitize] built in $(($(date +%s) - t0)) s"

# Leaks count as findings; a sanitizer report stops the process with a stack trace. The fuzz targets and the CLI
# write only under TMPDIR, cleared here (a crashing target cannot remove its own scratch directory).
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:allocator_may_return_null=0:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
export TMPDIR="$BUILD/tmp"
rm -rf "$TMPDIR" "$BUILD/fuzz-crashes" "$BUILD/fuzz-logs" "$BUILD/fuzz-seeds"
mkdir -p "$TMPDIR" "$BUILD/fuzz-crashes" "$BUILD/fuzz-logs" "$BUILD/fuzz-seeds/checkpoint_fuzz"
TARGETS=$(cd fuzz && ls ./*_fuzz.cpp | sed 's|^\./||; s|\.cpp$||')

# 1. Regressions.
t1=$(date +%s)
fail=0
for t in $TARGETS; do
  dir="fuzz/regressions/$t"
  [ -d "$dir" ] && [ -n "$(ls -A "$dir")" ] || continue
  log="$BUILD/fuzz-logs/$t.regressions.log"
  if ! "$BUILD/fuzz/$t" -timeout=25 -rss_limit_mb=2048 -malloc_limit_mb=256 "$dir"/* >"$log" 2>&1; then
    echo "[sanitize] FAIL $t: regression input $(grep '^Running: ' "$log" | tail -1 | cut -d' ' -f2-)"
    tail -30 "$log"
    fail=1
  fi
done
[ "$fail" = 0 ] || exit 1
echo "[sanitize] regressions replayed in $(($(date +%s) - t1)) s"

# 2. Fuzzing. A real checkpoint of a tiny model joins the seeds (too large to commit): prepare + 2 training steps
# with the sanitized binary, which also runs prepare and train end to end under ASan + UBSan.
t2=$(date +%s)
seeds="$BUILD/fuzz-seeds"
tail -c +2 fuzz/corpus/corpus_fuzz/wiki_slice.jsonl >"$seeds/wiki.jsonl"  # the seed without its mode byte
if ! { "$BUILD/frontier" prepare --train "$seeds/wiki.jsonl" --val-every 2 --vocab-size 265 --out "$seeds/data" \
         --quiet &&
       "$BUILD/frontier" train --data "$seeds/data" --budget 60 --set model.vocab_size=265 --set model.depth=1 \
         --set model.dim=32 --set model.head_dim=32 --set model.seq_len=16 --set train.micro_batch=2 \
         --set eval.tokens=64 --set eval.batch=2 --set train.max_steps=2 --set train.peak_gflops=100 \
         --set train.run_dir="$seeds/run"; } >"$BUILD/fuzz-logs/seeds.log" 2>&1; then
  echo "[sanitize] FAIL: prepare + train of the tiny seed model under ASan + UBSan"
  tail -30 "$BUILD/fuzz-logs/seeds.log"
  exit 1
fi
cp "$seeds/run/model.ckpt" "$seeds/checkpoint_fuzz/tiny.ckpt"

fuzz_one() {  # target -> 0 if clean; prints one line of stats
  local t=$1 bin="$BUILD/fuzz/$1" log="$BUILD/fuzz-logs/$1.log"
  mkdir -p "$BUILD/fuzz-corpus/$t"
  local opts=() dirs=("$BUILD/fuzz-corpus/$t" "fuzz/corpus/$t")  # new inputs go to the first
  [ -d "$BUILD/fuzz-seeds/$t" ] && dirs+=("$BUILD/fuzz-seeds/$t")
  local dict
  dict=$(grep -o 'fuzz/dicts/[a-z_]*\.dict' "fuzz/$t.cpp" | head -1 || true)  # the target names its dictionary
  [ -n "$dict" ] && opts+=("-dict=$dict")
  if "$bin" "${opts[@]}" -max_total_time="$FUZZ_SECONDS" -timeout=25 -rss_limit_mb=2048 -malloc_limit_mb=256 \
      -print_final_stats=1 -artifact_prefix="$BUILD/fuzz-crashes/$t-" "${dirs[@]}" >"$log" 2>&1; then
    local runs cov
    runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | grep -o '[0-9]*$')
    cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1)
    echo "[sanitize] ok   $t: $runs runs, $cov"
  else
    echo "[sanitize] FAIL $t: $(grep -o 'Test unit written to .*' "$log" | sed 's/Test unit written to //' | tail -1)" \
      "(log: $log)"
    grep -E 'ERROR: |SUMMARY: |runtime error: |FRONTIER_CHECK|terminate called|what\(\)' "$log" | head -5
    return 1
  fi
}
export -f fuzz_one
export BUILD FUZZ_SECONDS
if ! printf '%s\n' $TARGETS | xargs -P "$FUZZ_JOBS" -I{} bash -c 'fuzz_one {}'; then
  echo "[sanitize] fuzzing found a bug: reproduce with $BUILD/fuzz/<target> <input>, fix it, and keep the input in" \
       "fuzz/regressions/<target>/"
  exit 1
fi
echo "[sanitize] fuzzed $(echo $TARGETS | wc -w) targets for ${FUZZ_SECONDS} s each in $(($(date +%s) - t2)) s"

# 3. A subset of the unit suite under ASan + UBSan: the suites that read outside input (config, corpus, tokenizer,
# shards, loader, prepare, ledger, calibration, CORE bundle), train, checkpoint, resume and evaluate a tiny model,
# and every reliability suite: 135 of 165 tests, 93 s on 2 cores (the whole suite: 295 s, docs/fuzzing.md). Left
# out, 436 of its 587 test-seconds: the kernel suites at every ISA tier (Isa, 113 s), Bench, the research loop end to
# end (Research; ResearchReliability stays), PrepareCli's kill-and-rerun, PrepareWikipedia's 25 MB corpus, Docs,
# the PyTorch / tiktoken / oneDNN peers (uninstrumented; oneDNN's threads also crash LeakSanitizer's tracer at
# exit) and Train.Bf16TrainsLikeFp32WithinSeedNoise (42 s of statistics).
SUBSET='^(Config|ModelShape|Corpus|Utf8|Base64|Sha256|AtomicFile|Tokenizer|BpeTrainer|RegexSplit|Shard|BestFitLoader'
SUBSET+='|Prepare|DefaultCorpus|ReadLedger|Calibrate|CorePrompts|CoreSpans|CoreBatch|EvalCore|EvalScore|GptInit'
SUBSET+='|OpsBackward|FusedOps|FlashAttention|Gemm|Sampler|Train|PolarExpress|PyRandom|ParserReliability'
SUBSET+='|TrainReliability|EvalReliability|ResearchReliability|DirLock|Subprocess|Safetensors|NanochatNames|Parquet'
SUBSET+='|ShardPlan|ScaleModel|Comm|TokenizerReliability|WorkLoss|InputReliability|Recipe)\.'
t3=$(date +%s)
ctest --test-dir "$BUILD" -R "$SUBSET" -E 'Train\.Bf16TrainsLikeFp32WithinSeedNoise|TokenizerReliability\.MillionsOfSpaces' -j"$(nproc)" \
  --output-on-failure --timeout 600
echo "[sanitize] unit subset in $(($(date +%s) - t3)) s; total $(($(date +%s) - t0)) s"
rm -rf "$TMPDIR"
