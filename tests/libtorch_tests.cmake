# The tests of layer 1 (LibTorch), included by tests/CMakeLists.txt, which defines torchprobe_test,
# torchprobe_cli_error and torchprobe_cli_rc and holds the LibTorch-free tests.

torchprobe_test(cifar10_test)
torchprobe_test(batcher_test)
torchprobe_test(device_test LIBS nlohmann_json::nlohmann_json)
# It counts the process's busy threads: alone on the machine, so another test's load cannot hide a third.
torchprobe_test(blas_test PROPERTIES RUN_SERIAL TRUE)
torchprobe_test(measure_test)
torchprobe_test(trust_test LIBS nlohmann_json::nlohmann_json)
torchprobe_test(models_test)
torchprobe_test(train_test LIBS nlohmann_json::nlohmann_json)
torchprobe_test(loss_scaler_test)
if(TORCHPROBE_HAS_DIST)
  torchprobe_test(dist_test LIBS torchprobe::dist torchprobe::report)
endif()
# LibTorch's data_parallel header compiles only against a CUDA LibTorch; its replicate and
# parallel_apply run on CPU devices, so the test runs without a GPU.
if(TORCHPROBE_HAS_CUDA)
  torchprobe_test(replicate_test)
endif()
torchprobe_test(ops_test LIBS nlohmann_json::nlohmann_json)
torchprobe_test(diagnostics_test LIBS torchprobe::diagnostics nlohmann_json::nlohmann_json)
torchprobe_test(memory_test LIBS torchprobe::diagnostics PROPERTIES ${torchprobe_env_under_a_cap})
# The real CPU OOM runs in a child: the torchprobe program's hidden `diagnose memory --child`.
target_compile_definitions(memory_test PRIVATE TORCHPROBE_CLI_PATH="$<TARGET_FILE:torchprobe>")
add_dependencies(memory_test torchprobe)
torchprobe_test(suite_test LIBS torchprobe::bench_suite torchprobe::report nlohmann_json::nlohmann_json)
if(TORCHPROBE_HAS_DIST)
  torchprobe_test(gpu_test LABEL gpu EACH_CASE LIBS torchprobe::dist torchprobe::diagnostics)
else()
  torchprobe_test(gpu_test LABEL gpu EACH_CASE LIBS torchprobe::diagnostics)
endif()
# `ctest -L gpu` must select every Gpu.* test (scripts/gpu_session.sh relies on it), checked on any host.
add_test(NAME cli.gpu_label_selects_every_gpu_test COMMAND ${CMAKE_COMMAND} -DCTEST=${CMAKE_CTEST_COMMAND}
  -DBUILD_DIR=${CMAKE_BINARY_DIR} -DGPU_TEST=$<TARGET_FILE:gpu_test> -P ${CMAKE_CURRENT_SOURCE_DIR}/check_gpu_label.cmake)
set_tests_properties(cli.gpu_label_selects_every_gpu_test PROPERTIES LABELS cli)

# NVTX: the recorder is an NVTX injection library; the test runs with NVTX_INJECTION64_PATH set.
add_executable(nvtx_test nvtx_test.cpp)
target_link_libraries(nvtx_test PRIVATE torchprobe::core GTest::gtest GTest::gtest_main ${CMAKE_DL_LIBS})
torchprobe_warnings(nvtx_test)
if(TORCHPROBE_HAS_NVTX)
  add_library(torchprobe_nvtx_recorder MODULE nvtx_recorder.cpp)
  target_link_libraries(torchprobe_nvtx_recorder PRIVATE ${TORCHPROBE_NVTX_TARGET})
  torchprobe_warnings(torchprobe_nvtx_recorder)
  add_test(NAME nvtx.ranges COMMAND nvtx_test)
  set_tests_properties(nvtx.ranges PROPERTIES LABELS unit
    ENVIRONMENT "NVTX_INJECTION64_PATH=$<TARGET_FILE:torchprobe_nvtx_recorder>")
else()
  add_test(NAME nvtx.disabled COMMAND nvtx_test)
  set_tests_properties(nvtx.disabled PROPERTIES LABELS unit)
endif()

# The command-line programs, end to end: exit codes and the one-line errors.
add_test(NAME cli.devices COMMAND torchprobe devices)
set_tests_properties(cli.devices PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION
  "LibTorch +[0-9]+\\.[0-9]+.*LibTorch threads +[0-9]+ intra-op, [0-9]+ inter-op.*BLAS.*BLAS threading +(openmp|pthreads|sequential|unknown)")
add_test(NAME cli.devices_json COMMAND torchprobe devices --json)
set_tests_properties(cli.devices_json PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "\"libtorch_version\"")
# A real reference BLAS, loaded through LD_LIBRARY_PATH (Debian's libtorch links libblas.so.3):
# the inventory must name it and warn, without touching the system's alternatives.
set(reference_blas /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/blas/libblas.so.3)
if(NOT TORCHPROBE_HAS_CUDA AND EXISTS ${reference_blas})
  file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/reference-blas)
  file(CREATE_LINK ${reference_blas} ${CMAKE_CURRENT_BINARY_DIR}/reference-blas/libblas.so.3 SYMBOLIC)
  add_test(NAME cli.devices_reference_blas COMMAND ${CMAKE_COMMAND} -E env
    LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/reference-blas $<TARGET_FILE:torchprobe> devices)
  set_tests_properties(cli.devices_reference_blas PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION
    "BLAS +reference BLAS \\(netlib\\).*WARNING: LibTorch is using the unoptimised reference BLAS.*apt-get install libopenblas0-openmp")
