#!/bin/bash
# A stand-in for Nsight Compute's ncu, for scripts/profile.sh's ncu mode on hosts without a GPU: it answers
# --help, "profiles" (writes the .ncu-rep named by --export; runs nothing), and on --import prints a raw-page CSV in
# ncu's layout (a header row, a units row, a row per kernel; thousands separators as ncu may print them) whose rows
# depend on the --nvtx-include filter: forward matches its push/pop form, backward only the "on top" form (so the
# script's fallback is exercised), h2d nothing (a memcpy is no kernel). FAKE_NCU_EMPTY=forward: forward matches nothing.
args="$*"
if [[ "$args" == *"--help"* ]]; then echo "  --nvtx-push-pop-scope arg    (thread, process)"; exit 0; fi
if [[ "$args" == *"--export"* ]]; then
  while [[ $# -gt 0 ]]; do [[ "$1" == --export ]] && out="$2"; shift; done
  echo "stand-in report" > "$out.ncu-rep"
  exit 0
fi
if [[ "$args" == *"--print-summary"* ]]; then echo "per-nvtx summary"; exit 0; fi
echo '"ID","Process ID","Kernel Name","thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg","gpu__time_duration.sum"'
echo '"","","","","nsecond"'
row() { echo "\"$1\",\"1\",\"kernel_$1\",\"1 \"\"torchprobe:phase:none:none:none:none:none:none\"\"\",\"$2\""; }
filter=""; set -- $args
while [[ $# -gt 0 ]]; do [[ "$1" == --nvtx-include ]] && filter="$2"; shift; done
case "$filter" in
  "") row 0 1,500; row 1 2500; row 2 3000; row 3 4000; row 4 5000 ;;
  "torchprobe@forward/") [[ "${FAKE_NCU_EMPTY:-}" == forward ]] || { row 0 1,500; row 1 2500; } ;;
  "torchprobe@backward]") row 2 3000 ;;
  "torchprobe@loss/") row 3 4000 ;;
  "torchprobe@optimizer/") row 4 5000 ;;
esac
exit 0
