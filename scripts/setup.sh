#!/usr/bin/env bash
# Shared set-up for scripts/run.sh and scripts/test.sh. The build flavours:
#   light   layer 0 alone, without LibTorch (-DTORCHPROBE_WITH_LIBTORCH=OFF, LibTorch never looked for):
#           `torchprobe` explain/compare/report/history and their tests; build tree build-light/
#   debian  Debian's LibTorch 1.13 (CPU only), installed with apt-get; build tree build/
#   cuda    LibTorch from the PyTorch wheel on PyPI (CUDA-enabled, pinned below), installed into a
#           virtual environment inside the build tree; needs a CUDA toolkit (nvcc); build tree build-cuda/
#   asan    the debian flavour built by clang with AddressSanitizer + UndefinedBehaviorSanitizer, plus the
#           libFuzzer targets (tests/fuzz); build tree build-asan/ (scripts/test.sh only: its timings mean nothing)
# Usage: source scripts/setup.sh; torchprobe_setup FLAVOUR   (sets TORCHPROBE_BUILD_DIR)
#   TORCHPROBE_SKIP_APT=1  never call apt-get (only check)
#   CMAKE_PREFIX_PATH      debian flavour only: use another LibTorch (official archive, pip) instead
#   CUDA_HOME              CUDA toolkit for the cuda flavour (default /usr/local/cuda)
#   TORCHPROBE_FUZZ_SECONDS  asan flavour: how long each fuzz.* test runs (default 60)
#   TORCHPROBE_UNITY_BUILD=OFF  one source file per compile (default ON: unity builds, see torchprobe_build)
#   TORCHPROBE_DEBIAN_NVTX=OFF  build the debian and asan flavours without NVTX ranges (CI does, so both
#                          configurations are built and tested: cuda has them; default ON where NVTX3 headers exist)

TORCHPROBE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The PyTorch wheel of the cuda flavour: the version the project's reference GPU host runs.
TORCHPROBE_TORCH_PIP_VERSION="${TORCHPROBE_TORCH_PIP_VERSION:-2.11.0}"
# libsqlite3-dev: the performance history's store; chromium (headless) and its font, zlib1g-dev (decoding
# its screenshots): the dashboard's browser test.
TORCHPROBE_DEBS=(cmake ninja-build g++ libbenchmark-dev libgtest-dev
                 libgmock-dev libfmt-dev nlohmann-json3-dev libcli11-dev libgloo-dev libre2-dev
                 libsqlite3-dev zlib1g-dev chromium fonts-dejavu-core)
# Debian's LibTorch calls whatever libblas.so.3 is selected. OpenBLAS's OpenMP build runs in the OpenMP
# pool LibTorch uses; its pthreads build keeps a second pool that spins beside it (torchprobe pins that
# one to a single thread). Both are installed, so the tests cover both; the OpenMP build is selected.
TORCHPROBE_BLAS_DEBS=(libopenblas0-openmp libopenblas0-pthread)
# The multi-node test's simulated hosts: network namespaces and a veth pair (ip), own host names (unshare).
TORCHPROBE_DEBS+=(iproute2 util-linux)
# The hostile-input tables: the sqlite3 shell (a locked or altered history database), python3 (text planted in
# results files, a socket), iconv (UTF-16 logs, libc-bin).
TORCHPROBE_DEBS+=(sqlite3 python3)
# The light flavour's: no LibTorch, Google Benchmark, Gloo or network tools.
TORCHPROBE_LIGHT_DEBS=(cmake ninja-build g++ libgtest-dev libgmock-dev libfmt-dev nlohmann-json3-dev libcli11-dev
                       libre2-dev libsqlite3-dev zlib1g-dev chromium fonts-dejavu-core sqlite3 python3)

tp_log() { echo "torchprobe: $*" >&2; }

# The CUDA toolkit's nvcc, or nothing.
torchprobe_nvcc() {
  local nvcc="${CUDA_HOME:-/usr/local/cuda}/bin/nvcc"
  [[ -x "$nvcc" ]] && echo "$nvcc"
}

# Prints the flavours to build for a request, one per line: auto (light, cuda where a CUDA toolkit is
# found, otherwise one line on stderr says why not, then debian), all (light, cuda, debian and asan; a
# missing toolkit is an error), ci (light, cuda and asan: what CI runs, below), light, debian, cuda, asan.
# Exit 2 for an unknown request or a cuda flavour without a toolkit.
# ci leaves the plain debian flavour out: asan builds and tests the same sources against the same LibTorch
# 1.13 (with clang, under the sanitizers), cuda with gcc against LibTorch 2.x. A third LibTorch build and run
# cost CI ~25 of its 90 minutes on a 2-core host; what is left untested is gcc on the 1.13-only lines behind
# the device seam.
torchprobe_flavours() {
  local request="$1" toolkit="${CUDA_HOME:-/usr/local/cuda}"
  case "$request" in
    # cuda first where it runs: its venv holds the pinned PyTorch's torchrun, which the other flavours'
    # launcher tests use too (Debian's own torchrun is broken).
    # light first: on a fresh machine it builds before any LibTorch is installed.
    auto)
      echo light
      if [[ -n "$(torchprobe_nvcc)" ]]; then
        echo cuda
      else
        tp_log "skipping the cuda flavour: no CUDA toolkit (no nvcc at $toolkit/bin; set CUDA_HOME to test it)"
      fi
      echo debian
      ;;
    all|ci|cuda)
      if [[ -z "$(torchprobe_nvcc)" ]]; then
        tp_log "error: the cuda flavour needs a CUDA toolkit: no nvcc at $toolkit/bin (set CUDA_HOME)"
        return 2
      fi
      [[ "$request" != cuda ]] && echo light
      echo cuda
      [[ "$request" == all ]] && echo debian
      [[ "$request" != cuda ]] && echo asan
      ;;
    light|debian|asan) echo "$request" ;;
    *) tp_log "error: unknown flavour '$request' (auto, all, ci, light, debian, cuda or asan)"; return 2 ;;
  esac
}

