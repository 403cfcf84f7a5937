#include "backend/cuda/cuda_backend.hpp"

#include <cuda_runtime.h>

#include <atomic>
#include <map>

#include "base/dtype.hpp"
#include "base/error.hpp"
#include "spmd/sharding.h"

namespace spmd::cuda {

namespace {

void check(cudaError_t status, const char *what) {
  if (status == cudaSuccess) return;
  cudaGetLastError();  // clear a non-sticky error
  fail(status == cudaErrorMemoryAllocation ? SPMD_ERR_OUT_OF_MEMORY : SPMD_ERR_INTERNAL,
       "CUDA ", what, ": ", cudaGetErrorString(status));
}

// An event of this backend: a CUDA event recorded on each stream the work
// went to, so later work on any stream waits for it on the GPU, and the
// host event completed by a host function queued behind the work.
class StreamEvent final : public Event {
 public:
  ~StreamEvent() override {
    for (const auto &[device, event] : recorded) {
      cudaSetDevice(device);
      cudaEventDestroy(event);
    }
  }
  std::vector<std::pair<int, cudaEvent_t>> recorded;
  std::atomic<int> pending{0};
};

struct HostCompletion {
  std::shared_ptr<StreamEvent> event;
};

void CUDART_CB complete_on_host(void *data) {
  auto *c = static_cast<HostCompletion *>(data);
  if (c->event->pending.fetch_sub(1) == 1) c->event->complete();
  delete c;
}

// Fills `count` elements of `size` bytes with `pattern`.
struct Pattern {
  unsigned char bytes[8];
  int size;
};

template <typename T>
__global__ void fill_typed(T *out, size_t count, T value) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    out[i] = value;
}

template <typename T>
void launch_fill(void *out, size_t count, const Pattern &p, cudaStream_t stream) {
  T value;
  memcpy(&value, p.bytes, sizeof value);
  const unsigned threads = 256;
  const size_t wanted = (count + threads - 1) / threads;
  const unsigned blocks = static_cast<unsigned>(wanted < 4096 ? (wanted ? wanted : 1) : 4096);
  fill_typed<T><<<blocks, threads, 0, stream>>>(static_cast<T *>(out), count, value);
}

}  // namespace

struct CudaBackend::Device {
  int id = 0;
  std::string name;
  cudaStream_t stream = nullptr;
};

