#include "core/device_set.hpp"

#include "base/error.hpp"

namespace spmd {

void DeviceSet::check_device(const char *what, int device) const {
  if (device < 0 || device >= device_count())
    fail(SPMD_ERR_OUT_OF_RANGE, what, ": device ", device, " does not exist (the runtime has ",
         device_count(), " devices, 0 to ", device_count() - 1, ")");
}

}  // namespace spmd
