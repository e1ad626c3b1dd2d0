#!/usr/bin/env bash
# wield's MCP client's round trip to a local (stdio) server: CALLS (default
# 2,000) sequential `tools/call` through `McpClients`, as `wield call` and
# `wield mcp serve` make them (the `mcp_client_bench` example of wield-mcp),
# to a server that does no work (`mcp_bench floor`: every request answered
# at once), so the time is the client's and the pipe's. Replies of 100 bytes
# and of 19 KB (bench/mcp.sh's read); ROUNDS (default 3) connections each,
# the figures the medians over the rounds.
#
# Usage: bench/mcp-client.sh        (env: CALLS=2000, ROUNDS=3)
set -euo pipefail
cd "$(dirname "$0")/.."

CALLS=${CALLS:-2000}
ROUNDS=${ROUNDS:-3}

echo "== building the client and the no-work server"
cargo build --release -p wield-mcp --example mcp_bench --example mcp_client_bench --quiet
FLOOR=$PWD/target/release/examples/mcp_bench
CLIENT=$PWD/target/release/examples/mcp_client_bench

for bytes in 100 19000; do
    runs=()
    for _ in $(seq "$ROUNDS"); do
        runs+=("$("$CLIENT" "$CALLS" floor '{}' -- "$FLOOR" floor "$bytes")")
    done
    printf '%s\n' "${runs[@]}" | python3 -c '
import json, statistics, sys
runs = [json.loads(line) for line in sys.stdin]
median = lambda key: statistics.median(r[key] for r in runs)
p50, p99 = median("p50_us"), median("p99_us")
print(f"reply of {sys.argv[1]:>5} bytes: p50 {p50:6.1f} us, p99 {p99:7.1f} us")
' "$bytes"
done
