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

# ---- What a static link of libspmd.a needs besides libspmd itself. --------
#
# Optional dependencies register themselves where they are linked (for
# example in src/CMakeLists.txt, next to target_link_libraries), so that
# spmd.pc and spmdConfig.cmake always name exactly what the build used:
#
#   OpenBLAS (CPU matmul):
#     set_property(GLOBAL APPEND PROPERTY SPMD_PC_REQUIRES_PRIVATE openblas)
#     set_property(GLOBAL APPEND PROPERTY SPMD_CONFIG_DEPENDENCIES "find_dependency(BLAS)")
#   The dynamic loader (the platform plugins are opened at run time):
#     set_property(GLOBAL APPEND PROPERTY SPMD_PC_LIBS_PRIVATE -ldl)
#
# The CUDA platform (cudart, cuBLAS, NCCL) is a plugin that libspmd loads at
# run time, so neither library's users link CUDA.
#   SPMD_PC_REQUIRES_PRIVATE  pkg-config modules   -> Requires.private
#   SPMD_PC_LIBS_PRIVATE      linker flags          -> Libs.private
#   SPMD_CONFIG_DEPENDENCIES  lines of CMake        -> spmdConfig.cmake
# The C++ runtime, libm and threads are always needed.
get_property(spmd_pc_requires GLOBAL PROPERTY SPMD_PC_REQUIRES_PRIVATE)
get_property(spmd_pc_libs GLOBAL PROPERTY SPMD_PC_LIBS_PRIVATE)
get_property(spmd_config_deps GLOBAL PROPERTY SPMD_CONFIG_DEPENDENCIES)
list(REMOVE_DUPLICATES spmd_pc_requires)
list(REMOVE_DUPLICATES spmd_pc_libs)
list(REMOVE_DUPLICATES spmd_config_deps)
string(JOIN " " SPMD_PC_REQUIRES_PRIVATE ${spmd_pc_requires})
string(JOIN " " SPMD_PC_LIBS_PRIVATE ${spmd_pc_libs} -lstdc++ -lm -lpthread)
string(JOIN "\n" SPMD_CONFIG_DEPENDENCIES ${spmd_config_deps})
# libspmd.a's own link interface (what spmd::spmd_static brings to a CMake
# consumer) needs libm as well as the C++ runtime src/CMakeLists.txt adds.
target_link_libraries(spmd_static PUBLIC m)

# ---- CMake package: find_package(spmd CONFIG) gives spmd::spmd and
# spmd::spmd_static. ---------------------------------------------------------
install(EXPORT spmdTargets NAMESPACE spmd:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/spmd)
configure_package_config_file(cmake/spmdConfig.cmake.in
  ${PROJECT_BINARY_DIR}/spmdConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/spmd)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/spmdConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/spmdConfig.cmake ${PROJECT_BINARY_DIR}/spmdConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/spmd)

# ---- pkg-config. The prefix is the one installed into, which
# `cmake --install --prefix DIR` may change after configuring, so the file is
# finished at install time. -------------------------------------------------
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(SPMD_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(SPMD_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
set(SPMD_PC_PREFIX "@SPMD_PC_PREFIX@")  # left for the install step
configure_file(pkgconfig/spmd.pc.in ${PROJECT_BINARY_DIR}/pkgconfig/spmd.pc.in @ONLY)
install(CODE "
  set(SPMD_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  configure_file(\"${PROJECT_BINARY_DIR}/pkgconfig/spmd.pc.in\"
                 \"${PROJECT_BINARY_DIR}/pkgconfig/spmd.pc\" @ONLY)")
install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/spmd.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
