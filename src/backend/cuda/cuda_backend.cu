#include "backend/cuda/cuda_backend.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>

#include "backend/cuda/backend_impl.hpp"
#include "backend/cuda/host_times.hpp"
#include "backend/cuda/kernels.hpp"
#include "backend/cuda/stream_event.hpp"
#include "backend/host/copy.hpp"
#include "base/dtype.hpp"
#include "kernels/device/elementwise_chain.hpp"

namespace spmd::cuda {

namespace {

// The most logical devices one GPU takes.
constexpr int kMaxDevicesPerGpu = 64;

bool env_flag(const char *name) {
  const char *v = std::getenv(name);
  if (v == nullptr || *v == '\0' || std::strcmp(v, "0") == 0) return false;
  if (std::strcmp(v, "1") == 0) return true;
  invalid(name, "='", v, "': expected 0 or 1");
}

size_t box_bytes(const Shape &extent, size_t elem_size) {
  return static_cast<size_t>(shape_elements(extent)) * elem_size;
}

// One box copy as runs of contiguous bytes: one cudaMemcpyAsync when the
// box is one run in both buffers, else 2D copies over the innermost strided
// dimension, the dimensions before it walked.
void copy_box_async(const void *src_base, const CopyEndpoint &src, void *dst_base,
                    const CopyEndpoint &dst, const Shape &extent, size_t es,
                    cudaStream_t stream) {
  const size_t nd = extent.size();
  for (int64_t e : extent)
    if (e <= 0) return;
  auto *s = static_cast<const char *>(src_base);
  auto *d = static_cast<char *>(dst_base);
  if (nd == 0) {
    check(cudaMemcpyAsync(d, s, es, cudaMemcpyDefault, stream), "cudaMemcpyAsync");
    return;
  }
  const Shape ss = host::dense_strides(src.shape), ds = host::dense_strides(dst.shape);
  for (size_t i = 0; i < nd; ++i) {
    s += src.offset[i] * ss[i] * static_cast<int64_t>(es);
    d += dst.offset[i] * ds[i] * static_cast<int64_t>(es);
  }
  // Trailing dimensions covered whole in both buffers form one run.
  size_t inner = nd - 1;
  int64_t run = extent[inner];
  while (inner > 0 && extent[inner] == src.shape[inner] && extent[inner] == dst.shape[inner]) {
    --inner;
    run *= extent[inner];
  }
  const size_t run_bytes = static_cast<size_t>(run) * es;
  if (inner == 0) {
    check(cudaMemcpyAsync(d, s, run_bytes, cudaMemcpyDefault, stream), "cudaMemcpyAsync");
    return;
  }
  const size_t rows = static_cast<size_t>(extent[inner - 1]);
  const size_t spitch = static_cast<size_t>(ss[inner - 1]) * es;
  const size_t dpitch = static_cast<size_t>(ds[inner - 1]) * es;
  const size_t outer = inner - 1;
  Shape idx(outer, 0);
  for (;;) {
    int64_t so = 0, dof = 0;
    for (size_t i = 0; i < outer; ++i) {
      so += idx[i] * ss[i];
      dof += idx[i] * ds[i];
    }
    check(cudaMemcpy2DAsync(d + dof * static_cast<int64_t>(es), dpitch,
                            s + so * static_cast<int64_t>(es), spitch, run_bytes, rows,
                            cudaMemcpyDefault, stream),
          "cudaMemcpy2DAsync");
    size_t k = outer;
    for (;;) {
      if (k == 0) return;
      --k;
      if (++idx[k] < extent[k]) break;
      idx[k] = 0;
    }
  }
}

}  // namespace

void CudaBackend::Impl::release_cached(const Gpu &gpu) noexcept {
  cudaGetLastError();
  for (auto &d : devices) {
    if (d->gpu != &gpu) continue;
    DeviceGuard guard(gpu.ordinal);
    cudaStreamSynchronize(d->stream);
    cudaMemPoolTrimTo(d->pool, 0);
  }
  cudaGetLastError();
  staging.trim();
}

void CudaBackend::Impl::ensure_blas(LogicalDevice &d) {
  if (d.blas) return;
  // cuBLAS takes device memory of its own, outside the pools: where the
  // GPU is full, what the pools keep is given back and it tries again.
  cublasHandle_t h = nullptr;
  cublasStatus_t made = cublasCreate(&h);
  if (made == CUBLAS_STATUS_ALLOC_FAILED || made == CUBLAS_STATUS_NOT_INITIALIZED) {
    release_cached(*d.gpu);
    made = cublasCreate(&h);
  }
  if (made != CUBLAS_STATUS_SUCCESS) {
    size_t free_bytes = 0, total = 0;
    cudaMemGetInfo(&free_bytes, &total);
    cudaGetLastError();
    fail(made == CUBLAS_STATUS_ALLOC_FAILED ? SPMD_ERR_OUT_OF_MEMORY : SPMD_ERR_INTERNAL, d.label(),
         ": cublasCreate failed: ", cublasGetStatusName(made), " (", free_bytes, " of ", total,
         " bytes of the GPU free)");
  }
  void *ws = nullptr;
  cudaError_t st = cudaMalloc(&ws, kBlasWorkspaceBytes);
  if (st == cudaErrorMemoryAllocation) {
    release_cached(*d.gpu);
    st = cudaMalloc(&ws, kBlasWorkspaceBytes);
  }
  if (st != cudaSuccess) {
    cudaGetLastError();
    cublasDestroy(h);
    fail(status_of(st), d.label(), ": cannot allocate cuBLAS's workspace of ",
         kBlasWorkspaceBytes, " bytes: ", cudaGetErrorString(st));
  }
  if (cublasSetStream(h, d.stream) != CUBLAS_STATUS_SUCCESS ||
      cublasSetWorkspace(h, ws, kBlasWorkspaceBytes) != CUBLAS_STATUS_SUCCESS ||
      cublasSetMathMode(h, allow_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH) !=
          CUBLAS_STATUS_SUCCESS) {
    cublasDestroy(h);
    cudaFree(ws);
    fail(SPMD_ERR_INTERNAL, d.label(), ": cuBLAS refused its stream or workspace");
  }
  d.blas = h;
  d.blas_workspace = ws;
  d.blas_workspace_bytes = kBlasWorkspaceBytes;
}

void CudaBackend::Impl::ensure_kernel_scratch(LogicalDevice &d) {
  if (d.kernel_scratch) return;
  void *p = nullptr;
  const cudaError_t st = cudaMalloc(&p, kKernelScratchBytes);
  if (st != cudaSuccess) {
    cudaGetLastError();
    fail(status_of(st), d.label(), ": cannot allocate the kernels' scratch of ",
         kKernelScratchBytes, " bytes: ", cudaGetErrorString(st));
  }
  d.kernel_scratch = p;
}

void CudaBackend::Impl::host_transfer(const BoxCopy &c, const EventList &after) {
  const bool to_device = c.dst.place.kind != MemoryKind::Host;
  const bool from_device = c.src.place.kind != MemoryKind::Host;
  if (to_device == from_device)
    fail(SPMD_ERR_INTERNAL, "CUDA platform: a host transfer with ", to_device ? "no" : "two",
         " host sides");
  const size_t bytes = box_bytes(c.extent, c.elem_size);
  if (bytes == 0) return;
  LogicalDevice &d = dev(to_device ? c.dst.place.device : c.src.place.device);
  void *stage = staging.take(bytes);
  const CopyEndpoint dense{Place::host(stage), c.extent, Shape(c.extent.size(), 0)};
  try {
    if (to_device)
      host::copy_box(address(c.src.place), c.src.shape, c.src.offset, stage, c.extent,
                     dense.offset, c.extent, c.elem_size);
    EventPtr done;
    {
      std::lock_guard<std::mutex> lock(d.mu);
      DeviceGuard guard(d.gpu->ordinal);
      wait_on(d, after);
      if (to_device)
        copy_box_async(stage, dense, address(c.dst.place), c.dst, c.extent, c.elem_size,
                       d.stream);
      else
        copy_box_async(address(c.src.place), c.src, stage, dense, c.extent, c.elem_size,
                       d.stream);
      done = record(d, after, cat(d.label(), ": copy ", to_device ? "to" : "from",
                                  " the host"));
    }
    if (done) done->wait();
    if (!to_device)
      host::copy_box(stage, c.extent, dense.offset, address(c.dst.place), c.dst.shape,
                     c.dst.offset, c.extent, c.elem_size);
  } catch (...) {
    // A wait fails only once the copy has ended (a fault ends the whole
    // context), so the stage is free again either way.
    staging.give_back(stage, bytes);
    throw;
  }
  staging.give_back(stage, bytes);
}

CudaBackend::CudaBackend(const PluginConfig &config) : impl_(std::make_unique<Impl>()) {
  Impl &m = *impl_;
  m.config = config;
  if (config.devices_per_gpu < 1 || config.devices_per_gpu > kMaxDevicesPerGpu)
    invalid("devices per GPU: ", config.devices_per_gpu, " is not from 1 to ",
            kMaxDevicesPerGpu);
  m.allow_tf32 = env_flag("SPMD_CUDA_ALLOW_TF32");
  m.collectives = collectives_policy_from_env();
  if (env_flag("SPMD_CUDA_HOST_TIMES")) host_times::enable();
  int count = 0;
  const cudaError_t st = cudaGetDeviceCount(&count);
  if (st != cudaSuccess || count == 0) {
    cudaGetLastError();
    fail(SPMD_ERR_UNSUPPORTED, "platform: the CUDA platform has no GPU to run on (",
         st == cudaSuccess ? "the driver sees none"
                           : cat(cudaGetErrorName(st), ": ", cudaGetErrorString(st)),
         ")");
  }
  int previous = -1;
  cudaGetDevice(&previous);
  try {
    for (int g = 0; g < count; ++g) {
      m.gpus.push_back(std::make_unique<Gpu>());
      Gpu *gpu = m.gpus.back().get();
      gpu->ordinal = g;
      cudaDeviceProp prop;
      check(cudaGetDeviceProperties(&prop, g), "cudaGetDeviceProperties");
      gpu->name = prop.name;
      gpu->memory_bytes = prop.totalGlobalMem;
      gpu->compute_capability = prop.major * 10 + prop.minor;
      gpu->sm_count = prop.multiProcessorCount;
      gpu->events = std::make_shared<EventPool>(g);
      DeviceGuard guard(g);
      // Peers' memory is read directly by copies and collectives.
      for (int p = 0; p < count; ++p) {
        int can = 0;
        if (p != g && cudaDeviceCanAccessPeer(&can, g, p) == cudaSuccess && can) {
          const cudaError_t e = cudaDeviceEnablePeerAccess(p, 0);
          if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled)
            check(e, "cudaDeviceEnablePeerAccess");
          cudaGetLastError();
        }
      }
      for (int j = 0; j < config.devices_per_gpu; ++j) {
        m.devices.push_back(std::make_unique<LogicalDevice>());
        LogicalDevice &d = *m.devices.back();  // owned from here on, made or not
        d.id = static_cast<int>(m.devices.size()) - 1;
        d.gpu = gpu;
        d.index_on_gpu = j;
        d.name();
        check(cudaStreamCreateWithFlags(&d.stream, cudaStreamNonBlocking), "cudaStreamCreate");
        cudaMemPoolProps props{};
        props.allocType = cudaMemAllocationTypePinned;
        props.location.type = cudaMemLocationTypeDevice;
        props.location.id = g;
        check(cudaMemPoolCreate(&d.pool, &props), "cudaMemPoolCreate");
        // Freed memory the pool keeps: the runtime's cache, shared by the
        // logical devices of the GPU; all of it when none is asked.
        uint64_t keep = config.cache_bytes < 0
                            ? UINT64_MAX
                            : static_cast<uint64_t>(config.cache_bytes) /
                                  static_cast<uint64_t>(config.devices_per_gpu);
        check(cudaMemPoolSetAttribute(d.pool, cudaMemPoolAttrReleaseThreshold, &keep),
              "cudaMemPoolSetAttribute");
        // Other GPUs read this pool's memory directly where they can.
        for (int p = 0; p < count; ++p) {
          int can = 0;
          if (p != g && cudaDeviceCanAccessPeer(&can, p, g) == cudaSuccess && can) {
            cudaMemAccessDesc desc{};
            desc.location.type = cudaMemLocationTypeDevice;
            desc.location.id = p;
            desc.flags = cudaMemAccessFlagsProtReadWrite;
            check(cudaMemPoolSetAccess(d.pool, &desc, 1), "cudaMemPoolSetAccess");
          }
        }
      }
    }
  } catch (...) {
    if (previous >= 0) cudaSetDevice(previous);
    throw;  // what was made goes with impl_
  }
  if (previous >= 0) cudaSetDevice(previous);
#ifdef SPMD_HAVE_NCCL
  std::vector<LogicalDevice *> all;
  for (auto &d : m.devices) all.push_back(d.get());
  m.nccl = std::make_shared<NcclCollectives>(std::move(all));
#endif
}

