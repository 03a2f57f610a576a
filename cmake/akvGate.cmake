# akv_add_gate_test: registers `akv gate` on a kernel library (include/akv/kernels.h) as a CTest
# test. Included by the installed akvConfig.cmake and by akv's own build (same function both ways).
#
#   akv_add_gate_test(NAME <test> TARGET <shared-library target>
#                     [CASES <n>] [MODEL <tiny|small|...>] [SEED <s>] [OPS <op>...]
#                     [OUT <dir>] [ARGS <arg>...])
#
# The test runs `akv gate --kernels $<TARGET_FILE:target> ...` with akv::akv; it passes only when
# the gate exits 0 (every check ran and held). OPS is a CMake list, passed as --ops a,b. OUT is
# where the gate writes failing cases (default: <current binary dir>/akv-gate/<test>). ARGS go
# last, verbatim. The test gets the label akv-gate. Build the library before running ctest.
function(akv_add_gate_test)
  cmake_parse_arguments(PARSE_ARGV 0 gate "" "NAME;TARGET;CASES;MODEL;SEED;OUT" "OPS;ARGS")
  if(gate_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "akv_add_gate_test: unknown arguments: ${gate_UNPARSED_ARGUMENTS}")
  endif()
  foreach(kw IN ITEMS ${gate_KEYWORDS_MISSING_VALUES})
    message(FATAL_ERROR "akv_add_gate_test: ${kw} needs a value")
  endforeach()
  if(NOT gate_NAME OR NOT gate_TARGET)
    message(FATAL_ERROR "akv_add_gate_test: NAME and TARGET are required")
  endif()
  if(NOT TARGET ${gate_TARGET})
    message(FATAL_ERROR "akv_add_gate_test(${gate_NAME}): '${gate_TARGET}' is not a target")
  endif()
  get_target_property(type ${gate_TARGET} TYPE)
  if(NOT type STREQUAL "SHARED_LIBRARY" AND NOT type STREQUAL "MODULE_LIBRARY")
    message(FATAL_ERROR "akv_add_gate_test(${gate_NAME}): '${gate_TARGET}' is a ${type}; "
                        "the gate loads a SHARED or MODULE library")
  endif()
  if(NOT TARGET akv::akv)
    message(FATAL_ERROR "akv_add_gate_test: no akv::akv target (find_package(akv) first)")
  endif()

  set(cmd $<TARGET_FILE:akv::akv> gate --kernels $<TARGET_FILE:${gate_TARGET}>)
  if(gate_OPS)
    list(JOIN gate_OPS "," ops)
    list(APPEND cmd --ops ${ops})
  endif()
  foreach(opt IN ITEMS CASES MODEL SEED)
    if(DEFINED gate_${opt})
      string(TOLOWER ${opt} flag)
      list(APPEND cmd --${flag} ${gate_${opt}})
    endif()
  endforeach()
  if(NOT gate_OUT)
    set(gate_OUT ${CMAKE_CURRENT_BINARY_DIR}/akv-gate/${gate_NAME})
  endif()
  list(APPEND cmd --out ${gate_OUT} ${gate_ARGS})

  add_test(NAME ${gate_NAME} COMMAND ${cmd})
  set_tests_properties(${gate_NAME} PROPERTIES LABELS akv-gate)
endfunction()
