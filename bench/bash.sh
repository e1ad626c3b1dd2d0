#!/usr/bin/env bash
# The bash tool against the raw shell, side by side in one run:
#   1 GiB of output (`yes | head -c 1G`) through `wield call bash` vs the same
#   pipeline to /dev/null: wall time and peak RSS (goals: RSS <= 32 MiB,
#   wall <= 3x the raw pipe), unsandboxed and in each sandbox backend, with
#   `... | cat > /dev/null` as the floor for any process reading the output;
#   spawn overhead of `wield call bash '{"command":"true"}'` without a sandbox,
#   with bubblewrap and with Landlock, vs `sh -c true` and vs a call that
#   spawns nothing (`wield call calculator`); and in a project tree of
#   2,000 directories with 20 nested repositories, with the git watch (the
#   look for hooks and programs a command sets in them) on and off.
# Uses hyperfine when installed (else a timed loop). Prints medians of RUNS
# runs (default 5) after a warm-up.
#
# Usage: bench/bash.sh        (env: RUNS=5, BENCH_DIR=/tmp/wield-bench-bash)
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-5}
BENCH_DIR=${BENCH_DIR:-/tmp/wield-bench-bash}
mkdir -p "$BENCH_DIR"
command -v jq >/dev/null || { echo "jq is required: apt-get install jq" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "GNU time is required for peak RSS: apt-get install time" >&2; exit 1; }

echo "== building the release binary"
cargo build --release -p wield-cli --quiet
WIELD=$PWD/target/release/wield

# Keep the user's configuration out of the measurement; the workspace is
# outside the temp dir so that every backend works the same way.
export HOME=$BENCH_DIR/home XDG_CONFIG_HOME=$BENCH_DIR/home/.config TMPDIR=$BENCH_DIR/tmp
WS=$BENCH_DIR/ws
mkdir -p "$HOME" "$TMPDIR" "$WS"
cd "$WS"
OUT=$BENCH_DIR/out

echo "machine: $(nproc) cores, $(uname -r), runs: $RUNS (median)"
"$WIELD" sandbox check | sed 's/^/  /'

OFF=(-y --set sandbox.enabled=false)
BWRAP=(--set sandbox.enabled=true --set 'sandbox.backend="bwrap"')
LANDLOCK=(--set sandbox.enabled=true --set 'sandbox.backend="landlock"')

# run_once CMD... : "microseconds peak_rss_kb" of one run, stdout to $OUT.
run_once() {
    local start end
    start=$(date +%s%N)
    /usr/bin/time -f '%M' -o "$BENCH_DIR/rss" "$@" > "$OUT"
    end=$(date +%s%N)
    echo "$(( (end - start) / 1000 )) $(tail -1 "$BENCH_DIR/rss")"
}

median_of() {
    run_once "$@" > /dev/null
    local times=() rsss=() t r
    for _ in $(seq "$RUNS"); do
        read -r t r < <(run_once "$@")
        times+=("$t"); rsss+=("$r")
    done
    local med='sort -n | awk "{ a[NR] = \$1 } END { print a[int((NR + 1) / 2)] }"'
    echo "$(printf '%s\n' "${times[@]}" | eval "$med") $(printf '%s\n' "${rsss[@]}" | eval "$med")"
}

printf '\n%-40s %10s %12s %8s\n' "1 GiB of output" "wall" "peak RSS" "vs raw"
read -r rt rm < <(median_of bash -c 'yes | head -c 1G > /dev/null')
printf '%-40s %8.3f s %9.1f MB %8s\n' "raw: yes | head -c 1G > /dev/null" "$(echo "$rt" | awk '{ print $1 / 1e6 }')" \
    "$(echo "$rm" | awk '{ print $1 / 1024 }')" "1.00x"
# Any reader of the command's output adds a pipe hop that `> /dev/null`
# does not have: `| cat` is that floor.
read -r ct cm < <(median_of bash -c 'yes | head -c 1G | cat > /dev/null')
awk -v l="raw + pipe: ... | cat > /dev/null" -v wt="$ct" -v wm="$cm" -v rt="$rt" 'BEGIN {
    printf "%-40s %8.3f s %9.1f MB %7.2fx\n", l, wt / 1e6, wm / 1024, wt / rt }'