CudaBackend::~CudaBackend() {
  impl_.reset();  // its work finished first
  if (host_times::enabled()) host_times::report(stderr);
}

int CudaBackend::device_count() const { return static_cast<int>(impl_->devices.size()); }

const char *CudaBackend::device_kind(int device) const {
  return impl_->dev(device).gpu->name.c_str();
}

std::string CudaBackend::device_repr(int device) const {
  return cat("CudaDevice(id=", device, ")");
}

int64_t CudaBackend::device_memory_bytes(int device) const {
  return static_cast<int64_t>(impl_->dev(device).gpu->memory_bytes);
}

int CudaBackend::device_compute_capability(int device) const {
  return impl_->dev(device).gpu->compute_capability;
}

Backend::SharedMemoryDevice CudaBackend::shared_memory_device(int device) const {
  return {SharedMemoryDevice::Kind::Cuda, impl_->dev(device).gpu->ordinal};
}

MemoryKind CudaBackend::callback_memory() const { return impl_->config.callback_memory; }

size_t CudaBackend::max_chain_steps() const { return dev::ew::kMaxChainSteps; }

void *CudaBackend::device_stream(int device) { return impl_->dev(device).stream; }

// ---- memory ----

DevicePtr CudaBackend::allocate(int device, size_t bytes, MemoryKind kind) {
  host_times::Scope timed(host_times::Kind::AllocateEntry);
  Impl &m = *impl_;
  LogicalDevice &d = m.dev(device);
  if (bytes == 0) return {};
  if (kind == MemoryKind::Mapped) return {reinterpret_cast<uintptr_t>(m.mapped.take(bytes))};
  if (kind != MemoryKind::Device)
    fail(SPMD_ERR_INTERNAL, "CUDA platform: host memory is not allocated by the backend");
  void *p = nullptr;
  cudaError_t st;
  {
    std::lock_guard<std::mutex> lock(d.mu);
    DeviceGuard guard(d.gpu->ordinal);
    host_times::Scope pool(host_times::Kind::PoolAllocate);
    st = cudaMallocFromPoolAsync(&p, bytes, d.pool, d.stream);
  }
  if (st == cudaErrorMemoryAllocation) {
    // Memory freed but kept by the pools, or whose frees are still queued,
    // is given back first.
    m.release_cached(*d.gpu);
    std::lock_guard<std::mutex> lock(d.mu);
    DeviceGuard guard(d.gpu->ordinal);
    st = cudaMallocFromPoolAsync(&p, bytes, d.pool, d.stream);
  }
  if (st != cudaSuccess) {
    cudaGetLastError();
    size_t free_bytes = 0, total = 0;
    {
      DeviceGuard guard(d.gpu->ordinal);
      cudaMemGetInfo(&free_bytes, &total);
    }
    fail(status_of(st), d.label(), ": cannot allocate ", bytes, " bytes (", free_bytes,
         " of the GPU's ", total, " bytes are free): ", cudaGetErrorString(st));
  }
  return {reinterpret_cast<uintptr_t>(p)};
}