endif()
# OpenBLAS's pthreads build (its own pool beside LibTorch's), forced in the same way: torchprobe pins it,
# and the process still has no more busy threads than configured.
set(pthreads_blas /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-pthread)
if(NOT TORCHPROBE_HAS_CUDA AND EXISTS ${pthreads_blas}/libblas.so.3)
  add_test(NAME unit.threads_with_pthreads_openblas COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${pthreads_blas}
    TORCHPROBE_EXPECT_BLAS_THREADING=pthreads $<TARGET_FILE:blas_test> --gtest_filter=Threads.*)
  set_tests_properties(unit.threads_with_pthreads_openblas PROPERTIES LABELS unit RUN_SERIAL TRUE)
  add_test(NAME cli.devices_pthreads_openblas COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${pthreads_blas}
    $<TARGET_FILE:torchprobe> devices --threads 2)
  set_tests_properties(cli.devices_pthreads_openblas PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION
    "BLAS threading +pthreads: its own thread pool, 1 thread \\(pinned by torchprobe\\).*WARNING: .*pinned to 1 thread.*libopenblas0-openmp")
  # Debian's OpenMP interface over the pthreads core (libopenblas.so.0 left on the other alternative):
  # every call re-spreads over OpenMP's thread count in the pthreads pool, so no pin holds; it must be named.
  set(openmp_blas /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp)
  if(EXISTS ${openmp_blas}/libblas.so.3)
    set(mixed_blas ${CMAKE_CURRENT_BINARY_DIR}/mixed-openblas)
    file(MAKE_DIRECTORY ${mixed_blas})
    file(CREATE_LINK ${openmp_blas}/libblas.so.3 ${mixed_blas}/libblas.so.3 SYMBOLIC)
    file(CREATE_LINK ${pthreads_blas}/libopenblas.so.0 ${mixed_blas}/libopenblas.so.0 SYMBOLIC)
    add_test(NAME cli.devices_mixed_openblas COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${mixed_blas}
      $<TARGET_FILE:torchprobe> devices --threads 2)
    set_tests_properties(cli.devices_mixed_openblas PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION
      "a pin does not hold: mixed install.*WARNING: mixed OpenBLAS install.*openblas-pthread.*update-alternatives --set")
  endif()
endif()
add_test(NAME cli.help_bench COMMAND torchprobe-bench --help)
set_tests_properties(cli.help_bench PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "torchprobe-bench: .*--devices")

set(bench_exe $<TARGET_FILE:torchprobe-bench>)
# Any build, any host with fewer than 9 GPUs: the line names what the host has.
torchprobe_cli_error(cli.bench_missing_gpu
  "rc=2.*torchprobe: error: device cuda:9 not found \\(this host has (no CUDA device|[1-8] CUDA devices?: cuda:0)"
  ${bench_exe} --devices cuda:9)
torchprobe_cli_error(cli.bench_bad_device "rc=2.*torchprobe: error: invalid device 'tpu'" ${bench_exe} --devices cpu,tpu)
torchprobe_cli_error(cli.bench_bad_batch "rc=2.*torchprobe: error: .*batch-sizes" ${bench_exe} --batch-sizes 4,abc)
torchprobe_cli_error(cli.bench_fp16_on_cpu "rc=2.*torchprobe: error: none of the selected training variants runs on the selected devices"
  ${bench_exe} --devices cpu --dtypes fp16 --suites train)
torchprobe_cli_error(cli.bench_bad_dtype "rc=2.*torchprobe: error: unknown precision 'fp8' \\(expected fp32, bf16 or fp16\\)"
  ${bench_exe} --devices cpu --dtypes fp8 --suites train)
torchprobe_cli_error(cli.bench_bad_switch "rc=2.*torchprobe: error: --graphs: expected on or off, got 'yes'"
  ${bench_exe} --devices cpu --graphs yes --suites train)
torchprobe_cli_error(cli.bench_bad_suite "rc=2.*torchprobe: error: unknown suite 'ops'" ${bench_exe} --suites ops)
# The noise-based stop's flags: checked before any work.
torchprobe_cli_error(cli.bench_bad_max_noise "rc=2.*torchprobe: error: --max-noise: Value 0 not in range 0\\.001 to 100"
  ${bench_exe} --max-noise 0 --benchmark_list_tests)
torchprobe_cli_error(cli.bench_bad_timeout "rc=2.*torchprobe: error: --timeout: .*nan"
  ${bench_exe} --timeout nan --benchmark_list_tests)
torchprobe_cli_error(cli.bench_bad_min_samples "rc=2.*torchprobe: error: --min-samples: Value 1 not in range 2 to 1000000"
  ${bench_exe} --min-samples 1 --benchmark_list_tests)
# Every flag checked at parse time: one line, exit 2, before any work.
torchprobe_cli_error(cli.bench_negative_batch "rc=2.*torchprobe: error: --batch-sizes: -1 is out of range \\(1 to 65536\\)"
  ${bench_exe} --batch-sizes -1 --benchmark_list_tests)
torchprobe_cli_error(cli.bench_huge_batch "rc=2.*torchprobe: error: --batch-sizes: 99999999999 is out of range"
  ${bench_exe} --batch-sizes 99999999999 --benchmark_list_tests)
torchprobe_cli_error(cli.bench_empty_batch_item "rc=2.*torchprobe: error: --batch-sizes: empty item in '4,,4'"
  ${bench_exe} --batch-sizes 4,,4 --benchmark_list_tests)
torchprobe_cli_error(cli.bench_duplicate_batch "rc=2.*torchprobe: error: --batch-sizes: '4' is listed twice"
  ${bench_exe} --batch-sizes 4,4 --benchmark_list_tests)
# A list CLI11 splits itself says its flag and the list as every other list flag does (CLI11 drops empty items).
torchprobe_cli_error(cli.bench_duplicate_dtype "rc=2.*torchprobe: error: --dtypes: 'bf16' is listed twice in 'bf16,fp32,bf16'"
  ${bench_exe} --dtypes bf16,fp32,bf16 --benchmark_list_tests)
