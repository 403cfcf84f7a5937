# Installs headers, both libraries, spmd.pc and the CMake package files.
include(CMakePackageConfigHelpers)

install(TARGETS spmd spmd_static EXPORT spmdTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/spmd DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
install(FILES ${PROJECT_BINARY_DIR}/include/spmd/version.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/spmd)

install(EXPORT spmdTargets NAMESPACE spmd:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/spmd)
configure_package_config_file(cmake/spmdConfig.cmake.in
  ${PROJECT_BINARY_DIR}/spmdConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/spmd)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/spmdConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/spmdConfig.cmake ${PROJECT_BINARY_DIR}/spmdConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/spmd)

set(SPMD_PC_LIBS_PRIVATE "-lstdc++ -lpthread")
set(SPMD_PC_REQUIRES_PRIVATE "")
configure_file(pkgconfig/spmd.pc.in ${PROJECT_BINARY_DIR}/spmd.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/spmd.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