void CudaBackend::deallocate(int device, DevicePtr ptr, size_t bytes, MemoryKind kind,
                             const EventList &after) {
  host_times::Scope timed(host_times::Kind::FreeEntry);
  Impl &m = *impl_;
  if (!ptr) return;
  if (kind == MemoryKind::Mapped) {
    for (const auto &e : after.events()) e->wait_status();
    m.mapped.give_back(reinterpret_cast<void *>(ptr.bits), bytes);
    return;
  }
  LogicalDevice *d = nullptr;
  try {
    d = &m.dev(device);
  } catch (...) {
    return;
  }
  // Ordered after its users on the device's stream; users that failed
  // still free it.
  std::lock_guard<std::mutex> lock(d->mu);
  int previous = -1;
  cudaGetDevice(&previous);
  cudaSetDevice(d->gpu->ordinal);
  wait_on_quietly(*d, after);
  cudaError_t freed;
  {
    host_times::Scope pool(host_times::Kind::PoolFree);
    freed = cudaFreeAsync(reinterpret_cast<void *>(ptr.bits), d->stream);
  }
  if (freed != cudaSuccess) cudaGetLastError();
  if (previous >= 0 && previous != d->gpu->ordinal) cudaSetDevice(previous);
}

// ---- work ----

EventPtr CudaBackend::copy_boxes(std::span<const BoxCopy> copies, const EventList &after) {
  host_times::Scope timed(host_times::Kind::CopyEntry);
  Impl &m = *impl_;
  if (EventPtr failed = failed_dependency(after)) return failed;
  // Transfers with the host are staged and finish here; the rest go to the
  // stream of the device they write (or read, for mapped destinations)
  // and finish later.
  std::map<int, std::vector<const BoxCopy *>> by_device;
  for (const auto &c : copies) {
    if (c.src.place.kind == MemoryKind::Host || c.dst.place.kind == MemoryKind::Host) {
      m.host_transfer(c, after);
      continue;
    }
    const int d = c.dst.place.kind == MemoryKind::Device ? c.dst.place.device
                                                          : c.src.place.device;
    by_device[d].push_back(&c);
  }
  EventBuilder event("copy");
  for (const auto &[device, batch] : by_device) {
    LogicalDevice &d = m.dev(device);
    std::lock_guard<std::mutex> lock(d.mu);
    DeviceGuard guard(d.gpu->ordinal);
    wait_on(d, after);
    // Device memory on both sides goes in one launch of the copy kernel;
    // copies with mapped memory go by DMA.
    std::vector<BoxCopy> on_device;
    for (const BoxCopy *c : batch) {
      if (c->src.place.kind == MemoryKind::Device && c->dst.place.kind == MemoryKind::Device) {
        on_device.push_back(*c);
        continue;
      }
      copy_box_async(address(c->src.place), c->src, address(c->dst.place), c->dst, c->extent,
                     c->elem_size, d.stream);
    }
    if (on_device.size() == 1) {
      const BoxCopy &c = on_device.front();
      copy_box_async(address(c.src.place), c.src, address(c.dst.place), c.dst, c.extent,
                     c.elem_size, d.stream);
    } else if (!on_device.empty()) {
      launch_box_copies(on_device.data(), on_device.size(), d.stream);
    }
    event.add(d);
  }
  return event.finish(after);
}

