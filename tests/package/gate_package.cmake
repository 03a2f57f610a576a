# The installed package end to end (ctest label gate-package): install this build into a
# temporary prefix, move the prefix (the package must be relocatable), configure
# examples/gate-kernels against it, build it and run its ctest. Passes only when the example
# found this install, ctest ran exactly one test, gate_example, and the gate passed on the
# example's library (its table name in the gate's output); and a copy of the example with an
# M-dependent matmul fails that test.
# cmake -DAKV_BUILD=<akv build dir> -DAKV_EXAMPLE=<examples/gate-kernels> -DWORK=<scratch dir>
#       -DGENERATOR=<cmake generator> -P gate_package.cmake
foreach(v AKV_BUILD AKV_EXAMPLE WORK GENERATOR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "gate_package: -D${v}=... is required")
  endif()
endforeach()

# Runs a command; a nonzero exit fails the test with its output.
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "gate_package: ${what} failed (exit ${rc}):\n${out}")
  endif()
  set(run_out "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK})
set(staged ${WORK}/staged)
set(prefix ${WORK}/prefix)
run("cmake --install" ${CMAKE_COMMAND} --install ${AKV_BUILD} --prefix ${staged})
file(RENAME ${staged} ${prefix})
foreach(f bin/akv include/akv/kernels.h include/akv/exp.h lib/cmake/akv/akvConfig.cmake lib/cmake/akv/akvConfigVersion.cmake
          lib/cmake/akv/akvTargets.cmake lib/cmake/akv/akvGate.cmake)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "gate_package: the install has no ${f}")
  endif()
endforeach()
file(GLOB_RECURSE cmake_files ${prefix}/lib/cmake/akv/*.cmake)
foreach(f IN LISTS cmake_files)
  file(READ ${f} text)
  string(FIND "${text}" "${staged}" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "gate_package: ${f} names the install prefix ${staged}: not relocatable")
  endif()
endforeach()

# Configures and builds the example project `src` against the relocated prefix in `build`.
function(build_example src build)
  run("configuring ${src}" ${CMAKE_COMMAND} -S ${src} -B ${build} -G ${GENERATOR}
      -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix})
  file(STRINGS ${build}/CMakeCache.txt akv_dir REGEX "^akv_DIR:")
  if(NOT akv_dir STREQUAL "akv_DIR:PATH=${prefix}/lib/cmake/akv")
    message(FATAL_ERROR "gate_package: ${src} found another akv: '${akv_dir}', not ${prefix}")
  endif()
  run("building ${src}" ${CMAKE_COMMAND} --build ${build})
  run("listing the tests of ${src}" ${CMAKE_CTEST_COMMAND} --test-dir ${build} -N)
  if(NOT run_out MATCHES "Test +#1: gate_example\n" OR NOT run_out MATCHES "Total Tests: 1\n")
    message(FATAL_ERROR "gate_package: ${src} registers other than the one test gate_example:\n${run_out}")
  endif()
endfunction()

set(build ${WORK}/example)
build_example(${AKV_EXAMPLE} ${build})
run("the example's gate test" ${CMAKE_CTEST_COMMAND} --test-dir ${build} -V)
foreach(want "100% tests passed, 0 tests failed out of 1\n"
             "akv gate: [^\n]*/libexample_kernels.so \\(example-fma-chain\\), ops matmul,rmsnorm,"
             "\n1: akv gate: PASS: ")
  if(NOT run_out MATCHES "${want}")
    message(FATAL_ERROR "gate_package: the example's ctest output lacks '${want}' (did the gate run on "
                        "the example's library and pass?):\n${run_out}")
  endif()
endforeach()

# Teeth: the same project with an M-dependent matmul (a separate multiply and add when the call
# has more than one row) must fail its gate test, so a pass above is the gate's verdict.
file(READ ${AKV_EXAMPLE}/kernels.c source)
set(chain "acc = fmaf(x[k], w[k], acc);")
string(FIND "${source}" "${chain}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "gate_package: examples/gate-kernels/kernels.c has no '${chain}' to break")
endif()
string(REPLACE "${chain}" "acc = M > 1 ? acc + x[k] * w[k] : fmaf(x[k], w[k], acc);" source "${source}")
file(COPY ${AKV_EXAMPLE}/CMakeLists.txt DESTINATION ${WORK}/broken-src)
file(WRITE ${WORK}/broken-src/kernels.c "${source}")
build_example(${WORK}/broken-src ${WORK}/broken)
execute_process(COMMAND ${CMAKE_CTEST_COMMAND} --test-dir ${WORK}/broken -V
                RESULT_VARIABLE rc OUTPUT_VARIABLE broken_out ERROR_VARIABLE broken_out)
if(rc EQUAL 0 OR NOT broken_out MATCHES "0% tests passed, 1 tests failed out of 1\n"
   OR NOT broken_out MATCHES "\n1: FAIL GT2.matmul.rows")
  message(FATAL_ERROR "gate_package: the example with an M-dependent matmul did not fail its gate "
                      "test on GT2.matmul.rows (ctest exit ${rc}):\n${broken_out}")
endif()
message(STATUS "gate_package: installed, relocated, found, built; gate_example passed:\n${run_out}"
               "the M-dependent copy failed GT2.matmul.rows, as it must.")
