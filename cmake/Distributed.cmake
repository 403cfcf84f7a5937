# Detects MPI for runtimes over several processes (docs/distributed.md). MPI
# lives in a plugin, libspmd_mpi.so, the only file that links it:
# SPMD_WITH_MPI=AUTO builds it when MPI's C library is found (saying which
# it chose), ON requires it, and mpiexec for the tests, and stops here when
# either is missing, OFF leaves it out. libspmd.so is the same either way.

set(SPMD_HAVE_MPI OFF)
set(spmd_mpi_why "SPMD_WITH_MPI=OFF")

if(NOT SPMD_WITH_MPI STREQUAL "OFF")
  set(MPI_DETERMINE_LIBRARY_VERSION TRUE)  # for the message: which MPI it is
  find_package(MPI COMPONENTS C QUIET)
  if(MPI_C_FOUND)
    set(SPMD_HAVE_MPI ON)
    string(REGEX REPLACE "[,\n].*" "" spmd_mpi_library "${MPI_C_LIBRARY_VERSION_STRING}")
    set(spmd_mpi_why "${spmd_mpi_library}, MPI ${MPI_C_VERSION}")
    if(MPIEXEC_EXECUTABLE)
      string(APPEND spmd_mpi_why "; tests under ${MPIEXEC_EXECUTABLE}")
    else()
      string(APPEND spmd_mpi_why "; no mpiexec, so no tests under it")
    endif()
  else()
    set(spmd_mpi_why "no MPI C library found (Debian: libopenmpi-dev)")
  endif()
  if(SPMD_WITH_MPI STREQUAL "ON" AND NOT SPMD_HAVE_MPI)
    message(FATAL_ERROR "SPMD_WITH_MPI=ON, but MPI cannot be built: ${spmd_mpi_why}")
  endif()
  if(SPMD_WITH_MPI STREQUAL "ON" AND NOT MPIEXEC_EXECUTABLE)
    message(FATAL_ERROR "SPMD_WITH_MPI=ON, but no mpiexec runs its tests (Debian: openmpi-bin)")
  endif()
endif()

if(SPMD_HAVE_MPI)
  message(STATUS "libspmd distributed: mpi (${spmd_mpi_why})")
else()
  message(STATUS "libspmd distributed: mpi left out (${spmd_mpi_why})")
endif()
