// The CPU platform: N virtual devices in this process, each with its own
// buffers in host memory (like --xla_force_host_platform_device_count).
#pragma once

#include <memory>

#include "backend/backend.hpp"
#include "backend/cpu/host_allocator.hpp"

namespace spmd::cpu {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int devices);

  spmd_platform platform() const override { return SPMD_PLATFORM_CPU; }
  const char *platform_name() const override { return "cpu"; }
  int device_count() const override { return devices_; }
  const char *device_kind(int) const override { return "cpu"; }
  std::string device_repr(int device) const override;
  const char *picture_label() const override { return "CPU"; }

  void *allocate(int device, size_t bytes) override;
  void deallocate(int device, void *ptr, size_t bytes) override;
  void copy_box(const BoxCopy &copy) override;
  void fill(int device, void *ptr, size_t count, const void *pattern,
            size_t elem_size) override;
  void fill_arange(int device, void *ptr, spmd_dtype dtype, const Shape &global,
                   const Box &box, double start, double step) override;
  void fill_random(int device, void *ptr, const rng::Request &request,
                   const Shape &global, const Box &box) override;
  void synchronize(int) override {}
  void run_collective(const CollectiveCall &call, GroupSync &group) override;
  bool run_collective_groups(const std::vector<GroupCall> &groups,
                             const std::function<void(size_t, const std::function<void(size_t)> &)>
                                 &parallel_for) override;

 private:
  int devices_;
  HostAllocator allocator_;
};

}  // namespace spmd::cpu
