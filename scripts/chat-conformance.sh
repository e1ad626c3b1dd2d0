#!/usr/bin/env bash
# Reads every .chat document in the folder given (another project's corpus,
# e.g. ../shared/conformance/flemma) with wield-chat, and prints for each
# whether writing it back changes a byte, its diagnostics and its tool
# calls. Exits non-zero when a round trip differs.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 FOLDER_OR_FILE..." >&2; exit 2; }
args=()
for a in "$@"; do args+=("$(cd "$(dirname "$a")" && pwd)/$(basename "$a")"); done
cargo run -q -p wield-chat --example check -- "${args[@]}"
