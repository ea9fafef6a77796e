#!/usr/bin/env bash
# Data set (b) of the ANN benchmark: all-MiniLM-L6-v2 vectors of real English sentences, embedded once
# with our own embedder (the `clawhdf5 embed` command) and cached outside the repository.
#
#   scripts/bench/ann_real_data.sh [OUT_DIR]          # default OUT_DIR: ~/.cache/clawhdf5/ann-real
#   ANN_BASE=OUT_DIR/base.f32 ANN_QUERIES=OUT_DIR/queries.f32 scripts/bench/ann_compare.sh real
#
# Sentences: Debian package descriptions (apt's English `Translation-en` indexes, fetched into a private
# lists folder under OUT_DIR so the system's apt state is untouched, plus `apt-cache dumpavail`) and the
# LoCoMo dialogue turns (../shared/datasets/locomo), split into sentences and de-duplicated; sorted by
# SHA-256 of the folded text, the first ANN_REAL_QUERIES are the held-out queries and the next ANN_REAL_N
# the base (scripts/bench/ann_real_texts.py). Fewer base rows are written if there are not enough
# distinct sentences (the script says so).
#
# Env: ANN_REAL_N (default 100000), ANN_REAL_QUERIES (default 500), CLAWHDF5_BIN (an already built
#      `clawhdf5` binary; default: build it with `cargo build --release -p clawhdf5-backend`),
#      ANN_REAL_THREADS (embedding threads; default all cores).
# Outputs in OUT_DIR: base.txt / queries.txt (one sentence a line), base.f32 / queries.f32 (raw
# little-endian f32 rows, 384-d, unit length), texts.sha256. An interrupted embedding resumes.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="${1:-$HOME/.cache/clawhdf5/ann-real}"
N="${ANN_REAL_N:-100000}"
NQ="${ANN_REAL_QUERIES:-500}"
LOCOMO="$ROOT/../shared/datasets/locomo"
mkdir -p "$OUT/apt-lists/partial"

if ! compgen -G "$OUT/apt-lists/*Translation-en*" >/dev/null; then
  echo "ann_real_data: fetching apt's package lists with English descriptions into $OUT/apt-lists" >&2
  apt-get update -qq -o Dir::State::Lists="$OUT/apt-lists" -o Acquire::Languages=en >&2
fi
if ! compgen -G "$OUT/apt-lists/*Translation-en*" >/dev/null; then
  echo "ann_real_data: no Translation-en index was fetched (apt-get update failed?)" >&2
  exit 1
fi
[[ -d "$LOCOMO" ]] || { echo "ann_real_data: LoCoMo folder $LOCOMO is missing" >&2; exit 1; }

STAMP="n=$N queries=$NQ"
if [[ ! -f "$OUT/base.txt" || "$(cat "$OUT/params.txt" 2>/dev/null)" != "$STAMP" ]]; then
  rm -f "$OUT"/base.f32* "$OUT"/queries.f32*
  {
    for f in "$OUT"/apt-lists/*Translation-en*; do /usr/lib/apt/apt-helper cat-file "$f"; done
    apt-cache dumpavail
  } >"$OUT/descriptions.txt"
  python3 "$ROOT/scripts/bench/ann_real_texts.py" --out "$OUT" --n "$N" --queries "$NQ" \
    --locomo "$LOCOMO" "$OUT/descriptions.txt"
  echo "$STAMP" >"$OUT/params.txt"
fi
(cd "$OUT" && sha256sum base.txt queries.txt >texts.sha256)

BIN="${CLAWHDF5_BIN:-}"
if [[ -z "$BIN" ]]; then
  cargo build --quiet --release -p clawhdf5-backend --bin clawhdf5
  BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/clawhdf5"
fi
THREADS=()
[[ -n "${ANN_REAL_THREADS:-}" ]] && THREADS=(--threads "$ANN_REAL_THREADS")
for part in queries base; do
  if [[ ! -f "$OUT/$part.f32" ]]; then
    nice -n 10 python3 "$ROOT/scripts/bench/ann_real_embed.py" --bin "$BIN" "${THREADS[@]}" \
      "$OUT/$part.txt" "$OUT/$part.f32"
  fi
done
echo "rows: base $(wc -l <"$OUT/base.txt"), queries $(wc -l <"$OUT/queries.txt")" >&2
echo "ANN_BASE=$OUT/base.f32 ANN_QUERIES=$OUT/queries.f32"
