#!/usr/bin/env bash
# Builds KenLM's `lmplz` and `build_binary` (n-gram LM estimation, which the
# `kenlm` Python module cannot do) into the venv's bin/, where
# `paraflax train-lm` finds them. Run from the checkout, after the venv
# exists (the README's set-up commands and .ci/run do):
#   launch/build_kenlm.sh [VENV]        (default: .venv)
# Idempotent: does nothing when both tools are there and run. Needs g++,
# cmake, zlib/bz2/lzma headers (on the image) and Debian's boost dev
# packages, which it installs with apt-get when missing (as root, or through
# sudo). The source is the kenlm sdist on the package index, the version
# constraints.txt pins for the Python module, so the two agree.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${1:-.venv}
bin=$venv/bin
tools=(lmplz build_binary)

built() {
  local t
  for t in "${tools[@]}"; do
    # lmplz --help exits 1; a binary that cannot load its libraries exits 127.
    [[ -x $bin/$t ]] || return 1
    "$bin/$t" --help >/dev/null 2>&1 || [[ $? -ne 127 ]] || return 1
  done
}

if built; then
  echo "build_kenlm: $bin/lmplz and $bin/build_binary already built" >&2
  exit 0
fi
[[ -x $bin/pip ]] || { echo "build_kenlm: no $bin/pip; create the venv" \
  "first (python3 -m venv $venv)" >&2; exit 1; }

# Boost: lmplz needs program_options, system, thread (test: CMake's find).
packages=(libboost-program-options-dev libboost-system-dev
  libboost-thread-dev libboost-test-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" \
    || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -eq 0 ]]; then
    sudo=()
  elif command -v sudo >/dev/null; then
    sudo=(sudo)
  else
    echo "build_kenlm: boost dev packages missing (${missing[*]}) and no" \
      "root or sudo; install them: apt-get install ${missing[*]}" >&2
    exit 1
  fi
  echo "build_kenlm: apt-get install ${missing[*]}" >&2
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

version=$(sed -n 's/^kenlm==//p' constraints.txt)
[[ -n $version ]] || { echo "build_kenlm: constraints.txt pins no" \
  "kenlm" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Only kenlm from source: ":all:" would also build its build-time cmake.
"$bin/pip" download -q --no-binary kenlm --no-deps -d "$work" \
  "kenlm==$version"
tar -xzf "$work"/kenlm-"$version".tar.gz -C "$work"
src=$(echo "$work"/kenlm-"$version")
cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  -DBUILD_TESTING=OFF >"$work/cmake.log" 2>&1 \
  || { cat "$work/cmake.log" >&2; exit 1; }
make -C "$work/build" -j2 "${tools[@]}" >"$work/make.log" 2>&1 \
  || { tail -50 "$work/make.log" >&2; exit 1; }
for t in "${tools[@]}"; do
  # Copy, then rename: a killed run never leaves a half binary that
  # `built` would take for a finished one.
  cp "$work/build/bin/$t" "$bin/.$t.tmp"
  mv -f "$bin/.$t.tmp" "$bin/$t"
done
echo "build_kenlm: built $bin/lmplz and $bin/build_binary (kenlm" \
  "$version)" >&2
