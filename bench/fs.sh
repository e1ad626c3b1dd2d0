#!/usr/bin/env bash
# File tools against the reference tools, side by side in one run:
#   grep (a literal and a regex) vs `rg -n`, checking both count the same matches;
#   glob '**/*.toml' vs `rg --files -g '*.toml'`;
#   read of 50 lines at line 1,000,000 of a 1 GB file vs `sed -n` (time and peak memory),
#   and the same read on a 10 MB file, to show memory does not grow with file size.
# Prints the median of RUNS runs (default 5) after one warm-up run, and the ratios.
#
# Usage: bench/fs.sh            (env: RUNS=5, BENCH_DIR=/tmp/wield-bench, CORPUS=<dir>)
# Generated data lives under BENCH_DIR, never in the repository.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-5}
BENCH_DIR=${BENCH_DIR:-/tmp/wield-bench}
REGISTRY_SRC=${CARGO_HOME:-$HOME/.cargo}/registry/src
mkdir -p "$BENCH_DIR"

command -v rg >/dev/null || { echo "ripgrep (rg) is required: apt-get install ripgrep" >&2; exit 1; }

echo "== building the release binary"
cargo build --release -p wield-cli --quiet
WIELD=$PWD/target/release/wield

# --- corpus -------------------------------------------------------------------
CORPUS=${CORPUS:-$BENCH_DIR/corpus}
if [ ! -d "$CORPUS" ]; then
    if [ -d "$REGISTRY_SRC" ]; then
        echo "== copying the cargo registry sources to $CORPUS"
        mkdir -p "$CORPUS"
        cp -r "$REGISTRY_SRC"/. "$CORPUS"/
    else
        echo "== no cargo registry at $REGISTRY_SRC: generating a corpus in $CORPUS"
        python3 - "$CORPUS" <<'PY'
import os, random, sys
root = sys.argv[1]
rng = random.Random(42)
words = ("fn main let mut impl struct enum match Some None Ok Err Result Error ParseError "
         "IoError self return use crate pub mod trait where async await loop while for in "
         "vec string len push into iter map filter collect unwrap expect clone").split()
for i in range(20000):
    d = os.path.join(root, f"crate{i // 200:03d}", "src", f"m{(i // 20) % 10}")
    os.makedirs(d, exist_ok=True)
    ext = ".toml" if i % 40 == 0 else ".rs"
    with open(os.path.join(d, f"file{i}{ext}"), "w") as f:
        for _ in range(rng.randint(20, 600)):
            f.write(" ".join(rng.choice(words) for _ in range(rng.randint(3, 14))) + "\n")
PY
    fi
fi
BIG=$BENCH_DIR/big.txt
MID=$BENCH_DIR/mid.txt
if [ ! -f "$BIG" ]; then
    echo "== generating a 1 GB file of numbered lines: $BIG"
    # 1,050,000 lines of 1,024 bytes.
    awk 'BEGIN { pad = sprintf("%1014s", ""); gsub(/ /, "x", pad);
                 for (i = 1; i <= 1050000; i++) printf "%08d %s\n", i, pad }' > "$BIG"
fi
[ -f "$MID" ] || head -c 10485760 "$BIG" > "$MID"

echo "corpus: $CORPUS ($(du -sh "$CORPUS" | cut -f1), $(find "$CORPUS" -type f | wc -l) files)"
echo "machine: $(nproc) cores, $(rg --version | head -1), runs: $RUNS (median)"

# Keep the user's configuration out of the measurement.
export HOME=$BENCH_DIR/home XDG_CONFIG_HOME=$BENCH_DIR/home/.config TMPDIR=$BENCH_DIR/tmp
mkdir -p "$HOME" "$TMPDIR"
OUT=$BENCH_DIR/out

