#!/usr/bin/env bash
# Layer 0 includes no LibTorch header: every object of torchprobe::base, ::report, ::history, ::explain and the
# torchprobe program, as the build recorded its header dependencies (`ninja -t deps`). A LibTorch header found
# on the system include path (Debian's libtorch-dev puts c10/ and torch/ in /usr/include) would otherwise
# compile here and break the light build on a machine without LibTorch.
# Usage: layer0_includes_test.sh BUILD_DIR. Exit 0 clean, 1 with the offending objects, 77 without Ninja.
set -uo pipefail
cd "$1" || exit 1
if [[ ! -f build.ninja ]] || ! command -v ninja > /dev/null; then
  echo "skip: not a Ninja build, so its header dependencies cannot be read"
  exit 77
fi
ninja -t deps | awk '
  /^[^ ].*: #deps/ { obj = $1; layer0 = obj ~ /\/(torchprobe_base|torchprobe_report|torchprobe_history|torchprobe_explain|torchprobe)\.dir\//; if (layer0) objects++ ; next }
  layer0 && /\/(c10|ATen|torch|caffe2)\// { bad[obj] = bad[obj] " " $1 }
  END {
    for (o in bad) { print "LibTorch header in layer 0: " o bad[o]; failed = 1 }
    if (objects == 0) { print "no layer-0 object in the recorded dependencies"; exit 1 }
    if (failed) exit 1
    print "layer 0: " objects " objects, no LibTorch header"
  }'
