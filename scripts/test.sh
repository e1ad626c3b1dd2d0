#!/usr/bin/env bash
# Runs the whole test suite on a fresh machine: installs the real peers the
# tests drive (ripgrep, bubblewrap, the Python MCP SDK, Node packages), then
# runs every test with cargo-nextest (or cargo test where nextest is absent),
# with the `wield` binary's test hooks (`WIELD_TEST_APPROVER`,
# `WIELD_DEBUG_TOOLS`), which a normal build does not have.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/test-deps.sh

if command -v cargo-nextest >/dev/null 2>&1; then
  # .config/nextest.toml: slow-test timeouts and the process-heavy suites' groups.
  cargo nextest run --workspace --no-fail-fast --features wield-cli/test-hooks
  # The runtime as an embedder builds it without Lua and MCP.
  cargo nextest run -p wield-runtime --no-fail-fast --no-default-features --features web,memory
  # nextest does not run doctests.
  cargo test --workspace --doc
else
  cargo test --workspace --no-fail-fast --features wield-cli/test-hooks
  cargo test -p wield-runtime --no-fail-fast --no-default-features --features web,memory
fi
