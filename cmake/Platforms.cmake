# Detects the optional platforms. The CPU and sim platforms need nothing.
# The CUDA platform needs nvcc and the CUDA runtime: SPMD_WITH_CUDA=AUTO
# builds it when both are found (saying which it chose), ON requires them
# and stops here when they are missing, OFF leaves it out. NCCL is found for
# the collectives the CUDA platform will run.

set(SPMD_HAVE_CUDA OFF)
set(SPMD_HAVE_NCCL OFF)
set(spmd_cuda_why "SPMD_WITH_CUDA=OFF")

if(NOT SPMD_WITH_CUDA STREQUAL "OFF")
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  if(NOT DEFINED CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    find_package(CUDAToolkit QUIET)
    if(CUDAToolkit_FOUND AND TARGET CUDA::cudart)
      set(SPMD_HAVE_CUDA ON)
    else()
      set(spmd_cuda_why "nvcc found at ${CMAKE_CUDA_COMPILER} but not the CUDA runtime library")
    endif()
  else()
    set(spmd_cuda_why "no CUDA compiler (nvcc) found; set CMAKE_CUDA_COMPILER or CUDACXX")
  endif()
  if(NOT SPMD_HAVE_CUDA AND SPMD_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "SPMD_WITH_CUDA=ON, but the CUDA platform cannot be built: ${spmd_cuda_why}")
  endif()
endif()

if(SPMD_HAVE_CUDA)
  # The GPUs libspmd is tested on (A100: 80, H100/H200: 90), unless chosen.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80 90)
  endif()
  enable_language(CUDA)
  # C++20, as the host code (CMAKE_CXX_STANDARD carries over to CUDA).
  # CMake before 3.26 does not know nvcc's flag for it.
  if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
  set(spmd_cuda_why "nvcc ${CMAKE_CUDA_COMPILER_VERSION} at ${CMAKE_CUDA_COMPILER}, architectures ${CMAKE_CUDA_ARCHITECTURES}")
endif()

if(SPMD_HAVE_CUDA AND NOT SPMD_WITH_NCCL STREQUAL "OFF")
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/include)
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/lib/x86_64-linux-gnu)
  if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(SPMD_HAVE_NCCL ON)
  elseif(SPMD_WITH_NCCL STREQUAL "ON")
    message(FATAL_ERROR "SPMD_WITH_NCCL=ON but nccl.h / libnccl were not found")
  endif()
elseif(SPMD_WITH_NCCL STREQUAL "ON")
  message(FATAL_ERROR "SPMD_WITH_NCCL=ON needs the CUDA platform (SPMD_WITH_CUDA)")
endif()

if(SPMD_HAVE_CUDA)
  message(STATUS "libspmd platforms: cpu, sim, cuda (${spmd_cuda_why}; nccl=${SPMD_HAVE_NCCL})")
else()
  message(STATUS "libspmd platforms: cpu, sim; cuda left out (${spmd_cuda_why})")
endif()
