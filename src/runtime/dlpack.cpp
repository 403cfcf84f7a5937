#include "runtime/dlpack.hpp"

#include <memory>
#include <string>

#include "base/checked.hpp"
#include "base/dtype.hpp"
#include "base/error.hpp"
#include "runtime/runtime.hpp"

namespace spmd {

namespace {

// DLPack 0.8's kDLBool, which the 0.6 header does not name: one byte, 0 or 1.
constexpr uint8_t kDLBoolCode = 6;

DLDataType dl_type_of(spmd_dtype d) {
  switch (d) {
    case SPMD_F32: return {kDLFloat, 32, 1};
    case SPMD_F64: return {kDLFloat, 64, 1};
    case SPMD_F16: return {kDLFloat, 16, 1};
    case SPMD_BF16: return {kDLBfloat, 16, 1};
    case SPMD_I32: return {kDLInt, 32, 1};
    case SPMD_I64: return {kDLInt, 64, 1};
    case SPMD_U8: return {kDLUInt, 8, 1};
    case SPMD_I8: return {kDLInt, 8, 1};
    case SPMD_I16: return {kDLInt, 16, 1};
    case SPMD_U16: return {kDLUInt, 16, 1};
    case SPMD_U32: return {kDLUInt, 32, 1};
    case SPMD_BOOL: return {kDLBoolCode, 8, 1};
    default: break;
  }
  fail(SPMD_ERR_INTERNAL, "DLPack: no type for ", dtype_name(d));
}

std::string dl_type_text(const DLDataType &t) {
  const char *code = t.code == kDLInt       ? "int"
                     : t.code == kDLUInt    ? "uint"
                     : t.code == kDLFloat   ? "float"
                     : t.code == kDLBfloat  ? "bfloat"
                     : t.code == kDLBoolCode ? "bool"
                                            : nullptr;
  std::string text = code ? cat(code, int{t.bits}) : cat("type code ", int{t.code}, " of ", int{t.bits}, " bits");
  if (t.lanes != 1) text += cat(" x", t.lanes, " lanes");
  return text;
}

using SharedKind = Backend::SharedMemoryDevice::Kind;

std::string dl_device_text(const DLDevice &d) {
  switch (d.device_type) {
    case kDLCPU: return "kDLCPU";
    case kDLCUDA: return cat("kDLCUDA ", d.device_id);
    case kDLCUDAHost: return "kDLCUDAHost";
    default: return cat("DLPack device type ", static_cast<int>(d.device_type), " id ", d.device_id);
  }
}

// The DLPack device of `device`'s memory; UNSUPPORTED where it cannot be
// shared.
DLDevice dl_device_of(const Runtime &rt, int device) {
  const Backend::SharedMemoryDevice s = rt.backend().shared_memory_device(device);
  switch (s.kind) {
    case SharedKind::Host: return {kDLCPU, 0};
    case SharedKind::Cuda: return {kDLCUDA, s.ordinal};
    case SharedKind::None: break;
  }
  fail(SPMD_ERR_UNSUPPORTED, "the ", rt.backend().platform_name(),
       " platform's device memory cannot be shared with other libraries (DLPack needs the cpu or "
       "cuda platform)");
}

// What a tensor libspmd hands out holds: the buffer (whose memory it views)
// and the shape its DLTensor points at.
struct Export {
  DLManagedTensor tensor{};
  BufferPtr buffer;
  std::vector<int64_t> shape;
};

void delete_export(DLManagedTensor *self) {
  auto *e = static_cast<Export *>(self->manager_ctx);
  e->buffer->drop_external_view();
  delete e;
}

}  // namespace

DLManagedTensor *export_shard(const Array &a, size_t index) {
  if (index >= a.shard_count())
    fail(SPMD_ERR_OUT_OF_RANGE, "index: shard ", index, " does not exist (the array has ",
         a.shard_count(), " shards)");
  const Runtime &rt = a.runtime();
  const ShardLayout &s = a.shard(index);
  if (!a.addressable(index))
    fail(SPMD_ERR_UNSUPPORTED, "index: shard ", index, " is on device ", s.device, " of process ",
         rt.process_of(s.device), "; this process (", rt.process_index(),
         ") shares only its own devices' shards");
  const DLDevice device = dl_device_of(rt, s.device);
  const BufferPtr &b = a.buffer_ptr(index);
  b->wait();  // the consumer reads it at once
  auto e = std::make_unique<Export>();
  e->buffer = b;
  const Shape extent = s.box.extent();
  e->shape.assign(extent.begin(), extent.end());
  DLTensor &t = e->tensor.dl_tensor;
  t.data = reinterpret_cast<void *>(b->ptr().bits);
  t.device = device;
  t.ndim = static_cast<int>(extent.size());
  t.dtype = dl_type_of(a.dtype());
  t.shape = e->shape.data();
  t.strides = nullptr;  // compact, row-major
  t.byte_offset = 0;
  e->tensor.manager_ctx = e.get();
  e->tensor.deleter = delete_export;
  b->add_external_view();
  return &e.release()->tensor;
}

AdoptedTensors adopt_tensors(ShardingPtr sharding, spmd_dtype dtype, Shape shape,
                             const std::vector<int> &devices,
                             const std::vector<DLManagedTensor *> &tensors) {
  sharding->check_rank(shape);
  byte_size("shape", shape, dtype);
  Runtime &rt = Runtime::of(*sharding);
  const std::vector<ShardLayout> layout = sharding->layout(shape);
  size_t here = 0;
  for (const auto &s : layout) here += rt.is_local(s.device);
  if (tensors.size() != here)
    invalid("count: ", tensors.size(), " tensors given, but the mesh has ", here,
            " devices of this process (", rt.process_index(), "), one block each");
  const DLDataType want_type = dl_type_of(dtype);
  const size_t es = dtype_size(dtype);
  std::vector<BufferPtr> buffers(layout.size());
  std::vector<size_t> shard_of(tensors.size());
  std::vector<bool> taken(layout.size(), false);
  // Everything checked first: an error leaves every tensor with the caller.
  for (size_t k = 0; k < tensors.size(); ++k) {
    const std::string arg = cat("tensors[", k, "]");
    const DLManagedTensor *m = tensors[k];
    if (m == nullptr) invalid(arg, ": NULL");
    for (size_t j = 0; j < k; ++j)
      if (tensors[j] == m) invalid(arg, ": the same tensor as tensors[", j, "]; each block needs its own");
    const int device = devices[k];
    size_t i = 0;
    while (i < layout.size() && layout[i].device != device) ++i;
    if (i == layout.size() || !rt.is_local(device))
      invalid("devices[", k, "]: device ", device,
              " is not a device of this process in the sharding's mesh");
    if (taken[i]) invalid("devices[", k, "]: device ", device, " is given twice");
    taken[i] = true;
    shard_of[k] = i;
    const DLTensor &t = m->dl_tensor;
    const DLDevice where = dl_device_of(rt, device);
    if (t.device.device_type != where.device_type ||
        (where.device_type == kDLCUDA && t.device.device_id != where.device_id))
      invalid(arg, ": its memory is on ", dl_device_text(t.device), " but device ", device,
              "'s is on ", dl_device_text(where));
    if (t.dtype.code != want_type.code || t.dtype.bits != want_type.bits || t.dtype.lanes != 1)
      invalid(arg, ": of ", dl_type_text(t.dtype), " but the array is ", dtype_name(dtype), " (",
              dl_type_text(want_type), ")");
    const Shape extent = layout[i].box.extent();
    bool same = t.ndim == static_cast<int>(extent.size()) && (t.ndim == 0 || t.shape != nullptr);
    for (size_t d = 0; same && d < extent.size(); ++d) same = t.shape[d] == extent[d];
    if (!same) {
      std::string got = "(";
      for (int d = 0; d < t.ndim && t.shape; ++d) got += cat(d ? ", " : "", t.shape[d]);
      if (t.ndim == 1) got += ",";
      got += ")";
      invalid(arg, ": of shape ", got, " but device ", device, "'s block is ",
              shape_to_string(extent));
    }
    const int64_t elements = shape_elements(extent);
    if (t.strides != nullptr && elements > 0) {
      int64_t expect = 1;
      for (size_t d = extent.size(); d-- > 0;) {
        if (extent[d] != 1 && t.strides[d] != expect)
          invalid(arg, ": strides that are not compact row-major (dimension ", d, " steps ",
                  t.strides[d], " elements, not ", expect, "); copy it to a compact tensor first");
        expect *= extent[d];
      }
    }
    if (elements > 0) {
      if (t.data == nullptr) invalid(arg, ": NULL data for ", elements, " elements");
      const uintptr_t at = reinterpret_cast<uintptr_t>(t.data) + t.byte_offset;
      if (at % es != 0)
        invalid(arg, ": data + byte_offset (", reinterpret_cast<const void *>(at),
                ") is not aligned to its ", es, "-byte elements");
    }
  }
  auto adopted = std::make_shared<bool>(false);
  for (size_t k = 0; k < tensors.size(); ++k) {
    DLManagedTensor *m = tensors[k];
    const size_t i = shard_of[k];
    const size_t bytes = static_cast<size_t>(layout[i].box.elements()) * es;
    const DevicePtr ptr{bytes ? reinterpret_cast<uintptr_t>(m->dl_tensor.data) + m->dl_tensor.byte_offset : 0};
    buffers[i] = std::make_shared<Buffer>(rt.backend_ptr(), layout[i].device, bytes, ptr, [m, adopted] {
      if (*adopted && m->deleter) m->deleter(m);
    });
  }
  return {Array::from_buffers(std::move(sharding), dtype, std::move(shape), std::move(buffers)),
          std::move(adopted)};
}

}  // namespace spmd
