# Runs one libFuzzer target for a bounded time on a copy of its committed seed corpus:
#   cmake -DFUZZER=exe -DSEEDS=dir -DWORK=dir -DSECONDS=n -P run_fuzzer.cmake
# New inputs go to WORK/corpus (the committed seeds stay as they are), a crash, leak or timeout leaves
# its input in WORK/ and fails the test; -timeout=10: one input taking > 10 s counts as a hang.
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/corpus")
execute_process(COMMAND "${FUZZER}" "${WORK}/corpus" "${SEEDS}" -max_total_time=${SECONDS} -timeout=10
                        -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 -artifact_prefix=${WORK}/
                RESULT_VARIABLE rc)
file(GLOB findings "${WORK}/crash-*" "${WORK}/leak-*" "${WORK}/timeout-*" "${WORK}/oom-*")
if(NOT rc EQUAL 0 OR findings)
  message(FATAL_ERROR "the fuzzer found a failure (exit ${rc}); reproduce with: ${FUZZER} ${findings}")
endif()
