#!/usr/bin/env bash
# Builds the three coder modules into coder-wasm/dist/ with Debian's rustc 1.63 (the rustup
# toolchain has no wasm32 target here). The outputs are committed; CI rebuilds and compares, so
# the build must be reproducible: fixed toolchain, remapped paths, no timestamps.
#   scalar.wasm   no SIMD: for runtimes without wasm SIMD
#   simd128.wasm  +simd128, i8x16.swizzle
#   relaxed.wasm  +simd128 built with --cfg shardgate_relaxed, then every i8x16.swizzle rewritten
#                 to i8x16.relaxed_swizzle by tools/relax-swizzle.mjs (sound: all our swizzle
#                 indices are < 16, where both instructions are defined to agree)
set -euo pipefail
cd "$(dirname "$0")"
RUSTC=${RUSTC:-/usr/bin/rustc}
if [ ! -d "$("$RUSTC" --print target-libdir --target wasm32-unknown-unknown 2>/dev/null)" ]; then
  echo "build.sh: $RUSTC has no wasm32 std; on Debian: apt-get install rustc libstd-rust-dev-wasm32 lld" >&2
  exit 1
fi
mkdir -p dist .tmp
build() { # name, extra rustc flags...
  local name=$1; shift
  "$RUSTC" --edition 2021 --crate-type cdylib --crate-name shardgate_coder \
    --target wasm32-unknown-unknown \
    -C opt-level=3 -C codegen-units=1 -C lto=fat -C panic=abort -C debuginfo=0 \
    -C strip=symbols \
    --remap-path-prefix "$PWD=coder-wasm" \
    "$@" -o ".tmp/$name.wasm" src/lib.rs
}
build scalar
# LLVM's auto-vectorizers are off in the SIMD builds: the kernels are written with explicit
# intrinsics, and auto-vectorized XXH64 lanes become i64x2.mul, which V8 emulates (XXH64 ran at
# 7 GB/s vectorized against 13 GB/s scalar here).
NOVEC=(-C llvm-args=-vectorize-loops=false -C llvm-args=-vectorize-slp=false)
build simd128 -C target-feature=+simd128 "${NOVEC[@]}"
build relaxed-src -C target-feature=+simd128 --cfg shardgate_relaxed "${NOVEC[@]}"
cp .tmp/scalar.wasm dist/scalar.wasm
cp .tmp/simd128.wasm dist/simd128.wasm
node tools/relax-swizzle.mjs .tmp/relaxed-src.wasm dist/relaxed.wasm
rm -rf .tmp
ls -l dist/*.wasm | awk '{print $5, $9}'