for mode in OFF BWRAP LANDLOCK; do
    declare -n flags=$mode
    read -r wt wm < <(median_of "$WIELD" "${flags[@]}" call --json bash '{"command":"yes | head -c 1G"}')
    bytes=$(jq '.metadata.stdout_bytes' "$OUT")
    [ "$bytes" = 1073741824 ] || { echo "wrong byte count in $mode: $bytes" >&2; jq -c .metadata "$OUT" >&2; exit 1; }
    awk -v l="wield call bash ($(echo "$mode" | tr 'A-Z' 'a-z'))" -v wt="$wt" -v wm="$wm" -v rt="$rt" 'BEGIN {
        printf "%-40s %8.3f s %9.1f MB %7.2fx\n", l, wt / 1e6, wm / 1024, wt / rt }'
done

# A project tree for the git watch (the look at the repositories under the
# workspace around each call): 2,000 directories, 4 levels, 20 nested
# repositories. Made once; the same layout every run.
TREE=$BENCH_DIR/tree
if [ ! -f "$TREE/.done" ]; then
    rm -rf "$TREE"
    for a in $(seq 20); do for b in $(seq 10); do for c in $(seq 9); do
        mkdir -p "$TREE/a$a/b$b/c$c"
    done; done; git init -q "$TREE/a$a/b1"; done
    touch "$TREE/.done"
fi
TREE_DIRS=$(find "$TREE" -type d -not -path '*/.git/*' | wc -l)

echo
echo "spawn overhead (mean of many runs)"
if command -v hyperfine >/dev/null; then
    hyperfine -N --warmup 5 --runs 50 --export-json "$BENCH_DIR/spawn.json" \
        -n 'sh -c true' 'sh -c true' \
        -n 'wield call calculator' "$WIELD call calculator '{\"expression\":\"1\"}'" \
        -n 'wield call bash true (no sandbox)' "$WIELD -y --set sandbox.enabled=false call bash '{\"command\":\"true\"}'" \
        -n 'wield call bash true (bwrap)' "$WIELD --set sandbox.backend=\"bwrap\" call bash '{\"command\":\"true\"}'" \
        -n 'wield call bash true (landlock)' "$WIELD --set sandbox.backend=\"landlock\" call bash '{\"command\":\"true\"}'" \
        -n "bash true (bwrap), $TREE_DIRS-dir tree" "$WIELD -C $TREE --set sandbox.backend=\"bwrap\" call bash '{\"command\":\"true\"}'" \
        -n "  the same, git watch off" "$WIELD -C $TREE --set sandbox.backend=\"bwrap\" --set bash.git_watch=false call bash '{\"command\":\"true\"}'" \
        > /dev/null
    jq -r '.results[] | [.command, (.mean * 1000), (.stddev * 1000)] | @tsv' "$BENCH_DIR/spawn.json" |
        awk -F'\t' '{ printf "  %-36s %7.2f ms  (± %.2f)\n", $1, $2, $3 }'
else
    loop() { # label CMD...
        local label=$1 n=50 start end
        shift
        start=$(date +%s%N)
        for _ in $(seq $n); do "$@" > /dev/null; done
        end=$(date +%s%N)
        awk -v l="$label" -v us="$(( (end - start) / 1000 / n ))" 'BEGIN { printf "  %-36s %7.2f ms\n", l, us / 1000 }'
    }
    loop 'sh -c true' sh -c true
    loop 'wield call calculator' "$WIELD" call calculator '{"expression":"1"}'
    loop 'wield call bash true (no sandbox)' "$WIELD" "${OFF[@]}" call bash '{"command":"true"}'
    loop 'wield call bash true (bwrap)' "$WIELD" "${BWRAP[@]}" call bash '{"command":"true"}'
    loop 'wield call bash true (landlock)' "$WIELD" "${LANDLOCK[@]}" call bash '{"command":"true"}'
    loop "bash true (bwrap), $TREE_DIRS-dir tree" "$WIELD" -C "$TREE" "${BWRAP[@]}" call bash '{"command":"true"}'
    loop "  the same, git watch off" "$WIELD" -C "$TREE" "${BWRAP[@]}" --set bash.git_watch=false call bash '{"command":"true"}'
fi
