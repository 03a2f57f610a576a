# xgrammar's C++ core, the grammar engine of constrained decoding (chat/grammar.hpp), as the
# imported target `xgrammar`. scripts/fetch-xgrammar builds it outside the tree from its PyPI
# sdist (pinned SHA-256); nothing of it is in the repository. A tool of the product: configure
# fails, saying what to run, when it is missing.
set(AKV_XGRAMMAR_PREFIX "" CACHE PATH
    "xgrammar's prefix (include/xgrammar, include/dlpack, lib/libxgrammar.a); empty: what scripts/fetch-xgrammar --check prints")

set(_akv_xg_prefix "${AKV_XGRAMMAR_PREFIX}")
if(NOT _akv_xg_prefix)
  # Asked at every configure, so a new pin or compiler (the prefix's stamp) is seen at once.
  # A ThreadSanitizer build links an instrumented xgrammar (its own prefix, built by clang++).
  set(_akv_xg_flavour "")
  if(CMAKE_CXX_FLAGS MATCHES "-fsanitize=thread")
    set(_akv_xg_flavour --sanitize=thread)
  endif()
  execute_process(COMMAND ${PROJECT_SOURCE_DIR}/scripts/fetch-xgrammar --check ${_akv_xg_flavour}
                  RESULT_VARIABLE _akv_xg_rc OUTPUT_VARIABLE _akv_xg_prefix ERROR_QUIET
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _akv_xg_rc EQUAL 0)
    # Short enough that CMake prints it on one line.
    message(FATAL_ERROR "xgrammar is not built: run scripts/fetch-xgrammar ${_akv_xg_flavour} (chat/ needs it)")
  endif()
endif()
foreach(_akv_xg_file lib/libxgrammar.a include/xgrammar/xgrammar.h include/dlpack/dlpack.h)
  if(NOT EXISTS "${_akv_xg_prefix}/${_akv_xg_file}")
    message(FATAL_ERROR "no ${_akv_xg_prefix}/${_akv_xg_file}: run scripts/fetch-xgrammar")
  endif()
endforeach()
message(STATUS "xgrammar: ${_akv_xg_prefix}")
# A rebuilt prefix (new pin, new compiler) reconfigures and relinks.
if(EXISTS "${_akv_xg_prefix}/.akv-build")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_akv_xg_prefix}/.akv-build")
endif()

# The engine's version, as chat/grammar.cpp names it in every grammar's source (its certificate).
set(_akv_xg_version "")
if(EXISTS "${_akv_xg_prefix}/.akv-build")
  file(STRINGS "${_akv_xg_prefix}/.akv-build" _akv_xg_version REGEX "^version ")
  string(REGEX REPLACE "^version " "" _akv_xg_version "${_akv_xg_version}")
endif()

find_package(Threads REQUIRED)
add_library(xgrammar STATIC IMPORTED GLOBAL)
set_target_properties(xgrammar PROPERTIES
  IMPORTED_LOCATION "${_akv_xg_prefix}/lib/libxgrammar.a"
  INTERFACE_INCLUDE_DIRECTORIES "${_akv_xg_prefix}/include"
  INTERFACE_LINK_LIBRARIES Threads::Threads)
if(_akv_xg_version)
  set_property(TARGET xgrammar PROPERTY INTERFACE_COMPILE_DEFINITIONS "AKV_XGRAMMAR_VERSION=\"${_akv_xg_version}\"")
endif()