namespace {

// Makes `stream` wait for `after`: this backend's events on the GPU, any
// other on the host (their errors surface here).
void wait_on(cudaStream_t stream, const EventList &after) {
  for (const auto &e : after.events()) {
    if (auto *se = dynamic_cast<StreamEvent *>(e.get())) {
      for (const auto &[device, event] : se->recorded)
        check(cudaStreamWaitEvent(stream, event, 0), "cudaStreamWaitEvent");
    } else {
      e->wait();
    }
  }
}

// The event of everything queued so far on the streams of `devices`.
EventPtr record(const std::vector<CudaBackend::Device *> &devices) {
  if (devices.empty()) return nullptr;
  auto e = std::make_shared<StreamEvent>();
  e->pending.store(static_cast<int>(devices.size()));
  for (auto *d : devices) {
    check(cudaSetDevice(d->id), "cudaSetDevice");
    cudaEvent_t ev;
    check(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "cudaEventCreate");
    e->recorded.emplace_back(d->id, ev);
    check(cudaEventRecord(ev, d->stream), "cudaEventRecord");
    auto *c = new HostCompletion{e};
    const cudaError_t st = cudaLaunchHostFunc(d->stream, complete_on_host, c);
    if (st != cudaSuccess) {
      delete c;
      check(st, "cudaLaunchHostFunc");
    }
  }
  return e;
}

void *address(const Place &p) { return reinterpret_cast<void *>(p.ptr.bits); }

// One box copy as runs of contiguous bytes (2D copies over the innermost
// strided dimension), queued on `stream`.
void copy_box_async(const BoxCopy &c, cudaStream_t stream) {
  const size_t nd = c.extent.size();
  for (int64_t e : c.extent)
    if (e <= 0) return;
  auto *src = static_cast<const char *>(address(c.src.place));
  auto *dst = static_cast<char *>(address(c.dst.place));
  const size_t es = c.elem_size;
  if (nd == 0) {
    check(cudaMemcpyAsync(dst, src, es, cudaMemcpyDefault, stream), "cudaMemcpyAsync");
    return;
  }
  int64_t ss[SPMD_MAX_NDIM], ds[SPMD_MAX_NDIM];
  ss[nd - 1] = ds[nd - 1] = 1;
  for (size_t i = nd - 1; i > 0; --i) {
    ss[i - 1] = ss[i] * c.src.shape[i];
    ds[i - 1] = ds[i] * c.dst.shape[i];
  }
  int64_t so = 0, dof = 0;
  for (size_t i = 0; i < nd; ++i) {
    so += c.src.offset[i] * ss[i];
    dof += c.dst.offset[i] * ds[i];
  }
  src += so * static_cast<int64_t>(es);
  dst += dof * static_cast<int64_t>(es);
  // Trailing dimensions covered whole in both buffers form one run.
  size_t inner = nd - 1;
  int64_t run = c.extent[inner];
  while (inner > 0 && c.extent[inner] == c.src.shape[inner] &&
         c.extent[inner] == c.dst.shape[inner]) {
    --inner;
    run *= c.extent[inner];
  }
  const size_t run_bytes = static_cast<size_t>(run) * es;
  if (inner == 0) {
    check(cudaMemcpyAsync(dst, src, run_bytes, cudaMemcpyDefault, stream), "cudaMemcpyAsync");
    return;
  }
  // Rows of dimension inner-1 are one 2D copy; the dimensions before it
  // are walked.
  const size_t rows = static_cast<size_t>(c.extent[inner - 1]);
  const size_t spitch = static_cast<size_t>(ss[inner - 1]) * es;
  const size_t dpitch = static_cast<size_t>(ds[inner - 1]) * es;
  int64_t idx[SPMD_MAX_NDIM] = {0};
  const size_t outer = inner - 1;
  for (;;) {
    int64_t s = 0, d = 0;
    for (size_t i = 0; i < outer; ++i) {
      s += idx[i] * ss[i];
      d += idx[i] * ds[i];
    }
    check(cudaMemcpy2DAsync(dst + d * static_cast<int64_t>(es), dpitch,
                            src + s * static_cast<int64_t>(es), spitch, run_bytes, rows,
                            cudaMemcpyDefault, stream),
          "cudaMemcpy2DAsync");
    size_t k = outer;
    for (;;) {
      if (k == 0) return;
      --k;
      if (++idx[k] < c.extent[k]) break;
      idx[k] = 0;
    }
  }
}

}  // namespace

CudaBackend::CudaBackend() {
  int count = 0;
  const cudaError_t st = cudaGetDeviceCount(&count);
  if (st != cudaSuccess || count == 0)
    fail(SPMD_ERR_UNSUPPORTED, "platform: no CUDA device is visible (",
         st == cudaSuccess ? "cudaGetDeviceCount found none" : cudaGetErrorString(st), ")");
  for (int d = 0; d < count; ++d) {
    auto dev = std::make_unique<Device>();
    dev->id = d;
    cudaDeviceProp prop;
    check(cudaGetDeviceProperties(&prop, d), "cudaGetDeviceProperties");
    dev->name = prop.name;
    check(cudaSetDevice(d), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&dev->stream, cudaStreamNonBlocking), "cudaStreamCreate");
    devices_.push_back(std::move(dev));
  }
}

CudaBackend::~CudaBackend() {
  for (auto &d : devices_) {
    cudaSetDevice(d->id);
    cudaStreamSynchronize(d->stream);
    cudaStreamDestroy(d->stream);
  }
}

int CudaBackend::device_count() const { return static_cast<int>(devices_.size()); }

const char *CudaBackend::device_kind(int device) const {
  return devices_.at(static_cast<size_t>(device))->name.c_str();
}

std::string CudaBackend::device_repr(int device) const {
  return cat("CudaDevice(id=", device, ")");
}

