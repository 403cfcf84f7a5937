// Many box copies in one launch (backend/backend.hpp's BoxCopy, device
// memory on both sides): each box planned on the host into tiles
// (kernels/device/box_copy.hpp), the descriptors passed by value, up to
// kBoxesPerLaunch boxes a launch, and each block walking the tiles of all
// of them in a grid-stride loop. The collectives' strided copies
// (strided_copy.hpp) batch the same way.
#include "backend/cuda/launch.hpp"
#include "backend/cuda/strided_copy.hpp"
#include "kernels/device/box_copy.hpp"

namespace spmd::cuda {

namespace {

namespace cp = dev::copy;

// Kernel parameters stay under the 4 KiB every CUDA version takes.
constexpr int kBoxesPerLaunch = 12;

struct BoxBatch {
  int count = 0;
  int64_t first_tile[kBoxesPerLaunch + 1] = {};  // box b's tiles are [first_tile[b], first_tile[b + 1])
  cp::Box box[kBoxesPerLaunch];
};
static_assert(sizeof(BoxBatch) <= 4000, "box copy parameters over 4 KiB");

__global__ void __launch_bounds__(cp::kThreads) box_copy_kernel(BoxBatch batch) {
  const int64_t tiles = batch.first_tile[batch.count];
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    int b = 0;
    while (b + 1 < batch.count && batch.first_tile[b + 1] <= tile) ++b;
    cp::copy_tile(batch.box[b], tile - batch.first_tile[b], static_cast<int>(threadIdx.x));
  }
}

void launch(const BoxBatch &batch, int sm_count, cudaStream_t stream) {
  const int64_t tiles = batch.first_tile[batch.count];
  if (tiles == 0) return;
  const int64_t most = static_cast<int64_t>(std::max(sm_count, 1)) * kBlocksPerSm;
  box_copy_kernel<<<static_cast<unsigned>(std::min(tiles, most)), cp::kThreads, 0, stream>>>(batch);
  check_launch("CUDA", "box copy kernel");
}

// Adds box copies to `batch`, launching each full batch.
class BoxLauncher {
 public:
  explicit BoxLauncher(cudaStream_t stream) : stream_(stream) {
    int gpu = 0;
    check_call(cudaGetDevice(&gpu), "CUDA", "box copy kernel");
    check_call(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, gpu), "CUDA",
               "box copy kernel");
  }
  void add(const cp::Box &box) {
    if (box.tiles == 0) return;
    batch_.box[batch_.count] = box;
    batch_.first_tile[batch_.count + 1] = batch_.first_tile[batch_.count] + box.tiles;
    if (++batch_.count == kBoxesPerLaunch) flush();
  }
  void flush() {
    if (batch_.count > 0) launch(batch_, sm_count_, stream_);
    batch_ = BoxBatch{};
  }

 private:
  cudaStream_t stream_;
  int sm_count_ = 1;
  BoxBatch batch_;
};

}  // namespace

void launch_box_copies(const BoxCopy *copies, size_t count, cudaStream_t stream) {
  BoxLauncher boxes(stream);
  for (size_t i = 0; i < count; ++i) {
    const BoxCopy &c = copies[i];
    cp::Box box;
    if (!cp::make_box(device_ptr<const unsigned char>(c.src.place), c.src.shape, c.src.offset,
                      device_ptr(c.dst.place), c.dst.shape, c.dst.offset, c.extent, c.elem_size,
                      box))
      fail(SPMD_ERR_INTERNAL, "CUDA: box copy of ", c.extent.size(), " dimensions");
    boxes.add(box);
  }
  boxes.flush();
}

void queue_strided_copies(const StridedCopy *copies, size_t count, cudaStream_t stream) {
  BoxLauncher boxes(stream);
  for (size_t i = 0; i < count; ++i) {
    const StridedCopy &c = copies[i];
    cp::Box box;
    if (!cp::make_strided_box(c.src, c.src_strides, c.dst, c.dst_strides, c.ext, c.elem_size, box))
      fail(SPMD_ERR_INTERNAL, "CUDA: strided copy of ", c.ext.size(), " dimensions");
    boxes.add(box);
  }
  boxes.flush();
}

}  // namespace spmd::cuda