# --- measurement --------------------------------------------------------------
# run_once CMD... : wall seconds and peak RSS (KB) of one run, stdout to $OUT.
run_once() {
    local start end rss
    start=$(date +%s%N)
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -f '%M' -o "$BENCH_DIR/rss" "$@" > "$OUT"
        rss=$(tail -1 "$BENCH_DIR/rss")
    else
        # No GNU time: sample the high-water mark from /proc while it runs.
        "$@" > "$OUT" &
        local pid=$! hwm=0 v
        while kill -0 "$pid" 2>/dev/null; do
            v=$(awk '/VmHWM/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
            [ -n "$v" ] && [ "$v" -gt "$hwm" ] && hwm=$v
            sleep 0.005
        done
        wait "$pid"
        rss=$hwm
    fi
    end=$(date +%s%N)
    echo "$(( (end - start) / 1000 )) $rss"
}

# median_of CMD... : "median_seconds median_rss_kb" over RUNS runs after a warm-up.
median_of() {
    run_once "$@" > /dev/null
    local times=() rsss=() t r
    for _ in $(seq "$RUNS"); do
        read -r t r < <(run_once "$@")
        times+=("$t"); rsss+=("$r")
    done
    local mt mr
    mt=$(printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
    mr=$(printf '%s\n' "${rsss[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
    echo "$mt $mr"
}

row() { # label wield_us wield_kb ref_us ref_kb
    awk -v l="$1" -v wt="$2" -v wm="$3" -v rt="$4" -v rm="$5" 'BEGIN {
        printf "%-34s %9.3f s %8.1f MB   %9.3f s %8.1f MB   %6.2fx\n", l, wt / 1e6, wm / 1024, rt / 1e6, rm / 1024, wt / rt }'
}

printf '\n%-34s %22s   %22s   %7s\n' "benchmark" "wield (time, peak RSS)" "reference" "ratio"

bench_grep() { # label pattern
    local label=$1 pattern=$2 args
    args=$(jq -cn --arg p "$pattern" '{pattern: $p, limit: 100000000}')
    read -r wt wm < <(median_of "$WIELD" -C "$CORPUS" call --json grep "$args")
    local wn; wn=$(jq '.metadata.matches' "$OUT")
    read -r rt rm < <(cd "$CORPUS" && median_of rg -n --no-require-git -e "$pattern")
    local rn; rn=$(wc -l < "$OUT")
    row "$label" "$wt" "$wm" "$rt" "$rm"
    if [ "$wn" = "$rn" ]; then echo "    matches: $wn (same as rg -n)"; else echo "    MATCH COUNTS DIFFER: wield $wn, rg $rn"; fi
}

bench_grep "grep literal 'fn main' vs rg -n" 'fn main'
bench_grep "grep regex vs rg -n" '[A-Z][a-z]+Error\b'

args=$(jq -cn '{pattern: "**/*.toml", limit: 100000000}')
read -r wt wm < <(median_of "$WIELD" -C "$CORPUS" call --json glob "$args")
wn=$(jq '.metadata.count' "$OUT")
read -r rt rm < <(cd "$CORPUS" && median_of rg --files --no-require-git -g '*.toml')
rn=$(wc -l < "$OUT")
row "glob '**/*.toml' vs rg --files" "$wt" "$wm" "$rt" "$rm"
if [ "$wn" = "$rn" ]; then echo "    files: $wn (same as rg --files)"; else echo "    FILE COUNTS DIFFER: wield $wn, rg $rn"; fi

bench_read() { # label file line
    local label=$1 file=$2 line=$3 args
    args=$(jq -cn --arg p "$file" --argjson o "$line" '{path: $p, offset: $o, limit: 50}')
    read -r wt wm < <(median_of "$WIELD" -C "$BENCH_DIR" call --json read "$args")
    local first; first=$(jq -r '.output | split("\n")[0][:24]' "$OUT")
    read -r rt rm < <(median_of sed -n "${line},$((line + 49))p;$((line + 49))q" "$file")
    row "$label" "$wt" "$wm" "$rt" "$rm"
    echo "    first line shown: $first ($(du -h "$file" | cut -f1) file)"
}

bench_read "read 50 lines @1,000,000 vs sed -n" "$BIG" 1000000
bench_read "read 50 lines @10,000 vs sed -n" "$MID" 10000
