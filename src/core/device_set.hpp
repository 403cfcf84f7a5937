// What the pure model needs to know of the devices a mesh names: how many
// there are and how JAX prints them. The runtime implements it; core never
// sees a runtime, so meshes and shardings can be built and tested without
// one.
#pragma once

#include <memory>
#include <string>

namespace spmd {

class DeviceSet {
 public:
  virtual ~DeviceSet() = default;

  virtual int device_count() const = 0;
  // JAX's repr of a device: "CpuDevice(id=0)", "CudaDevice(id=0)".
  virtual std::string device_repr(int device) const = 0;
  // The platform label of sharding pictures: "CPU", "GPU".
  virtual const char *picture_label() const = 0;
  // Whether this process holds the device (a runtime over several
  // processes names other processes' devices too).
  virtual bool is_local(int device) const {
    (void)device;
    return true;
  }

  // Throws OUT_OF_RANGE naming `what` unless 0 <= device < device_count().
  void check_device(const char *what, int device) const;
};

using DeviceSetPtr = std::shared_ptr<const DeviceSet>;

}  // namespace spmd
