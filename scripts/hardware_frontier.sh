#!/usr/bin/env bash
# The measurements behind docs/hardware-frontier.md (issue 34, part 4): `frontier advise` at one budget on the
# Wikipedia corpus for several hardware profiles of this CPU (an instruction-set tier at or below what it has, a
# thread count, a precision: advise --isa --threads --precision), so the best shape per profile can be compared.
# Each profile has its own step-time cache; the loss sweep is shared by the profiles of one precision (its points
# are fixed-step runs, bit-reproducible on any tier) where their step counts fall within 2x of each other.
# The architecture stage is off (--levers none): at 60 s it costs 7 full-budget runs per profile
# (docs/codesign.md "Architecture and recipe levers"); the shape and its step count are what moves with the profile.
#
#   scripts/hardware_frontier.sh [WIKI=data/wiki] [BUDGET=300] [PROFILES="avx2:1:fp32 avx512:1:fp32 amx:1:bf16"]
# Then: python3 scripts/hardware_frontier.py docs/hardware-frontier/*.txt --out docs/hardware-frontier.svg
# The default profiles run one thread each, so they differ by the arithmetic unit only (AVX2 FMA, AVX-512 FMA, AMX
# tiles). Step times should be measured on a quiet machine (the speed stage at the start of each profile; it is
# cached in $FRONTIER_CACHE/advise/speed.json per profile); the rest is in probe mode, whose results do not depend
# on the load, so a 1-thread profile's sweep can share the machine. About 15 minutes per profile at 300 s.
set -euo pipefail
cd "$(dirname "$0")/.."
WIKI="${1:-data/wiki}"
BUDGET="${2:-300}"
PROFILES="${3:-avx2:1:fp32 avx512:1:fp32 amx:1:bf16}"
F=${FRONTIER_BIN:-build/frontier}
OUT=docs/hardware-frontier
mkdir -p "$OUT"
SH="${FRONTIER_SHARED:-../shared}/data/corpus/wikipedia-en-2015"
[ -f "$WIKI/manifest.json" ] || "$F" prepare --train "$SH/wiki_0[0-6].jsonl.zst" --val "$SH/wiki_07.jsonl.zst" \
    --max-doc-bytes 2048 --out "$WIKI"
# The best two predicted shapes are trained at the full budget (the loss model ranks shapes of one length, not
# exactly: its leave-one-out error is printed). Sequence length 512 only: at 5 minutes T 256 was within 0.02 of
# T 512 at every depth (docs/codesign.md), and each length costs two more sweep runs per profile. Depth 6 bounds the search from above on the fastest profile.
C="--depths 1,2,3,4,6 --seq-lens 512 --lr-scales 1 --validate 2 --levers none"
for p in $PROFILES; do
  IFS=: read -r isa threads prec <<<"$p"
  name="$isa-${threads}t-$prec-$BUDGET"
  echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)" \
      | tee "$OUT/$name.txt"
  "$F" advise --budget "$BUDGET" --data "$WIKI" --out "$OUT/$name.toml" $C \
      --isa "$isa" --threads "$threads" --precision "$prec" | tee -a "$OUT/$name.txt"
  # Where the advised model's step goes on this profile: per-op time against the profile's roofline (compute- or
  # memory-bound), from a few profiled steps (a timing: a quiet machine again).
  FRONTIER_ISA="$isa" "$F" profile --config "$OUT/$name.toml" --set train.threads="$threads" \
      --set train.precision="$prec" --steps 3 --trace "" > "$OUT/$name-profile.txt"
done
