# Installs the build tree BUILD_DIR into a fresh prefix under WORK, builds examples/audit against it with
# find_package(torchprobe) (and LibTorch from PREFIX_PATH or the system), and runs the example.
file(REMOVE_RECURSE "${WORK}")
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${what}: rc=${rc}\n${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed")
  endif()
endfunction()
run("install" ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${WORK}/prefix")
# COMPILER: the one that built the libraries; SANITIZERS: their -fsanitize flags, if any (the asan flavour).
set(sanitized "")
if(SANITIZERS)
  set(sanitized "-DCMAKE_CXX_FLAGS=${SANITIZERS}" "-DCMAKE_EXE_LINKER_FLAGS=${SANITIZERS}")
endif()
run("configure the example" ${CMAKE_COMMAND} -S "${SOURCE_DIR}/examples/audit" -B "${WORK}/build" -G "${GENERATOR}"
    -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${WORK}/prefix;${PREFIX_PATH}" "-DCMAKE_CXX_COMPILER=${COMPILER}"
    ${sanitized})
run("build the example" ${CMAKE_COMMAND} --build "${WORK}/build")
run("run the example" "${WORK}/build/audit_example")