torchprobe_install_packages() {
  local missing=() pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  if [[ "${TORCHPROBE_SKIP_APT:-0}" == 1 || "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null; then
    tp_log "error: missing packages: ${missing[*]}"
    tp_log "install them with: sudo apt-get install --no-install-recommends ${missing[*]}"
    exit 2
  fi
  tp_log "installing ${missing[*]} (apt-get; libtorch-dev pulls ~200 packages, this takes minutes)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Creates $TORCHPROBE_BUILD_DIR/torch-venv with the pinned CUDA wheel (pip's download cache makes
# later runs on the same machine quick) and prints LibTorch's CMake prefix.
torchprobe_pip_libtorch() {
  local venv="$TORCHPROBE_BUILD_DIR/torch-venv" want="$TORCHPROBE_TORCH_PIP_VERSION" have=""
  [[ -x "$venv/bin/python" ]] && have="$("$venv/bin/python" -c 'import torch;print(torch.__version__)' 2>/dev/null || true)"
  if [[ "${have%%+*}" != "$want" ]]; then
    python3 -c 'import venv, ensurepip' 2>/dev/null || torchprobe_install_packages python3-venv python3-pip
    tp_log "installing torch==$want (CUDA wheel, ~4.5 GB with its CUDA libraries) into $venv"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "torch==$want" >&2
  fi
  "$venv/bin/python" -W ignore -c 'import torch;print(torch.utils.cmake_prefix_path)'
}

# Points libblas.so.3, liblapack.so.3 and libopenblas.so.0 at OpenBLAS's OpenMP build (update-alternatives,
# as root); otherwise says how. All three: Debian's OpenMP libblas.so.3 is a thin interface over whichever
# libopenblas.so.0 is selected, and over the pthreads one it re-spreads every call over OpenMP's thread
# count in the pthreads pool. The programs check and warn at run time as well.
torchprobe_select_openmp_blas() {
  local arch want current
  arch="$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)"
  want="/usr/lib/$arch/openblas-openmp/libblas.so.3"
  [[ -e "$want" ]] || return 0
  current="$(readlink -f "/usr/lib/$arch/libblas.so.3" 2>/dev/null || true)"
  if [[ "$current" == "$(readlink -f "$want")" && "$(readlink -f "/usr/lib/$arch/libopenblas.so.0")" == \
        "$(readlink -f "/usr/lib/$arch/openblas-openmp/libopenblas.so.0")" ]]; then
    return 0
  fi
  if [[ "$(id -u)" == 0 && "${TORCHPROBE_SKIP_APT:-0}" != 1 ]]; then
    tp_log "selecting OpenBLAS's OpenMP build for libblas.so.3 and liblapack.so.3 (was $current)"
    update-alternatives --quiet --set "libblas.so.3-$arch" "$want"
    update-alternatives --quiet --set "liblapack.so.3-$arch" "/usr/lib/$arch/openblas-openmp/liblapack.so.3"
    update-alternatives --quiet --set "libopenblas.so.0-$arch" "/usr/lib/$arch/openblas-openmp/libopenblas.so.0"
  else
    tp_log "warning: libblas.so.3 is $current, not OpenBLAS's OpenMP build; CPU GEMMs outside LibTorch's parallel"
    tp_log "  regions will run on one thread. Select it with: for a in libblas.so.3 liblapack.so.3 libopenblas.so.0; do"
    tp_log "  sudo update-alternatives --set \$a-$arch /usr/lib/$arch/openblas-openmp/\$a; done"
  fi
}

torchprobe_build() {
  # TORCHPROBE_LAYER0_UNIT_TESTS=OFF (scripts/test.sh, for debian and cuda when light runs too) leaves the layer-0
  # unit tests out; a flavour's own arguments come after, so they could still override it.
  set -- -DTORCHPROBE_LAYER0_UNIT_TESTS="${TORCHPROBE_LAYER0_UNIT_TESTS:-ON}" "$@"
  # Unity builds (CMake's UNITY_BUILD, up to 8 sources of a target per compile): a library parses LibTorch's
  # headers (~20 s a file on a 2-core host) once per batch instead of once per file. TORCHPROBE_UNITY_BUILD=OFF
  # compiles one file at a time, so an edit rebuilds that file alone, not its batch.
  set -- -DCMAKE_UNITY_BUILD="${TORCHPROBE_UNITY_BUILD:-ON}" -DCMAKE_UNITY_BUILD_BATCH_SIZE=8 "$@"
  local generator=() stamp="$TORCHPROBE_BUILD_DIR/.torchprobe-configure-args"
  command -v ninja >/dev/null && generator=(-G Ninja)
  # A tree configured with other arguments (another LibTorch) is configured afresh.
  if [[ -f "$stamp" && "$(cat "$stamp")" != "$*" ]]; then rm -f "$TORCHPROBE_BUILD_DIR/CMakeCache.txt"; fi
  if [[ ! -f "$TORCHPROBE_BUILD_DIR/CMakeCache.txt" ]]; then
    tp_log "configuring $TORCHPROBE_BUILD_DIR (Release)"
    # Arguments after these (a flavour's) override them: the last -D of a variable wins.
    cmake -S "$TORCHPROBE_ROOT" -B "$TORCHPROBE_BUILD_DIR" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DTORCHPROBE_ENABLE_WARNINGS_AS_ERRORS=ON "$@" >/dev/null
    mkdir -p "$TORCHPROBE_BUILD_DIR" && echo "$*" > "$stamp"
  fi
  tp_log "building $TORCHPROBE_BUILD_DIR"
  cmake --build "$TORCHPROBE_BUILD_DIR" -j "$(nproc)"
}

torchprobe_setup() {
  local flavour="${1:-debian}"
  case "$flavour" in
    light)
      # LibTorch is never looked for, even where one is installed; cli.layer0_includes_no_libtorch checks that no
      # LibTorch header on the system include path slipped in either.
      TORCHPROBE_BUILD_DIR="${TORCHPROBE_LIGHT_BUILD_DIR:-$TORCHPROBE_ROOT/build-light}"
      torchprobe_install_packages "${TORCHPROBE_LIGHT_DEBS[@]}"
      torchprobe_build -DTORCHPROBE_WITH_LIBTORCH=OFF
      ;;
    debian)
      TORCHPROBE_BUILD_DIR="${TORCHPROBE_BUILD_DIR:-$TORCHPROBE_ROOT/build}"
      local nvtx=(-DTORCHPROBE_ENABLE_NVTX="${TORCHPROBE_DEBIAN_NVTX:-ON}")
      if [[ -n "${CMAKE_PREFIX_PATH:-}" ]]; then
        torchprobe_install_packages "${TORCHPROBE_DEBS[@]}" "${TORCHPROBE_BLAS_DEBS[@]}"
        torchprobe_select_openmp_blas
        torchprobe_build "${nvtx[@]}" -DCMAKE_PREFIX_PATH="$CMAKE_PREFIX_PATH"
      else
        torchprobe_install_packages "${TORCHPROBE_DEBS[@]}" "${TORCHPROBE_BLAS_DEBS[@]}" libtorch-dev
        torchprobe_select_openmp_blas
        torchprobe_build "${nvtx[@]}"
      fi
      ;;
    cuda)
      TORCHPROBE_BUILD_DIR="${TORCHPROBE_CUDA_BUILD_DIR:-$TORCHPROBE_ROOT/build-cuda}"
      local cuda_home="${CUDA_HOME:-/usr/local/cuda}"
      if [[ -z "$(torchprobe_nvcc)" ]]; then
        tp_log "error: the cuda flavour needs a CUDA toolkit: no nvcc at $cuda_home/bin (set CUDA_HOME)"
        exit 2
      fi
      export PATH="$cuda_home/bin:$PATH"
      torchprobe_install_packages "${TORCHPROBE_DEBS[@]}" python3
      mkdir -p "$TORCHPROBE_BUILD_DIR"
      local prefix
      prefix="$(torchprobe_pip_libtorch)"
      torchprobe_build -DCMAKE_PREFIX_PATH="$prefix" -DCUDAToolkit_ROOT="$cuda_home"
      ;;
    asan)
      # -O1 -g1: fast enough to run the whole suite, with file:line in every report.
      TORCHPROBE_BUILD_DIR="${TORCHPROBE_ASAN_BUILD_DIR:-$TORCHPROBE_ROOT/build-asan}"
      torchprobe_install_packages "${TORCHPROBE_DEBS[@]}" "${TORCHPROBE_BLAS_DEBS[@]}" libtorch-dev clang \
        libclang-rt-14-dev llvm
      torchprobe_select_openmp_blas
      torchprobe_build -DTORCHPROBE_ENABLE_NVTX="${TORCHPROBE_DEBIAN_NVTX:-ON}" -DCMAKE_C_COMPILER=clang \
        -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
        -DTORCHPROBE_SANITIZE=ON -DTORCHPROBE_ENABLE_FUZZ=ON -DTORCHPROBE_FUZZ_SECONDS="${TORCHPROBE_FUZZ_SECONDS:-60}"
      ;;
    *)
      tp_log "error: unknown flavour '$flavour' (light, debian, cuda or asan)"
      exit 2
      ;;
  esac
}
