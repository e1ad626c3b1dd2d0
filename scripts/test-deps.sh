#!/usr/bin/env bash
# Installs the real peers the tests drive. Idempotent: skips what is present.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v rg >/dev/null 2>&1 || need_apt+=(ripgrep)
command -v bwrap >/dev/null 2>&1 || need_apt+=(bubblewrap)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    sudo apt-get update -qq
    sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  fi
fi
