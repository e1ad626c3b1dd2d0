#!/usr/bin/env bash
# `wield run --headless` against OpenAI's Codex CLI (`codex exec`), side by side in
# one run, on the same 20-step scenario: a local scripted provider
# (bench/agent_provider.py, the Responses streaming API, instant answers) asks
# for 19 shell commands (`ls`, `cat`, `grep`, ... over a small Python project),
# one per step, then answers in text. Each agent gets its own fresh copy of the
# same workspace (a git repository) for every run, and its configuration from
# its home directory (`$XDG_CONFIG_HOME/wield/config.toml`, `$CODEX_HOME/config.toml`),
# so both workspaces hold the same files and every command prints the same output.
# Per agent, RUNS runs (default 5), the agents taking turns, after one warm-up
# run each that is not counted:
#   - wall time of the whole process (median over the runs), and how much of it
#     lies before the first request and after the last reply;
#   - the agent's own time per step: from the end of one reply to the arrival of
#     the next request, measured by the provider (running the command included);
#     median and p90 over every step of every run; and the same less the
#     command's own time as the agent reports it (wield's `tool.finished`
#     events, Codex's `succeeded in N ms` lines): the agent's loop alone
#     (Codex without its sandbox reports 0 ms for every command, so there this
#     line is the whole step);
#   - peak RSS of the agent's process (GNU time, median over the runs);
#   - the bytes of each request body: the first request (system prompt, tool
#     schemas, the task) and the mean per request over the run.
# Codex runs its native binary (the one its npm package ships; the package's
# Node launcher would only add a Node process), with its own sandbox
# (`workspace-write`, bubblewrap) and `approval_policy = "never"`, telemetry and
# update checks off; wield runs with its default sandbox and --yes.
# Goals (README): per-step overhead <= 1/5 of Codex's, peak RSS <= 1/2 of Codex's,
# request bytes per step <= Codex's.
#
# Usage: bench/agent.sh      (env: RUNS=5, BENCH_DIR=/tmp/wield-bench-agent, CODEX_VERSION=0.171.0,
#                             CODEX_SANDBOX=workspace-write or danger-full-access,
#                             WIELD_SANDBOX=auto or false: the agents without their sandboxes)
# Needs python3, bash, git and GNU time; Codex needs npm (installed into
# target/bench-deps/codex, never globally). Without Codex only wield runs.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-5}
BENCH_DIR=${BENCH_DIR:-/tmp/wield-bench-agent}
CODEX_VERSION=${CODEX_VERSION:-0.171.0}
CODEX_SANDBOX=${CODEX_SANDBOX:-workspace-write}
WIELD_SANDBOX=${WIELD_SANDBOX:-auto}
CODEX_DIR=$PWD/target/bench-deps/codex
CODEX_PKG=$CODEX_DIR/node_modules/@openai/codex
PROVIDER=$PWD/bench/agent_provider.py
TASK="Look around this project and tell me what it does."
command -v python3 >/dev/null && [ -x /usr/bin/time ] || { echo "needs python3 and GNU time (/usr/bin/time)" >&2; exit 1; }

echo "== building the release binary"
cargo build --release -p wield-cli --quiet
WIELD=("$PWD/target/release/wield")
[ "$WIELD_SANDBOX" = auto ] || WIELD+=(--set "sandbox.enabled=$WIELD_SANDBOX")

echo "== installing @openai/codex@$CODEX_VERSION into target/bench-deps/codex"
codex_skip=""
installed=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$CODEX_PKG/package.json" 2>/dev/null || true)
if [ "$installed" != "$CODEX_VERSION" ]; then
  if ! command -v npm >/dev/null; then
    codex_skip="npm is not installed"
  elif ! npm install --prefix "$CODEX_DIR" --no-audit --no-fund --loglevel=error \
      "@openai/codex@$CODEX_VERSION" >&2; then
    codex_skip="npm install @openai/codex@$CODEX_VERSION failed"
  fi
fi
CODEX=$(find "$CODEX_DIR/node_modules/@openai" -path '*/vendor/*/bin/codex' -type f 2>/dev/null | head -n 1 || true)
if [ -z "$codex_skip" ] && { [ -z "$CODEX" ] || ! "$CODEX" --version >/dev/null 2>&1; }; then
  codex_skip="the package has no native binary for this machine ($(uname -sm))"
