# The installed package end to end (ctest label gate-package): install this build into a
# temporary prefix, move the prefix (the package must be relocatable), configure
# examples/gate-kernels against it, build it and run its ctest. Passes only when the example
# found this install, ctest ran exactly one test, gate_example, and the gate passed on the
# example's library (its table name in the gate's output).
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
foreach(f bin/akv include/akv/kernels.h lib/cmake/akv/akvConfig.cmake lib/cmake/akv/akvConfigVersion.cmake
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

set(build ${WORK}/example)
run("configuring examples/gate-kernels" ${CMAKE_COMMAND} -S ${AKV_EXAMPLE} -B ${build} -G ${GENERATOR}
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix})
file(STRINGS ${build}/CMakeCache.txt akv_dir REGEX "^akv_DIR:")
if(NOT akv_dir STREQUAL "akv_DIR:PATH=${prefix}/lib/cmake/akv")
  message(FATAL_ERROR "gate_package: the example found another akv: '${akv_dir}', not ${prefix}")
endif()
run("building examples/gate-kernels" ${CMAKE_COMMAND} --build ${build})

run("listing the example's tests" ${CMAKE_CTEST_COMMAND} --test-dir ${build} -N)
if(NOT run_out MATCHES "Test +#1: gate_example\n" OR NOT run_out MATCHES "Total Tests: 1\n")
  message(FATAL_ERROR "gate_package: the example registers other than the one test gate_example:\n${run_out}")
endif()
run("the example's gate test" ${CMAKE_CTEST_COMMAND} --test-dir ${build} -V)
if(NOT run_out MATCHES "100% tests passed, 0 tests failed out of 1\n")
  message(FATAL_ERROR "gate_package: the example's ctest did not pass exactly one test:\n${run_out}")
endif()
if(NOT run_out MATCHES "example-fma-chain")
  message(FATAL_ERROR "gate_package: the gate's output does not name the example's kernels "
                      "(example-fma-chain): did it load the library?\n${run_out}")
endif()
message(STATUS "gate_package: installed, relocated, found, built; gate_example passed:\n${run_out}")