EventPtr CudaBackend::launch(std::span<const Kernel> kernels, const EventList &after) {
  host_times::Scope timed(host_times::Kind::LaunchEntry);
  Impl &m = *impl_;
  if (EventPtr failed = failed_dependency(after)) return failed;
  // A kernel may write a result the host reads at once (the first
  // difference of two blocks): it writes mapped memory instead, and the
  // call finishes that part before it returns.
  struct HostResult {
    void *stage;
    void *host;
    size_t bytes;
  };
  std::vector<HostResult> host_results;
  struct GiveBack {
    Impl &m;
    std::vector<HostResult> &r;
    ~GiveBack() {
      for (auto &h : r) m.mapped.give_back(h.stage, h.bytes);
    }
  } give_back{m, host_results};
  std::vector<Kernel> staged;
  for (const auto &k : kernels)
    if (k.out.kind == MemoryKind::Host) staged.push_back(k);
  for (Kernel &k : staged) {
    if (k.kind != KernelKind::FirstDifference)
      fail(SPMD_ERR_INTERNAL, "CUDA platform: a ", kernel_name(k.kind),
           " kernel writing host memory");
    const size_t bytes = sizeof(int64_t);
    host_results.push_back({m.mapped.take(bytes), address(k.out), bytes});
    k.out = {MemoryKind::Mapped, k.device, {reinterpret_cast<uintptr_t>(host_results.back().stage)}};
  }
  // The kernels by device, in the order given on each (a sorted list, not
  // a map: an op's bookkeeping is part of its dispatch time).
  std::vector<std::pair<int, const Kernel *>> by_device;
  by_device.reserve(kernels.size());
  for (const auto &k : kernels)
    if (k.out.kind != MemoryKind::Host) by_device.emplace_back(k.device, &k);
  for (const auto &k : staged) by_device.emplace_back(k.device, &k);
  std::stable_sort(by_device.begin(), by_device.end(),
                   [](const auto &a, const auto &b) { return a.first < b.first; });
  size_t devices = 0;
  for (size_t i = 0; i < by_device.size(); ++i)
    devices += i == 0 || by_device[i].first != by_device[i - 1].first;
  const std::string what =
      kernels.empty() ? std::string("kernel") : std::string(kernel_name(kernels.front().kind)) + " kernel";
  EventBuilder event(devices == 1 ? m.dev(by_device.front().first).label() + ": " + what
                                  : std::to_string(devices) + " devices: " + what);
  for (size_t first = 0; first < by_device.size();) {
    size_t end = first;
    while (end < by_device.size() && by_device[end].first == by_device[first].first) ++end;
    LogicalDevice &d = m.dev(by_device[first].first);
    std::lock_guard<std::mutex> lock(d.mu);
    DeviceGuard guard(d.gpu->ordinal);
    wait_on(d, after);
    KernelEnv env;
    env.stream = d.stream;
    env.allow_tf32 = m.allow_tf32;
    env.sm_count = d.gpu->sm_count;
    env.device_label = d.label().c_str();
    for (; first < end; ++first) {
      const Kernel *k = by_device[first].second;
      if (k->kind == KernelKind::Gemm) {
        m.ensure_blas(d);
        env.blas = d.blas;
      } else if (k->kind == KernelKind::Reduce) {
        m.ensure_kernel_scratch(d);
        env.scratch = d.kernel_scratch;
        env.scratch_bytes = kKernelScratchBytes;
      }
      host_times::Scope launching(host_times::Kind::KernelLaunch);
      launch_kernel(*k, env);
    }
    event.add(d);
  }
  EventPtr done = event.finish(after);
  if (!host_results.empty()) {
    if (done) done->wait();
    for (const auto &h : host_results) std::memcpy(h.host, h.stage, h.bytes);
    return nullptr;
  }
  return done;
}

EventPtr CudaBackend::part_on(const EventPtr &done, int device) {
  const auto *whole = dynamic_cast<const StreamEvent *>(done.get());
  if (whole == nullptr || whole->records().size() <= 1 || device < 0 ||
      static_cast<size_t>(device) >= impl_->devices.size())
    return done;
  EventPtr part = whole->part(std::static_pointer_cast<const StreamEvent>(done),
                              impl_->devices[static_cast<size_t>(device)].get());
  return part ? part : done;
}

EventPtr CudaBackend::fence(int device) {
  LogicalDevice &d = impl_->dev(device);
  std::lock_guard<std::mutex> lock(d.mu);
  return record(d, {}, cat(d.label(), ": work queued on its stream"));
}

}  // namespace spmd::cuda
