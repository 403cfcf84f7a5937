// The one place that knows every backend: it builds the one a runtime's
// options (or SPMD_PLATFORM and SPMD_CPU_DEVICES) ask for.
#pragma once

#include <memory>

#include "backend/backend.hpp"
#include "spmd/runtime.h"

namespace spmd {

// Throws INVALID_ARGUMENT for bad options or environment values, and
// UNSUPPORTED for a platform this build or machine lacks.
std::shared_ptr<Backend> make_backend(const spmd_runtime_options &options);

}  // namespace spmd
