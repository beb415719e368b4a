#!/bin/bash
# A stand-in for Nsight Compute's ncu, for scripts/profile.sh's ncu mode on hosts without a GPU, behaving as the
# real one did on an H100 (2026-11-27): it answers --help, "profiles" (writes the .ncu-rep named by --export; runs
# nothing), refuses --nvtx together with --import as that ncu did, and on --import --page raw prints FAKE_NCU_RAW:
# the raw page that ncu exported there (tests/fixtures/profile/h100-ncu-raw.csv: net's training step, every kernel
# with its NVTX stack, thousands separators as ncu prints them). FAKE_NCU_EMPTY=forward: the forward range's
# kernels are left out (as if that range never reached the profiler).
args="$*"
if [[ "$args" == *"--help"* ]]; then
  # Long, as the real help is: a reader that closes the pipe early must still see the option.
  for i in $(seq 200); do echo "  --option-$i    filler"; done
  echo "  --nvtx-push-pop-scope arg    (thread, process)"
  exit 0
fi
if [[ "$args" == *"--export"* ]]; then
  while [[ $# -gt 0 ]]; do [[ "$1" == --export ]] && out="$2"; shift; done
  echo "stand-in report" > "$out.ncu-rep"
  exit 0
fi
if [[ "$args" == *"--import"* && " $args " == *" --nvtx "* ]]; then
  echo "==ERROR== Invalid option --nvtx specified for --import"
  echo "Use --help for further details."
  exit 1
fi
if [[ "$args" == *"--print-summary"* ]]; then echo "per-nvtx summary"; exit 0; fi
if [[ "${FAKE_NCU_EMPTY:-}" == forward ]]; then grep -v 'torchprobe:forward:' "${FAKE_NCU_RAW:?}"; else cat "${FAKE_NCU_RAW:?}"; fi
