#!/usr/bin/env bash
# What a `.chat` document costs over the agent loop: the same 20-step scenario
# (bench/agent_provider.py, the Responses streaming API, instant answers: 19
# shell commands, then a text answer) run by `wield run --headless` and by
# `wield chat FILE` on autopilot, side by side in one run, and by `wield chat`
# on a document that already holds about 1 MB of earlier conversation. Each
# step of the document cycle reads the file, parses it, writes the placeholder,
# the result and the streamed reply back atomically; the agent loop keeps the
# conversation in memory.
# Per variant, RUNS runs (default 5), taking turns, after a warm-up run each:
#   - wall time of the whole process (median over the runs);
#   - the time per step: from the end of one reply to the arrival of the next
#     request, measured by the provider (the shell command included; the
#     sandbox is the same for all), median and p90 over every step of every run.
# Goal (README): the document cycle adds at most a few milliseconds per step to
# the agent loop's, also on a 1 MB document.
#
# Usage: bench/chat.sh      (env: RUNS=5, BENCH_DIR=/tmp/wield-bench-chat)
# Needs python3, bash and git.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
BENCH_DIR=${BENCH_DIR:-/tmp/wield-bench-chat}
PROVIDER=$PWD/bench/agent_provider.py
TASK="Look around this project and tell me what it does."
command -v python3 >/dev/null || { echo "needs python3" >&2; exit 1; }

echo "== building the release binary"
cargo build --release -p wield-cli --quiet
WIELD=$PWD/target/release/wield

rm -rf "$BENCH_DIR"
mkdir -p "$BENCH_DIR/template/src" "$BENCH_DIR/home/.config/wield" "$BENCH_DIR/tmp" "$BENCH_DIR/runs"
BENCH_DIR=$(cd "$BENCH_DIR" && pwd -P)
printf '# stockroom\n\nReads the stock list and prints a report.\n' > "$BENCH_DIR/template/README.md"
printf 'def load(path):\n    return open(path).read().splitlines()\n' > "$BENCH_DIR/template/src/inventory.py"
git -C "$BENCH_DIR/template" init -q
git -C "$BENCH_DIR/template" add -A
git -C "$BENCH_DIR/template" -c user.name=bench -c user.email=bench@localhost commit -qm "stockroom"
# About 1 MB of earlier conversation, text only (the provider counts steps by
# the tool results a request carries).
python3 - "$BENCH_DIR/history.chat" <<'PY'
import sys
para = "The stock report lists every item with its count and price; " * 20 + "\n"
with open(sys.argv[1], "w") as f:
    for i in range(400):
        f.write(f"@You:\nQuestion {i}: what does line {i} of the report mean?\n\n")
        f.write(f"@Assistant:\n{para}\n```text\nwidget-{i},{i % 23},{1 + i % 9}.50\n```\n\n")
PY

export HOME=$BENCH_DIR/home XDG_CONFIG_HOME=$BENCH_DIR/home/.config TMPDIR=$BENCH_DIR/tmp BENCH_API_KEY=bench
unset WIELD_INCLUDE_TOOLS WIELD_EXCLUDE_TOOLS WIELD_PROFILE WIELD_AUDIT 2>/dev/null || true
source bench/bench_provider.sh

run_one() { # VARIANT NAME
  local variant=$1 base=$BENCH_DIR/runs/$2 ws=$BENCH_DIR/runs/$2.ws
  cp -r "$BENCH_DIR/template" "$ws"
  start_provider "$base.log"
  local started ended status=0
  started=$(date +%s.%N)
  case $variant in
    run) (cd "$ws" && "$WIELD" run --headless --yes -p "$TASK" > "$base.out" 2> "$base.err") || status=$? ;;
    chat | chat-1mb)
      { printf '```toml\nauto_approve = ["bash"]\n```\n'
        [ "$variant" = chat ] || cat "$BENCH_DIR/history.chat"
        printf '@You:\n%s\n' "$TASK"; } > "$ws/bench.chat"
      (cd "$ws" && "$WIELD" chat bench.chat > "$base.out" 2> "$base.err") || status=$?
      cp "$ws/bench.chat" "$base.out" ;;
  esac
  ended=$(date +%s.%N)
  stop_provider
  echo "$started $ended" > "$base.wall"
  echo "$status" > "$base.status"
  rm -rf "$ws"
}

variants=(run chat chat-1mb)
echo "== a warm-up run each, then $RUNS runs each, taking turns"
for v in "${variants[@]}"; do run_one "$v" "$v-warmup"; done
for i in $(seq "$RUNS"); do
  for v in "${variants[@]}"; do
    run_one "$v" "$v-$i"
    echo "$v run $i: $(awk '{printf "%.2f", $2 - $1}' "$BENCH_DIR/runs/$v-$i.wall") s, exit $(cat "$BENCH_DIR/runs/$v-$i.status")"
  done
done

python3 - "$BENCH_DIR/runs" "$RUNS" "${variants[@]}" <<'PY'
import json, math, statistics as st, sys
runs_dir, runs, variants = sys.argv[1], int(sys.argv[2]), sys.argv[3:]

def pct(xs, p):
    xs = sorted(xs)
    return xs[max(0, math.ceil(p / 100 * len(xs)) - 1)]

rows = {}
for v in variants:
    walls, gaps, problems = [], [], []
    for i in range(1, runs + 1):
        base = f"{runs_dir}/{v}-{i}"
        status = open(base + ".status").read().strip()
        began, ended = open(base + ".wall").read().split()
        conv = [json.loads(l) for l in open(base + ".log")]
        conv = [r for r in conv if r.get("shell")]
        answer = open(base + ".out", errors="replace").read()
        if status != "0" or len(conv) != 20 or "inventory tool" not in answer:
            problems.append(f"run {i}: exit {status}, {len(conv)} steps (see {base}.err)")
        walls.append(float(ended) - float(began))
        gaps += [(b["received"] - a["done"]) * 1000 for a, b in zip(conv, conv[1:])]
    rows[v] = (st.median(walls), st.median(gaps), pct(gaps, 90))
    for p in problems:
        print(f"{v}: {p}")

print()
print(f"{'':32}" + "".join(f"{v:>14}" for v in variants))
print(f"{'wall time, 20 steps (median)':32}" + "".join(f"{rows[v][0]:>12.2f} s" for v in variants))
print(f"{'per step, p50':32}" + "".join(f"{rows[v][1]:>11.1f} ms" for v in variants))
print(f"{'per step, p90':32}" + "".join(f"{rows[v][2]:>11.1f} ms" for v in variants))
base = rows["run"][1]
for v in variants[1:]:
    print(f"{v}: {rows[v][1] - base:+.1f} ms per step over the agent loop (p50)")
PY
