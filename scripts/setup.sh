#!/usr/bin/env bash
# Shared set-up for scripts/run.sh and scripts/test.sh. Two build flavours:
#   debian  Debian's LibTorch 1.13 (CPU only), installed with apt-get; build tree build/
#   cuda    LibTorch from the PyTorch wheel on PyPI (CUDA-enabled, pinned below), installed into a
#           virtual environment inside the build tree; needs a CUDA toolkit (nvcc); build tree build-cuda/
# Usage: source scripts/setup.sh; torchprobe_setup FLAVOUR   (sets TORCHPROBE_BUILD_DIR)
#   TORCHPROBE_SKIP_APT=1  never call apt-get (only check)
#   CMAKE_PREFIX_PATH      debian flavour only: use another LibTorch (official archive, pip) instead
#   CUDA_HOME              CUDA toolkit for the cuda flavour (default /usr/local/cuda)
#   TORCHPROBE_DEBIAN_NVTX=OFF  build the debian flavour without NVTX ranges (CI does, so both
#                          configurations are built and tested; default ON where NVTX3 headers exist)

TORCHPROBE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The PyTorch wheel of the cuda flavour: the version the project's reference GPU host runs.
TORCHPROBE_TORCH_PIP_VERSION="${TORCHPROBE_TORCH_PIP_VERSION:-2.11.0}"
TORCHPROBE_DEBS=(cmake ninja-build g++ libopenblas0-pthread libbenchmark-dev libgtest-dev
                 libgmock-dev libfmt-dev nlohmann-json3-dev libcli11-dev libgloo-dev)

tp_log() { echo "torchprobe: $*" >&2; }

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

torchprobe_build() {
  local generator=() stamp="$TORCHPROBE_BUILD_DIR/.torchprobe-configure-args"
  command -v ninja >/dev/null && generator=(-G Ninja)
  # A tree configured with other arguments (another LibTorch) is configured afresh.
  if [[ -f "$stamp" && "$(cat "$stamp")" != "$*" ]]; then rm -f "$TORCHPROBE_BUILD_DIR/CMakeCache.txt"; fi
  if [[ ! -f "$TORCHPROBE_BUILD_DIR/CMakeCache.txt" ]]; then
    tp_log "configuring $TORCHPROBE_BUILD_DIR (Release)"
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
    debian)
      TORCHPROBE_BUILD_DIR="${TORCHPROBE_BUILD_DIR:-$TORCHPROBE_ROOT/build}"
      local nvtx=(-DTORCHPROBE_ENABLE_NVTX="${TORCHPROBE_DEBIAN_NVTX:-ON}")
      if [[ -n "${CMAKE_PREFIX_PATH:-}" ]]; then
        torchprobe_install_packages "${TORCHPROBE_DEBS[@]}"
        torchprobe_build "${nvtx[@]}" -DCMAKE_PREFIX_PATH="$CMAKE_PREFIX_PATH"
      else
        torchprobe_install_packages "${TORCHPROBE_DEBS[@]}" libtorch-dev
        torchprobe_build "${nvtx[@]}"
      fi
      ;;
    cuda)
      TORCHPROBE_BUILD_DIR="${TORCHPROBE_CUDA_BUILD_DIR:-$TORCHPROBE_ROOT/build-cuda}"
      local cuda_home="${CUDA_HOME:-/usr/local/cuda}"
      if [[ ! -x "$cuda_home/bin/nvcc" ]]; then
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
    *)
      tp_log "error: unknown flavour '$flavour' (debian or cuda)"
      exit 2
      ;;
  esac
}
