#!/usr/bin/env bash
# Installs the Rust toolchains the project names, skipping those present: the
# pinned one (rust-toolchain.toml) and the oldest supported one (Cargo.toml's
# `rust-version`, which .ci/run builds with). Prints the latter's name.
set -euo pipefail
cd "$(dirname "$0")/.."

pinned=$(sed -n 's/^channel *= *"\([^"]*\)".*/\1/p' rust-toolchain.toml)
msrv=$(sed -n 's/^rust-version *= *"\([^"]*\)".*/\1/p' Cargo.toml)
# rustup names releases by their full version: `rust-version = "1.95"` is 1.95.0.
[[ $msrv == *.*.* ]] || msrv=$msrv.0

ensure() {
  local want=$1
  local installed
  installed=$(rustup toolchain list)
  grep -q "^$want-" <<<"$installed" && return 0
  rustup toolchain install "$want" --profile minimal -c clippy -c rustfmt >&2 && return 0
  # Without a reachable release server, the machine's stable toolchain serves
  # when it is that very release (`rustup toolchain link` refuses release
  # names, so the link is made by hand where rustup keeps its toolchains).
  local stable host
  stable=$(rustup run stable rustc --version 2>/dev/null || true)
  if [[ $stable == "rustc $want "* ]]; then
    host=$(rustup run stable rustc -vV | sed -n 's/^host: //p')
    ln -s "$(rustup run stable rustc --print sysroot)" "${RUSTUP_HOME:-$HOME/.rustup}/toolchains/$want-$host"
    return 0
  fi
  echo "toolchain $want is not installed and could not be installed" >&2
  return 1
}

ensure "$pinned"
[ "$msrv" = "$pinned" ] || ensure "$msrv"
echo "$msrv"
