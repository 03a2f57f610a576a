# `cmake --install`: the akv executable, the kernel ABI header and the CMake package
# lib/cmake/akv (akvConfig.cmake: akv::kernels, akv::akv, akv_add_gate_test). Relocatable: the
# exported targets are relative to the prefix the package is found in.
include(CMakePackageConfigHelpers)

install(TARGETS akv EXPORT akvTargets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS akv_kernels EXPORT akvTargets)
install(FILES ${PROJECT_SOURCE_DIR}/include/akv/kernels.h ${PROJECT_SOURCE_DIR}/include/akv/exp.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/akv)

set(AKV_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/akv)
install(EXPORT akvTargets NAMESPACE akv:: DESTINATION ${AKV_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/akvConfig.cmake.in
  ${PROJECT_BINARY_DIR}/akvConfig.cmake INSTALL_DESTINATION ${AKV_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/akvConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/akvConfig.cmake ${PROJECT_BINARY_DIR}/akvConfigVersion.cmake
  ${CMAKE_CURRENT_LIST_DIR}/akvGate.cmake DESTINATION ${AKV_CMAKE_DIR})

# In this build too: akv::akv and akv_add_gate_test for gate tests of akv's own plugins.
add_executable(akv::akv ALIAS akv)
include(${CMAKE_CURRENT_LIST_DIR}/akvGate.cmake)