torchprobe_cli_error(cli.bench_unknown_model_at_list_time "rc=2.*torchprobe: error: --models: unknown model 'nosuch' \\(known: net, resnet18\\)"
  ${bench_exe} --models nosuch --benchmark_list_tests)
torchprobe_cli_error(cli.bench_zero_threads "rc=2.*torchprobe: error: --threads: Value 0 not in range 1 to 1024\n"
  ${bench_exe} --threads 0 --benchmark_list_tests)
torchprobe_cli_error(cli.bench_bad_out_format "rc=2.*torchprobe: error: --benchmark_out_format=xml: expected json, csv or console"
  ${bench_exe} --benchmark_out=x.json --benchmark_out_format=xml)
torchprobe_cli_error(cli.bench_out_under_a_file "rc=2.*torchprobe: error: cannot write /dev/null/r.json"
  ${bench_exe} --devices cpu --benchmark_out=/dev/null/r.json)
torchprobe_cli_error(cli.bench_isolate_needs_json "rc=2.*torchprobe: error: --isolate writes JSON results"
  ${bench_exe} --isolate --benchmark_out=x.csv --benchmark_out_format=csv)
# More threads than cores: said at once, before LibTorch's pools start.
add_test(NAME cli.bench_threads_above_cores COMMAND torchprobe-bench --threads 64 --suites data --benchmark_list_tests)
set_tests_properties(cli.bench_threads_above_cores PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION
  "^torchprobe: warning: --threads 64 on [0-9]+ cores: threads will time-slice")
torchprobe_cli_error(cli.bench_bad_data "rc=2.*torchprobe: error: CIFAR-10 directory /nonexistent: not a directory"
  ${bench_exe} --devices cpu --data /nonexistent)

# Without nsys or ncu, scripts/profile.sh says how to get them, in one line, and exits 2; so does a bad
# TORCHPROBE_PROFILER, and ncu with a build that has no CUDA (a stand-in ncu: it must not be run).
add_test(NAME cli.profile_without_a_profiler COMMAND ${CMAKE_COMMAND} -DEXPECT_RC=2 -P ${CMAKE_CURRENT_SOURCE_DIR}/run_expect_rc.cmake
  ${CMAKE_COMMAND} -E env PATH=/nonexistent TORCHPROBE_PROFILER_DIRS=/nonexistent /bin/bash ${PROJECT_SOURCE_DIR}/scripts/profile.sh)
set_tests_properties(cli.profile_without_a_profiler PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "rc=2.*torchprobe: error: neither nsys \\(Nsight Systems\\) nor ncu \\(Nsight Compute\\) is on PATH")
torchprobe_cli_rc(cli.profile_bad_profiler 2 "rc=2.*torchprobe: error: TORCHPROBE_PROFILER is nsys or ncu, got 'vtune'"
  ${CMAKE_COMMAND} -E env TORCHPROBE_PROFILER=vtune /bin/bash ${PROJECT_SOURCE_DIR}/scripts/profile.sh)
