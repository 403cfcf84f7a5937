// The kernels of backend/kernel.hpp over host-addressable memory, for the
// backends that can reach their memory from the host (CPU, sim).
#pragma once

#include "backend/kernel.hpp"

namespace spmd::host {

// Runs `kernel` with its places already turned into host addresses.
void run_kernel(const Kernel &kernel, void *out, const void *const in[3]);

// Bytes a kernel writes at `out`, and reads at input i (0..2) (for backends
// that check or translate the memory they are given).
size_t kernel_out_bytes(const Kernel &kernel);
size_t kernel_in_bytes(const Kernel &kernel, int i);

}  // namespace spmd::host
