#!/usr/bin/env bash
# The main job in one command: build clawhdf5, save a handful of memories into a fresh store, search them.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
cargo build --release --quiet -p clawhdf5-backend
bin="${CARGO_TARGET_DIR:-target}/release/clawhdf5"
dir=$(mktemp -d)
store="$dir/demo.h5"
echo "== saving memories into $store"
$bin save --store "$store" --session onboarding "The user's name is Dana and she works as a nurse in Leeds."
$bin save --store "$store" --session onboarding "Dana is allergic to peanuts."
$bin save --store "$store" --session trip "Dana is planning a trip to Kyoto in April with her sister Mei."
$bin save --store "$store" --session trip --source user_correction "Actually the Kyoto trip moved to May."
$bin save --store "$store" --session music "Dana plays the cello in a community orchestra on Thursdays."
$bin save --store "$store" --session music "東京の友達はジャズが好きです。"
for q in "what is Dana allergic to" "when is the Kyoto trip" "which instrument does she play" "ジャズ"; do
  echo "== search: $q"
  $bin search --store "$store" -k 3 "$q"
done
echo "== stats"
$bin stats --store "$store"
echo "== the file is plain HDF5 ($store)"