if(TORCHPROBE_HAS_CUDA)
  # The ncu mode's bookkeeping with a stand-in ncu (tests/fake_ncu.sh) replaying the raw page a real ncu exported
  # on an H100: kernels and GPU time per phase, the kernels outside every phase, exit 1 when a compute phase has
  # none. The figures are the fixture's own sums (36 forward kernels, 187.296 us; ...).
  set(stand_in_ncu ${CMAKE_CURRENT_BINARY_DIR}/stand-in-ncu)
  file(MAKE_DIRECTORY ${stand_in_ncu})
  file(COPY_FILE ${CMAKE_CURRENT_SOURCE_DIR}/fake_ncu.sh ${stand_in_ncu}/ncu)
  file(CHMOD ${stand_in_ncu}/ncu PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
  # Each test has its own output folder: ctest -j runs them side by side.
  set(profile_env PATH=${stand_in_ncu}:/usr/bin:/bin TORCHPROBE_PROFILER=ncu TORCHPROBE_BUILD_DIR=${CMAKE_BINARY_DIR}
      FAKE_NCU_RAW=${CMAKE_CURRENT_SOURCE_DIR}/fixtures/profile/h100-ncu-raw.csv)
  torchprobe_cli_rc(cli.profile_ncu_per_phase 0
    "h2d +0 +0\\.000\n+forward +36 +0\\.187\n+loss +4 +0\\.012\n+backward +2 +0\\.004\n+optimizer +8 +0\\.020\n\\(no phase\\) +82 +0\\.461\nall kernels profiled: 132"
    ${CMAKE_COMMAND} -E env ${profile_env} TORCHPROBE_PROFILE_OUT=${CMAKE_CURRENT_BINARY_DIR}/profile-out/per-phase
    /bin/bash ${PROJECT_SOURCE_DIR}/scripts/profile.sh --devices cuda:0 --models net)
  torchprobe_cli_rc(cli.profile_ncu_phase_without_kernels 1 "rc=1.*none was inside the range of: forward:"
    ${CMAKE_COMMAND} -E env ${profile_env} TORCHPROBE_PROFILE_OUT=${CMAKE_CURRENT_BINARY_DIR}/profile-out/without-kernels
    FAKE_NCU_EMPTY=forward /bin/bash ${PROJECT_SOURCE_DIR}/scripts/profile.sh --devices cuda:0)
else()
  set(fake_ncu ${CMAKE_CURRENT_BINARY_DIR}/fake-ncu)
  file(WRITE ${fake_ncu}/ncu "#!/bin/sh\necho 'the stand-in ncu ran' >&2\nexit 0\n")
  file(CHMOD ${fake_ncu}/ncu PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
  torchprobe_cli_rc(cli.profile_ncu_needs_a_cuda_build 2 "rc=2.*torchprobe: error: ncu profiles GPU kernels: .* is not a CUDA build"
    ${CMAKE_COMMAND} -E env PATH=${fake_ncu}:/usr/bin:/bin TORCHPROBE_BUILD_DIR=${CMAKE_BINARY_DIR}
    TORCHPROBE_PROFILE_OUT=${CMAKE_CURRENT_BINARY_DIR}/profile-out /bin/bash ${PROJECT_SOURCE_DIR}/scripts/profile.sh)
  set_tests_properties(cli.profile_ncu_needs_a_cuda_build PROPERTIES FAIL_REGULAR_EXPRESSION "the stand-in ncu ran")
endif()
# Profiling mode: a fixed number of samples, no statistics, no phase counters.
set(profile_args --devices cpu --models net --batch-sizes 4 --suites train --benchmark_format=json)
if(TORCHPROBE_HAS_CUDA)
  list(APPEND profile_args --aten-nvtx)
else()
  torchprobe_cli_error(cli.bench_aten_nvtx_needs_cuda
    "rc=2.*torchprobe: error: per-op NVTX ranges need a CUDA-enabled LibTorch" ${bench_exe} --devices cpu --aten-nvtx)
endif()
add_test(NAME cli.bench_profile_mode COMMAND torchprobe-bench --profile ${profile_args})
set_tests_properties(cli.bench_profile_mode PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "profile mode: 10 steps.*\"iterations\": 10,"
  FAIL_REGULAR_EXPRESSION "forward_ms;error_message")

# The quick plan's whole list of names, as a golden file (tests/fixtures/cli/bench_list.txt): every suite in its
# order, every training axis in the table's order.
add_test(NAME cli.bench_list COMMAND ${CMAKE_COMMAND} -DEXPECT_RC=0
  -DEXPECT_STDOUT_FILE=${CMAKE_CURRENT_SOURCE_DIR}/fixtures/cli/bench_list.txt
  -P ${CMAKE_CURRENT_SOURCE_DIR}/run_expect_rc.cmake ${CMAKE_COMMAND} -E env TORCHPROBE_CPU_BF16=native
  $<TARGET_FILE:torchprobe-bench> --devices cpu --models net,resnet18 --batch-sizes 4,64 --benchmark_list_tests=true)
set_tests_properties(cli.bench_list PROPERTIES LABELS cli)
# On a CPU without bf16 instructions (Zen 3, Ice Lake) the quick plan leaves the CPU's bf16 variant out, and says so.
add_test(NAME cli.bench_list_emulated_bf16 COMMAND torchprobe-bench --devices cpu --models net,resnet18 --batch-sizes 4,64
  --benchmark_list_tests=true)
set_tests_properties(cli.bench_list_emulated_bf16 PROPERTIES LABELS cli ENVIRONMENT TORCHPROBE_CPU_BF16=emulated
  PASS_REGULAR_EXPRESSION "cpu: the quick subset leaves bf16 out: this CPU .* has no bf16 instructions.*train_step/net/cpu/batch:64/dtype:fp32/layout:nchw/manual_time\ntrain_step/resnet18/cpu/batch:4/dtype:fp32/layout:nchw/manual_time\ntrain_step/resnet18/cpu/batch:64/dtype:fp32/layout:nchw/manual_time\ndata/parse_cifar10"
  FAIL_REGULAR_EXPRESSION "dtype:bf16")
add_test(NAME cli.bench_bad_cpu_bf16 COMMAND ${CMAKE_COMMAND} -DEXPECT_RC=2 -P ${CMAKE_CURRENT_SOURCE_DIR}/run_expect_rc.cmake
  ${CMAKE_COMMAND} -E env TORCHPROBE_CPU_BF16=yes $<TARGET_FILE:torchprobe-bench> --devices cpu --benchmark_list_tests=true)
set_tests_properties(cli.bench_bad_cpu_bf16 PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "rc=2.*torchprobe: error: TORCHPROBE_CPU_BF16='yes': use native or emulated")
# Explicit axes give their product, less what the device cannot run (fp16 autocast is for GPUs).
add_test(NAME cli.bench_list_variants COMMAND torchprobe-bench --devices cpu --models net --batch-sizes 4
  --dtypes fp32,bf16,fp16 --layouts nchw,cl --suites train --benchmark_list_tests=true)
set_tests_properties(cli.bench_list_variants PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION
  "train_step/net/cpu/batch:4/dtype:fp32/layout:nchw/manual_time\ntrain_step/net/cpu/batch:4/dtype:fp32/layout:cl/manual_time\ntrain_step/net/cpu/batch:4/dtype:bf16/layout:nchw/manual_time\ntrain_step/net/cpu/batch:4/dtype:bf16/layout:cl/manual_time\n"
  FAIL_REGULAR_EXPRESSION "fp16")

# A real (tiny) run: JSON out, counters present, a bad configuration skipped with its reason
# while the rest goes on, and exit code 1 because one configuration failed.
add_test(NAME cli.bench_run COMMAND ${CMAKE_COMMAND} -DEXPECT_RC=1 -DSHOW_FILE=${CMAKE_CURRENT_BINARY_DIR}/bench_run.json
  -P ${CMAKE_CURRENT_SOURCE_DIR}/run_expect_rc.cmake ${CMAKE_COMMAND} -E env TORCHPROBE_TEST_FAULT=resnet18/:throw
  ${bench_exe} --devices cpu --models net,resnet18 --batch-sizes 8 --variants quick --dtypes fp32 --suites train --threads 2
  --benchmark_min_time=0.05 --benchmark_out=${CMAKE_CURRENT_BINARY_DIR}/bench_run.json --benchmark_out_format=json)
set_tests_properties(cli.bench_run PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION
  "rc=1.*torchprobe-bench: at most [0-9]+:[0-9][0-9] of sampling \\(2 benchmark\\(s\\) x 1 repetition\\(s\\), each stopping once its noise is under its target, or at 5 s.*\"torchprobe_run\": \"complete \\(2 of 2 benchmarks\\)\".*\"name\": \"train_step/net/cpu/batch:8/dtype:fp32/layout:nchw/manual_time\".*\"iterations\": 1,.*\"epoch_s\": [0-9.e+-]+.*\"forward_ms\": [0-9.e+-]+.*\"images_per_s\": [0-9.e+]+.*\"max_noise_pct\": 1\\.0+e\\+00.*\"mfu_pct\": [0-9.e+-]+.*\"model_gflop_per_step\": 3\\.1282.*\"model_tflop_per_s\".*\"noise_pct\": [0-9.e+-]+.*\"peak_mem_mib\".*\"peak_tflop_per_s\".*\"samples\": [0-9.e+]+.*\"threads\": 2\\.0+e\\+00.*\"timed_out\": [01]\\.0+e\\+00.*\"label\": \"synthetic data.*\"name\": \"train_step/resnet18/cpu/batch:8/dtype:fp32/layout:nchw/manual_time\".*\"error_message\": \"injected fault \\(TORCHPROBE_TEST_FAULT=resnet18/:throw\\)\"")
# The console table shows the headline counters (a column each), not the ~30 the file keeps: in the file every name is
# quoted, on the console a roof or phase counter would stand unquoted in the table's header.
set_tests_properties(cli.bench_run PROPERTIES FAIL_REGULAR_EXPRESSION "[^\"](roof_[a-z_]+|forward_ms|model_gflop_per_step)[^\"]")

# --trace: one Chrome trace per training benchmark (one file for two repetitions), beside the results; refused with
# the other user of LibTorch's profiler and where the directory cannot be made.
# Then `report --traces` reads it: the top ops of that step, linked to the trace from the report's folder.
add_test(NAME cli.bench_trace COMMAND /bin/bash -c
  "rm -rf \"$1\" && \"$0\" --devices cpu --models net --batch-sizes 4 --variants quick --dtypes fp32 --layouts nchw --suites train --benchmark_min_time=0.01 --benchmark_repetitions=2 --trace \"$1\" --benchmark_out=\"$1\"/../trace_run.json > /dev/null && ls \"$1\" && head -c 40 \"$1\"/*.json && echo && \"$2\" report \"$1\"/../trace_run.json --traces \"$1\" --out \"$1\"/../trace_report --quiet && grep -A 8 'Where a step' \"$1\"/../trace_report/report.md"
  ${bench_exe} ${CMAKE_CURRENT_BINARY_DIR}/traces $<TARGET_FILE:torchprobe>)
set_tests_properties(cli.bench_trace PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION
  "\ntrain_step_net_cpu_batch_4_dtype_fp32_layout_nchw\\.json\n\\{\"displayTimeUnit\":\"ms\",\"traceEvents\":\\[\\{.*## Where a step's time goes.*### train_step/net/cpu/batch:4/dtype:fp32/layout:nchw\n\n3 steps, .* per step in its phases. trace: \\[.*traces/train_step_net_cpu_batch_4_dtype_fp32_layout_nchw\\.json\\]\\(\\.\\./traces/train_step_net_cpu_batch_4_dtype_fp32_layout_nchw\\.json\\)")
torchprobe_cli_error(cli.bench_trace_with_aten_nvtx "rc=2.*torchprobe: error: --trace and --aten-nvtx both use LibTorch's profiler"
  ${bench_exe} --devices cpu --trace ${CMAKE_CURRENT_BINARY_DIR}/traces-refused --aten-nvtx)
torchprobe_cli_error(cli.bench_trace_not_a_directory "rc=2.*torchprobe: error: --trace: '.*CMakeCache\\.txt' is not a directory"
  ${bench_exe} --devices cpu --trace ${CMAKE_BINARY_DIR}/CMakeCache.txt)

# The op suite for real: analytic counts, peaks and rotation in the JSON; then the report reads it. The roofs
# are injected (tests/fixtures/peaks/cpu.json: 100 GFLOP/s, 20 GB/s), so the compute/memory verdicts below do
# not depend on how fast or busy the host is.
set(op_json ${CMAKE_CURRENT_BINARY_DIR}/op_run.json)
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/fixtures/peaks/cpu.json ${CMAKE_CURRENT_BINARY_DIR}/op_run_peaks.json COPYONLY)
add_test(NAME cli.bench_op_run COMMAND ${CMAKE_COMMAND} -DEXPECT_RC=0 -DSHOW_FILE=${op_json}
  -P ${CMAKE_CURRENT_SOURCE_DIR}/run_expect_rc.cmake
  ${bench_exe} --devices cpu --suites op --ops matmul,add --op-batch-sizes 2 --threads 2 --benchmark_min_time=0.02
  --peak-store ${CMAKE_CURRENT_BINARY_DIR}/op_run_peaks.json --benchmark_out=${op_json} --benchmark_out_format=json)
set_tests_properties(cli.bench_op_run PROPERTIES LABELS cli FIXTURES_SETUP op_json PASS_REGULAR_EXPRESSION
  "rc=0.*\"name\": \"op/matmul/cpu/n:1024/dtype:fp32/manual_time\".*\"flops\": 2\\.147483648[0]*e\\+09.*\"input_sets\": [0-9.e+]+.*\"peak_gb_per_s\": 2\\.0*e\\+01.*\"peak_gflop_per_s\": 1\\.0*e\\+02.*\"name\": \"op/add/cpu/input:2x64x32x32/dtype:fp32/manual_time\".*\"bytes\": 1\\.572864[0]*e\\+06")
torchprobe_cli_rc(cli.report_op_run 0 "rc=0.*matmul +cpu +n:1024 +fp32 +[0-9.]+ .* compute.*add +cpu +input:2x64x32x32 +fp32 .* memory"
  ${tp} report ${op_json} --out ${CMAKE_CURRENT_BINARY_DIR}/op-report)
set_tests_properties(cli.report_op_run PROPERTIES FIXTURES_REQUIRED op_json)
torchprobe_cli_error(cli.bench_bad_op "rc=2.*torchprobe: error: unknown op 'gemm' \\(known: matmul, conv2d" ${bench_exe} --suites op --ops gemm)
torchprobe_cli_error(cli.bench_bad_op_set "rc=2.*torchprobe: error: --op-set: some not in" ${bench_exe} --op-set some)

# Device diagnostics: the catalogue runs what this host can.
torchprobe_cli_rc(cli.diagnose_device 0 "rc=0.*checkpoint_from_gpu.*\\[reproduced\\].*meta_tensors.*\\[reproduced\\].*SILENT.*[0-9]+ reproduced and explained, [0-9]+ skipped, 0 failed"
  ${tp} diagnose device)
torchprobe_cli_rc(cli.diagnose_device_json 0 "rc=0.*\"scenario\": \"cuda_where_there_is_none\".*\"status\": \"reproduced\""
  ${tp} diagnose device --scenario cuda_where_there_is_none --json)
torchprobe_cli_error(cli.diagnose_bad_scenario "rc=2.*torchprobe: error: unknown scenario 'nope' \\(known: all, input_on_cpu"
  ${tp} diagnose device --scenario nope)
torchprobe_cli_error(cli.diagnose_bad_device "rc=2.*torchprobe: error: --device: the GPU scenarios need a CUDA device"
  ${tp} diagnose device --device cpu)
# Memory diagnostics end to end: the real CPU OOM in a child under a small budget, the report, the leak checks (each
# announced on stderr before its ~30 s).
torchprobe_cli_rc(cli.diagnose_memory_json 0 "rc=0.*\"probes\".*\"kind\": \"out_of_memory_cpu\".*\"recovery\".*\"ok\": true.*\"leaks\".*\"scenario\": \"correct_loop\".*\"leak\": false.*\"scenario\": \"kept_losses\".*\"leak\": true.*\"ok\": true.*leak check of net on cpu, the correct loop \\(keeps loss\\.item\\(\\)\\): 10 steps.*leak check of net on cpu, the leaking loop"
  ${tp} diagnose memory --devices cpu --models net --cpu-limit 96MiB --leak-steps 10 --threads 1 --json)
if(TORCHPROBE_SANITIZE)
  set_tests_properties(cli.diagnose_memory_json PROPERTIES ${torchprobe_env_under_a_cap})
endif()
# Nothing lost on a stop: a SIGINT once net's probe has finished (a test fault) prints what finished, marked
# interrupted, and exits 130; resnet18's probe never starts.
torchprobe_cli_rc(cli.diagnose_memory_interrupted 130
  "rc=130.*\"probes\": \\[.*\"model\": \"net\".*\"interrupted\": \"SIGINT\",.*\"ok\": false"
  ${tp} diagnose memory --devices cpu --models net,resnet18 --cpu-limit 96MiB --leak-steps 10 --threads 1 --json)
set(fault "TORCHPROBE_TEST_FAULT=diagnose_memory:interrupt_after_probe")
if(TORCHPROBE_SANITIZE)
  list(APPEND fault "ASAN_OPTIONS=${TORCHPROBE_ASAN_OPTIONS_UNDER_A_CAP}")
endif()
set_tests_properties(cli.diagnose_memory_interrupted PROPERTIES ENVIRONMENT "${fault}"
  FAIL_REGULAR_EXPRESSION "\"model\": \"resnet18\"")
torchprobe_cli_error(cli.diagnose_memory_bad_limit "rc=2.*torchprobe: error: --cpu-limit: expected a size like 512MiB or 2GiB, got 'lots'"
  ${tp} diagnose memory --devices cpu --cpu-limit lots)
torchprobe_cli_error(cli.diagnose_memory_huge_limit "rc=2.*torchprobe: error: --cpu-limit: 99999999999999999999999 bytes is too large"
  ${tp} diagnose memory --devices cpu --cpu-limit 99999999999999999999999)
torchprobe_cli_error(cli.diagnose_memory_zero_limit "rc=2.*torchprobe: error: --cpu-limit: the size must be above 0"
  ${tp} diagnose memory --devices cpu --cpu-limit 0)
torchprobe_cli_error(cli.diagnose_memory_bad_model "rc=2.*torchprobe: error: .*unknown model 'vgg'"
  ${tp} diagnose memory --devices cpu --models vgg)

if(TORCHPROBE_HAS_DIST)
  # Distributed (c10d, Gloo on 127.0.0.1): the launch script starts, collects and stops its ranks; rank 0 says each
  # message size as it finishes.
  set(launch ${PROJECT_SOURCE_DIR}/scripts/launch.sh)
  torchprobe_cli_rc(cli.launch_allreduce 0 "rc=0.*\"context\".*\"torchprobe_version\".*\"name\": \"dist_allreduce/gloo/cpu/world:2/dtype:fp32/bytes:65536\".*\"repetitions\": 3.*\"busbw_gbps\".*all-reduce 1\\.0 KiB: [0-9.]+ us, busbw [0-9.]+ GB/s \\(1 of 7 sizes\\).*all-reduce 64\\.0 KiB: .*\\(7 of 7 sizes\\)"
    ${launch} 2 $<TARGET_FILE:torchprobe> dist allreduce --max-bytes 64KiB --iterations 3 --repetitions 3 --threads 1 --json)
  # dist train's results are a Google Benchmark file: report merges it, compare gates it.
  set(dist_json ${CMAKE_CURRENT_BINARY_DIR}/dist_train.json)
  torchprobe_cli_rc(cli.launch_train 0 "rc=0.*\"name\": \"dist_train/net/cpu/world:2/batch:8/engine:gloo\".*\"repetitions\": 2.*\"scaling_efficiency\".*\"rank1_ms_per_step\""
    ${launch} 2 $<TARGET_FILE:torchprobe> dist train --model net --batch 8 --steps 4 --warmup 1 --repetitions 2 --threads 1 --json --out ${dist_json})
  set_tests_properties(cli.launch_train PROPERTIES FIXTURES_SETUP dist_json)
  torchprobe_cli_rc(cli.dist_results_report 0 "rc=0.*dist_train scaling.*dist_train/net/cpu/batch:8/engine:gloo +2 .*wrote .*report.md"
    ${tp} report ${dist_json} --out ${CMAKE_CURRENT_BINARY_DIR}/dist-report)
  torchprobe_cli_rc(cli.dist_results_compare 0 "rc=0.*dist_train/net/cpu/world:2/batch:8/engine:gloo .*SAME.*OK: 1 SAME"
    ${tp} compare ${dist_json} ${dist_json})
  set_tests_properties(cli.dist_results_report cli.dist_results_compare PROPERTIES FIXTURES_REQUIRED dist_json)
  # A rank whose peer never starts: the documented timeout error, naming the store and the missing rank.
  torchprobe_cli_rc(cli.dist_missing_peer 1
    "rc=1.*torchprobe: error: rank 0 of 2: not every rank joined at 127.0.0.1:29631 within 2.0 s \\(missing: rank 1"
    ${CMAKE_COMMAND} -E env MASTER_ADDR=127.0.0.1 MASTER_PORT=29631 RANK=0 WORLD_SIZE=2
    $<TARGET_FILE:torchprobe> dist allreduce --timeout 2)
  # The launcher stops the surviving ranks when one fails, and returns that rank's exit code.
  # The failing rank's error and the launcher's line come from two processes: in either order.
  torchprobe_cli_rc(cli.launch_stops_on_failure 2
    "rc=2.*(unknown model 'nosuch'.*launch: rank [01] exited with 2. stopping the others|launch: rank [01] exited with 2. stopping the others.*unknown model 'nosuch')"
    ${launch} 2 $<TARGET_FILE:torchprobe> dist train --model nosuch --timeout 20)
  # A rank that fails while the others still run: they are stopped, and its own exit code comes back.
  torchprobe_cli_rc(cli.launch_stops_running_ranks 3 "rc=3.*launch: rank 1 exited with 3. stopping the others"
    ${launch} 3 /bin/sh -c "test \"$RANK\" = 1 && exit 3 || exec sleep 60")
  set_tests_properties(cli.launch_stops_running_ranks PROPERTIES FAIL_REGULAR_EXPRESSION "no such job|unbound variable" TIMEOUT 30)
  # Bad flags fail before anything starts: a timeout out of range; an --out that cannot be written (rank 1
  # of 2 with no rank 0 anywhere: checked later, it would wait for the store instead).
  torchprobe_cli_error(cli.dist_timeout_range "rc=2.*torchprobe: error: --timeout: Value 0 not in range 1 to 86400"
    $<TARGET_FILE:torchprobe> dist train --timeout 0)
  torchprobe_cli_error(cli.dist_out_checked_first "rc=2.*torchprobe: error: cannot write /proc/torchprobe-x.json"
    ${CMAKE_COMMAND} -E env MASTER_ADDR=127.0.0.1 MASTER_PORT=29633 RANK=1 WORLD_SIZE=2
    $<TARGET_FILE:torchprobe> dist allreduce --timeout 30 --out /proc/torchprobe-x.json)
  set_tests_properties(cli.dist_out_checked_first PROPERTIES TIMEOUT 10)
  torchprobe_cli_error(cli.dist_no_env "rc=2.*torchprobe: error: MASTER_ADDR is not set \\(torchrun sets"
    $<TARGET_FILE:torchprobe> dist allreduce)
  torchprobe_cli_error(cli.launch_usage "rc=2.*usage: scripts/launch.sh N COMMAND" ${launch} 0 true)
  # data_parallel on a device this host does not have (CI has none; a GPU host fewer than 8): one clear line, exit 2.
  torchprobe_cli_error(cli.dataparallel_absent_device "rc=2.*torchprobe: error: device cuda:7 not found \\(this host has"
    $<TARGET_FILE:torchprobe> dist dataparallel --devices cuda:7 --model net --batch 8)
  # The launchers people use (tests/launchers_test.sh): torchrun from the pinned PyTorch wheel (this build's
  # venv, or TORCHPROBE_TORCHRUN: scripts/test.sh points it at the cuda flavour's venv, which CI builds before
  # the debian and asan flavours), SLURM's variables, and a
  # multi-node job on two network namespaces (label multinode: root and `ip netns`; skipped where absent).
  foreach(case torchrun_train torchrun_c10d torchrun_restart slurm multinode)
    add_test(NAME cli.launch_${case} COMMAND /bin/bash ${CMAKE_CURRENT_SOURCE_DIR}/launchers_test.sh ${case}
      $<TARGET_FILE:torchprobe> ${CMAKE_BINARY_DIR}/torch-venv/bin/torchrun)
    set_tests_properties(cli.launch_${case} PROPERTIES LABELS cli SKIP_RETURN_CODE 77 TIMEOUT 300)
  endforeach()
  set_tests_properties(cli.launch_multinode PROPERTIES LABELS "cli;multinode")
  # The scaling report: dist train at world sizes 1 and 2, one report with a row per world size.
  # The efficiency's figure depends on the host's load (a busy ASan run read 112.9% at world 2): above 100% it
  # carries its flag, which the pattern allows.
  torchprobe_cli_rc(cli.scaling_report 0
    "rc=0.*dist_train scaling.*dist_train/net/cpu/batch:8/engine:gloo +1 +[0-9.]+ .*dist_train/net/cpu/batch:8/engine:gloo +2 +[0-9.]+ +[0-9 .]+ +[0-9.]+%( \\(above 100%: see Warnings\\))? +[0-9.]+ +[0-9.]+% +[0-9.]+"
    ${PROJECT_SOURCE_DIR}/scripts/scaling.sh --sizes 1,2 --out ${CMAKE_CURRENT_BINARY_DIR}/scaling $<TARGET_FILE:torchprobe>
    --model net --batch 8 --steps 4 --warmup 1 --repetitions 2 --threads 1)
  torchprobe_cli_error(cli.scaling_bad_sizes "rc=2.*torchprobe: error: --sizes: 'two' is not a world size >= 1"
    ${PROJECT_SOURCE_DIR}/scripts/scaling.sh --sizes 1,two $<TARGET_FILE:torchprobe>)
else()
  torchprobe_cli_error(cli.dist_not_built "rc=2.*torchprobe: error: this torchprobe was built without distributed support"
    $<TARGET_FILE:torchprobe> dist allreduce)
endif()

# Nothing lost, nothing left behind: signals, full disks, crashes in isolated benchmarks, orphans, lost peers
# (tests/robustness_test.sh; exit 77 = skipped with the reason, e.g. no root for the tmpfs).
set(robustness_cases sigint sigterm nomatch_keeps_file enospc enospc_mid_run data_tempdir orphan isolate)
if(TORCHPROBE_HAS_DIST)
  list(APPEND robustness_cases dist_lost_peer dist_not_a_store dist_duplicate_rank)
endif()
foreach(case ${robustness_cases})
  add_test(NAME cli.robust_${case} COMMAND /bin/bash ${CMAKE_CURRENT_SOURCE_DIR}/robustness_test.sh ${case}
    $<TARGET_FILE:torchprobe-bench> $<TARGET_FILE:torchprobe>)
  set_tests_properties(cli.robust_${case} PROPERTIES LABELS cli SKIP_RETURN_CODE 77 TIMEOUT 300)
endforeach()

# A project of its own links the installed libraries: cmake --install, then examples/audit with
# find_package(torchprobe), built and run (the Debian and asan flavours; the cuda one would add a CUDA configure).
# In the asan flavour the example is built by the same compiler with the same sanitizers as the libraries.
if(NOT TORCHPROBE_HAS_CUDA)
  set(example_sanitizers "")
  if(TORCHPROBE_SANITIZE)
    set(example_sanitizers "-fsanitize=address,undefined")
  endif()
  add_test(NAME cli.install_and_find_package COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${CMAKE_BINARY_DIR}
    -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DWORK=${CMAKE_BINARY_DIR}/install-example -DGENERATOR=${CMAKE_GENERATOR}
    "-DPREFIX_PATH=${CMAKE_PREFIX_PATH}" -DCOMPILER=${CMAKE_CXX_COMPILER} "-DSANITIZERS=${example_sanitizers}"
    -P ${CMAKE_CURRENT_SOURCE_DIR}/install_example.cmake)
  set_tests_properties(cli.install_and_find_package PROPERTIES LABELS cli TIMEOUT 600 PASS_REGULAR_EXPRESSION
    "run the example: rc=0.*buffer `scale` is on meta, expected cpu.*kind: +device_mismatch")
endif()

# libFuzzer targets (the asan flavour): the CIFAR-10 reader, the results loader and its printers, the
# error classifier, the OOM-message parser. Each runs TORCHPROBE_FUZZ_SECONDS on its committed seed
# corpus (tests/fuzz/corpus/NAME); a crash, leak, timeout or sanitizer report fails the test.
if(TORCHPROBE_ENABLE_FUZZ)
  set(TORCHPROBE_FUZZ_SECONDS 60 CACHE STRING "How long each fuzz.* test runs its fuzzer")
  foreach(target cifar10 results explain oom)
    add_executable(fuzz_${target} fuzz/fuzz_${target}.cpp)
    target_link_libraries(fuzz_${target} PRIVATE torchprobe::core torchprobe::report torchprobe::diagnostics)
    target_link_options(fuzz_${target} PRIVATE -fsanitize=fuzzer)
    torchprobe_warnings(fuzz_${target})
    add_test(NAME fuzz.${target} COMMAND ${CMAKE_COMMAND} -DFUZZER=$<TARGET_FILE:fuzz_${target}>
      -DSEEDS=${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/${target} -DWORK=${CMAKE_CURRENT_BINARY_DIR}/fuzz-${target}
      -DSECONDS=${TORCHPROBE_FUZZ_SECONDS} -P ${CMAKE_CURRENT_SOURCE_DIR}/run_fuzzer.cmake)
    set_tests_properties(fuzz.${target} PROPERTIES LABELS fuzz TIMEOUT 600)
  endforeach()
endif()

# scripts/gpu_session.sh's bookkeeping on a host without a GPU: the plan, "not run" for GPU steps, the tarball,
# the call deadline (tests/gpu_session_test.sh).
foreach(case plan no_gpu deadline)
  add_test(NAME cli.gpu_session_${case} COMMAND /bin/bash ${CMAKE_CURRENT_SOURCE_DIR}/gpu_session_test.sh ${case}
    ${PROJECT_SOURCE_DIR} ${CMAKE_BINARY_DIR})
  set_tests_properties(cli.gpu_session_${case} PROPERTIES LABELS cli SKIP_RETURN_CODE 77 TIMEOUT 180)
endforeach()

