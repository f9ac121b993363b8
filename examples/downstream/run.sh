#!/usr/bin/env bash
# tinyops' golden tests, run by jaxport's compat harness (installed from a checkout or a wheel of jaxport, see docs/downstream.md).
#
#   ./run.sh record [pytest arguments]   record a new dated golden entry per case into golden/
#   ./run.sh replay [pytest arguments]   replay every entry against the installed jax and jaxlib
#   ./run.sh build                       only compile the optional native kernel
#
# Both record and replay first compile tinyops/native/softsign.cc when a C++ compiler and jax's
# FFI headers are present; without them the native case is left out, with the reason printed.
# The `jaxport` and `python3` on PATH are used (override with $JAXPORT, $PYTHON, $CXX).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
python="${PYTHON:-python3}"
jaxport="${JAXPORT:-jaxport}"
cxx="${CXX:-g++}"

build_native() {
  local src="$here/tinyops/native/softsign.cc"
  local lib="$here/tinyops/native/libtinyops_native.so"
  if ! command -v "$cxx" >/dev/null 2>&1; then
    echo "run.sh: native kernel skipped: no C++ compiler ($cxx) on PATH" >&2
    return 0
  fi
  local include built_for jax_version
  # A kernel built against another jax's FFI headers may not register with this one: the
  # library is built again when the source changed or another jax is installed. The installed
  # version is read from the package's metadata, which spares importing jax when nothing is
  # to be built.
  jax_version="$("$python" -c 'import importlib.metadata; print(importlib.metadata.version("jax"))')"
  built_for="$(cat "$lib.jax" 2>/dev/null || true)"
  if [ "$lib" -nt "$src" ] && [ "$built_for" = "$jax_version" ]; then
    return 0
  fi
  include="$("$python" -c '
import os, jax.ffi
d = jax.ffi.include_dir()
print(d if os.path.isfile(os.path.join(d, "xla", "ffi", "api", "ffi.h")) else "")')"
  if [ -z "$include" ]; then
    echo "run.sh: native kernel skipped: this jax ships no FFI headers (jax.ffi.include_dir())" >&2
    return 0
  fi
  "$cxx" -std=c++17 -O2 -shared -fPIC -isystem "$include" "$src" -o "$lib"
  echo "$jax_version" > "$lib.jax"
}

action="${1:-}"
case "$action" in
  build)
    build_native
    ;;
  record|replay)
    shift
    build_native
    exec "$jaxport" "$action" --project "$here" "$@"
    ;;
  *)
    echo "usage: $0 record|replay|build [pytest arguments]" >&2
    exit 2
    ;;
esac
