# Detects the optional platforms. The CPU platform needs nothing; CUDA,
# cuBLAS and NCCL are used when found (AUTO), required (ON) or ignored (OFF).

set(SPMD_HAVE_CUDA OFF)
set(SPMD_HAVE_NCCL OFF)

if(NOT SPMD_WITH_CUDA STREQUAL "OFF")
  if(NOT DEFINED CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND AND TARGET CUDA::cudart AND TARGET CUDA::cublas)
    set(SPMD_HAVE_CUDA ON)
  elseif(SPMD_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "SPMD_WITH_CUDA=ON but the CUDA Toolkit (cudart, cuBLAS) was not found")
  endif()
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

message(STATUS "libspmd platforms: cpu=ON cuda-toolkit=${SPMD_HAVE_CUDA} nccl=${SPMD_HAVE_NCCL}")