fi
[ -z "$codex_skip" ] && echo "codex: $("$CODEX" --version)"

rm -rf "$BENCH_DIR"
mkdir -p "$BENCH_DIR/template" "$BENCH_DIR/home/.config/wield" "$BENCH_DIR/tmp" "$BENCH_DIR/runs"
BENCH_DIR=$(cd "$BENCH_DIR" && pwd -P)
# The workspace: a small Python project in a git repository.
python3 - "$BENCH_DIR/template" <<'PY'
import os, sys
root = sys.argv[1]
files = {
    "README.md": "# stockroom\n\nReads the stock list, prices it and prints a report.\n\n"
                 "    python -m src.report data/stock.csv\n",
    "setup.cfg": "[metadata]\nname = stockroom\nversion = 0.3.1\n\n[options]\npackages = src\n",
    "CHANGELOG.md": "# Changes\n\n" + "".join(
        f"## 0.{i // 3}.{i % 3}\n- change number {i}\n\n" for i in range(10)),
    "LICENSE": "MIT License\n\nCopyright (c) the stockroom authors\n\n"
               "Permission is hereby granted, free of charge, to any person obtaining a copy.\n",
    "src/__init__.py": "",
    "src/inventory.py": '"""The stock list."""\nimport csv\nfrom dataclasses import dataclass\n\n\n'
        "@dataclass\nclass Item:\n    name: str\n    count: int\n    unit_price: float\n\n\n"
        "def load(path):\n    with open(path, newline='') as f:\n"
        "        return [Item(r['name'], int(r['count']), float(r['price'])) for r in csv.DictReader(f)]\n\n\n"
        "def low_stock(items, threshold=5):\n    return [i for i in items if i.count < threshold]\n",
    "src/pricing.py": '"""Prices."""\nfrom .inventory import Item\n\nVAT = 0.2\n\n\n'
        "def value(item: Item) -> float:\n    return item.count * item.unit_price\n\n\n"
        "def with_vat(amount: float) -> float:\n    return round(amount * (1 + VAT), 2)\n\n\n"
        "def total(items) -> float:\n    return with_vat(sum(value(i) for i in items))\n",
    "src/report.py": '"""The report."""\nimport sys\n\nfrom .inventory import load, low_stock\n'
        "from .pricing import total\n\n\ndef main(path):\n    items = load(path)\n"
        "    print(f'{len(items)} items, worth {total(items):.2f}')\n"
        "    for item in low_stock(items):\n        print(f'low: {item.name} ({item.count})')\n"
        "    # TODO: sort the low-stock lines by count\n\n\n"
        "if __name__ == '__main__':\n    main(sys.argv[1])\n",
    "tests/test_inventory.py": "from src.inventory import Item, low_stock\nfrom src.pricing import total\n\n\n"
        "def test_low_stock():\n    items = [Item('a', 1, 2.0), Item('b', 9, 1.0)]\n"
        "    assert [i.name for i in low_stock(items)] == ['a']\n\n\n"
        "def test_total():\n    assert total([Item('a', 2, 5.0)]) == 12.0\n",
    "data/stock.csv": "name,count,price\n" + "".join(
        f"{['widget', 'gadget', 'sprocket'][i % 3]}-{i},{(i * 7) % 23},{1 + i % 9}.50\n"
        for i in range(40)),
}
for name, text in files.items():
    path = os.path.join(root, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
PY
git -C "$BENCH_DIR/template" init -q
git -C "$BENCH_DIR/template" add -A
git -C "$BENCH_DIR/template" -c user.name=bench -c user.email=bench@localhost commit -qm "stockroom"

export HOME=$BENCH_DIR/home XDG_CONFIG_HOME=$BENCH_DIR/home/.config TMPDIR=$BENCH_DIR/tmp
export CODEX_HOME=$BENCH_DIR/home/.codex BENCH_API_KEY=bench CODEX_MANAGED_BY_NPM=1
unset WIELD_INCLUDE_TOOLS WIELD_EXCLUDE_TOOLS WIELD_PROFILE WIELD_AUDIT OPENAI_API_KEY \
  OPENAI_BASE_URL ANTHROPIC_API_KEY GEMINI_API_KEY 2>/dev/null || true
mkdir -p "$CODEX_HOME"

# One provider per run; its port goes into the agents' configuration.
source bench/bench_provider.sh
start_agents_provider() { # LOG
  start_provider "$1"
  cat > "$CODEX_HOME/config.toml" <<EOF
model = "bench-model"
model_provider = "bench"
approval_policy = "never"
sandbox_mode = "$CODEX_SANDBOX"
check_for_update_on_startup = false

[model_providers.bench]
name = "bench"
base_url = "http://127.0.0.1:$port/v1"
env_key = "BENCH_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"
EOF
}

run_one() { # AGENT NAME: one run in a fresh workspace; prints nothing, leaves its files in runs/NAME.*
  local agent=$1 out=$BENCH_DIR/runs/$2 ws=$BENCH_DIR/runs/$2.ws status=0 start
  cp -a "$BENCH_DIR/template" "$ws"
  start_agents_provider "$out.log"
  start=$EPOCHREALTIME
  if [ "$agent" = wield ]; then
    (cd "$ws" && timeout 300 /usr/bin/time -f '%M' -o "$out.time" \
      "${WIELD[@]}" run --headless --yes --ephemeral --json -p "$TASK" > "$out.out" 2> "$out.err" < /dev/null) || status=$?
  else
    (cd "$ws" && timeout 300 /usr/bin/time -f '%M' -o "$out.time" \
      "$CODEX" exec --ephemeral --skip-git-repo-check --color never "$TASK" > "$out.out" 2> "$out.err" < /dev/null) || status=$?
  fi
  echo "$start $EPOCHREALTIME" > "$out.wall"
  stop_provider
  echo "$status" > "$out.status"
  rm -rf "$ws"
}

agents=(wield)
if [ -n "$codex_skip" ]; then
  echo "== Codex is left out: $codex_skip. wield runs alone."
else
  agents=(codex wield)
fi
sandboxes="wield: $("${WIELD[@]}" sandbox check 2>/dev/null | awk '$1 == "configured" {print $2}' || echo "?")"
[ -n "$codex_skip" ] || sandboxes+="; codex: $CODEX_SANDBOX"
echo "== sandboxes: $sandboxes"
echo "== a warm-up run each, then $RUNS runs each of the 20-step scenario, taking turns"
for agent in "${agents[@]}"; do run_one "$agent" "$agent-warmup"; done
for i in $(seq "$RUNS"); do
  for agent in "${agents[@]}"; do
    run_one "$agent" "$agent-$i"
    echo "$agent run $i: $(awk '{printf "%.2f", $2 - $1}' "$BENCH_DIR/runs/$agent-$i.wall") s, exit $(cat "$BENCH_DIR/runs/$agent-$i.status")"
  done
done

python3 - "$BENCH_DIR/runs" "$RUNS" "${agents[@]}" <<'PY'
import json, math, re, statistics as st, sys
runs_dir, runs, agents = sys.argv[1], int(sys.argv[2]), sys.argv[3:]

def command_ms(agent, base):
    """Each command's own time, as the agent reports it: wield's `tool.finished`
    events, Codex's `succeeded in 105ms` lines."""
    if agent == "wield":
        events = (json.loads(l) for l in open(base + ".out") if l.startswith("{"))
        return [e["duration_ms"] for e in events if e.get("type") == "tool.finished"]
    text = open(base + ".err", errors="replace").read()
    return [float(n) * (1000 if unit == "s" else 1) for n, unit in
            re.findall(r"(?:succeeded|exited \d+) in ([0-9.]+)(ms|s):", text)]


def pct(xs, p):
    xs = sorted(xs)
    return xs[max(0, math.ceil(p / 100 * len(xs)) - 1)]

figures = {}
for agent in agents:
    walls, rss, gaps, own, firsts, per_req, steps, outside, problems = [], [], [], [], [], [], [], [], []
    for i in range(1, runs + 1):
        base = f"{runs_dir}/{agent}-{i}"
        status = open(base + ".status").read().strip()
        began, ended = open(base + ".wall").read().split()
        wall = float(ended) - float(began)
        try:
            kb = open(base + ".time").read().split()[-1]
        except (OSError, IndexError):
            kb = "0"
        log = [json.loads(l) for l in open(base + ".log")]
        conv = [r for r in log if r.get("shell")]
        answer = open(base + ".out", errors="replace").read()
        if status != "0" or len(conv) != 20 or "inventory tool" not in answer:
            problems.append(f"run {i}: exit {status}, {len(conv)} steps, "
                            f"answer {'given' if 'inventory tool' in answer else 'missing'} (see {base}.err)")
        others = len(log) - len(conv)
        if others:
            problems.append(f"run {i}: {others} other requests "
                            f"({', '.join(sorted({r['path'] for r in log if not r.get('shell')}))})")
        walls.append(float(wall))
        rss.append(int(kb) / 1024)
        run_gaps = [(b["received"] - a["done"]) * 1000 for a, b in zip(conv, conv[1:])]
        gaps += run_gaps
        commands = command_ms(agent, base)
        if len(commands) == len(run_gaps):
            own += [g - c for g, c in zip(run_gaps, commands)]
        else:
            problems.append(f"run {i}: {len(commands)} command times for {len(run_gaps)} steps")
        if conv:
            firsts.append(conv[0]["bytes"])
            per_req.append(sum(r["bytes"] for r in conv) / len(conv))
            steps.append(len(conv))
            outside.append(float(wall) - (conv[-1]["done"] - conv[0]["received"]))
        tools = conv[0]["tools"] if conv else []
        tools_bytes = conv[0]["tools_bytes"] if conv else 0
    figures[agent] = {
        "wall_s": st.median(walls), "rss_mb": st.median(rss),
        "step_p50_ms": st.median(gaps) if gaps else float("nan"),
        "step_p90_ms": pct(gaps, 90) if gaps else float("nan"),
        "own_p50_ms": st.median(own) if own else float("nan"),
        "own_p90_ms": pct(own, 90) if own else float("nan"),
        "first_bytes": st.median(firsts) if firsts else 0,
        "bytes_per_request": st.median(per_req) if per_req else 0,
        "steps": st.median(steps) if steps else 0,
        "outside_s": st.median(outside) if outside else float("nan"),
        "tools": len(tools), "tools_bytes": tools_bytes,
    }
    for p in problems:
        print(f"{agent}: {p}")

print()
cols = agents + (["ratio"] if len(agents) == 2 else [])
print(f"{'':44}" + "".join(f"{c:>14}" for c in cols))
rows = [
    ("wall time (median of runs)", "wall_s", "{:.2f} s"),
    ("requests (steps) per run", "steps", "{:.0f}"),
    ("agent time per step, p50", "step_p50_ms", "{:.1f} ms"),
    ("agent time per step, p90", "step_p90_ms", "{:.1f} ms"),
    ("  less the command's own time, p50", "own_p50_ms", "{:.1f} ms"),
    ("  less the command's own time, p90", "own_p90_ms", "{:.1f} ms"),
    ("start to 1st request + last reply to exit", "outside_s", "{:.3f} s"),
    ("peak RSS (median of runs)", "rss_mb", "{:.1f} MB"),
    ("first request body", "first_bytes", "{:,.0f} B"),
    ("  of which tool schemas", "tools_bytes", "{:,.0f} B"),
    ("tools offered", "tools", "{:.0f}"),
    ("request body, mean per request", "bytes_per_request", "{:,.0f} B"),
]
for label, key, fmt in rows:
    line = f"{label:44}" + "".join(f"{fmt.format(figures[a][key]):>14}" for a in agents)
    if len(agents) == 2 and figures["wield"][key]:
        line += f"{figures['codex'][key] / figures['wield'][key]:>13.2f}x"
    print(line)
if len(agents) == 2:
    w, c = figures["wield"], figures["codex"]
    print("(ratio: codex / wield)")
    print(f"goal: per-step overhead <= 1/5 of Codex's (p50): "
          f"{'met' if w['step_p50_ms'] * 5 <= c['step_p50_ms'] else 'NOT met'} "
          f"({w['step_p50_ms']:.1f} ms against {c['step_p50_ms']:.1f} ms)")
    print(f"goal: peak RSS <= 1/2 of Codex's: {'met' if w['rss_mb'] * 2 <= c['rss_mb'] else 'NOT met'}")
    print(f"goal: request bytes per step <= Codex's: "
          f"{'met' if w['bytes_per_request'] <= c['bytes_per_request'] else 'NOT met'}")
PY