DevicePtr CudaBackend::allocate(int device, size_t bytes, MemoryKind kind) {
  Device &d = *devices_.at(static_cast<size_t>(device));
  check(cudaSetDevice(d.id), "cudaSetDevice");
  void *p = nullptr;
  if (kind == MemoryKind::Mapped)
    check(cudaHostAlloc(&p, bytes, cudaHostAllocMapped | cudaHostAllocPortable), "cudaHostAlloc");
  else
    check(cudaMallocAsync(&p, bytes, d.stream), "cudaMallocAsync");
  return {reinterpret_cast<uintptr_t>(p)};
}

void CudaBackend::deallocate(int device, DevicePtr ptr, size_t, MemoryKind kind,
                             const EventList &after) {
  Device &d = *devices_.at(static_cast<size_t>(device));
  cudaSetDevice(d.id);
  if (kind == MemoryKind::Mapped) {
    for (const auto &e : after.events()) e->wait_status();
    cudaFreeHost(reinterpret_cast<void *>(ptr.bits));
    return;
  }
  // Ordered after its users on the device's stream; users that failed
  // still free it.
  for (const auto &e : after.events()) {
    if (auto *se = dynamic_cast<StreamEvent *>(e.get())) {
      for (const auto &[dev, event] : se->recorded) cudaStreamWaitEvent(d.stream, event, 0);
    } else {
      e->wait_status();
    }
  }
  cudaFreeAsync(reinterpret_cast<void *>(ptr.bits), d.stream);
}

EventPtr CudaBackend::copy_boxes(std::span<const BoxCopy> copies, const EventList &after) {
  // Each copy goes to the stream of the device it writes (or reads, when it
  // writes to the host).
  std::map<int, std::vector<const BoxCopy *>> by_device;
  for (const auto &c : copies) {
    const int d = c.dst.place.kind != MemoryKind::Host ? c.dst.place.device : c.src.place.device;
    if (d < 0) fail(SPMD_ERR_INTERNAL, "CUDA platform: a copy from host to host");
    by_device[d].push_back(&c);
  }
  std::vector<Device *> used;
  for (const auto &[device, batch] : by_device) {
    Device &d = *devices_.at(static_cast<size_t>(device));
    check(cudaSetDevice(d.id), "cudaSetDevice");
    wait_on(d.stream, after);
    for (const BoxCopy *c : batch) copy_box_async(*c, d.stream);
    used.push_back(&d);
  }
  return record(used);
}

EventPtr CudaBackend::launch(std::span<const Kernel> kernels, const EventList &after) {
  std::map<int, std::vector<const Kernel *>> by_device;
  for (const auto &k : kernels) {
    if (k.kind != KernelKind::Fill)
      fail(SPMD_ERR_UNSUPPORTED, "the CUDA platform does not run ", kernel_name(k.kind),
           " kernels yet");
    by_device[k.device].push_back(&k);
  }
  std::vector<Device *> used;
  for (const auto &[device, batch] : by_device) {
    Device &d = *devices_.at(static_cast<size_t>(device));
    check(cudaSetDevice(d.id), "cudaSetDevice");
    wait_on(d.stream, after);
    for (const Kernel *k : batch) {
      Pattern p{};
      memcpy(p.bytes, k->pattern, k->pattern_bytes);
      p.size = static_cast<int>(k->pattern_bytes);
      void *out = address(k->out);
      switch (p.size) {
        case 1: launch_fill<uint8_t>(out, k->count, p, d.stream); break;
        case 2: launch_fill<uint16_t>(out, k->count, p, d.stream); break;
        case 4: launch_fill<uint32_t>(out, k->count, p, d.stream); break;
        case 8: launch_fill<uint64_t>(out, k->count, p, d.stream); break;
        default: fail(SPMD_ERR_INTERNAL, "fill of ", p.size, "-byte elements");
      }
      check(cudaGetLastError(), "fill kernel launch");
    }
    used.push_back(&d);
  }
  return record(used);
}

}  // namespace spmd::cuda
