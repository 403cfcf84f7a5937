// XLA's CPU code runs with subnormals flushed to zero, as inputs (DAZ) and
// as results (FTZ); the float kernels run so too, for their own thread and
// only while one of these is alive.
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace spmd {

class FlushSubnormals {
 public:
#if defined(__x86_64__) || defined(__i386__)
  // Writing the control register stalls the pipeline (tens of cycles, a
  // few percent of a tiny op): a thread already flushing keeps its setting.
  FlushSubnormals() : saved_(_mm_getcsr()) {
    if ((saved_ & kFlush) != kFlush) _mm_setcsr(saved_ | kFlush);
  }
  ~FlushSubnormals() {
    if ((saved_ & kFlush) != kFlush) _mm_setcsr(saved_);
  }
#endif
  FlushSubnormals(const FlushSubnormals &) = delete;
  FlushSubnormals &operator=(const FlushSubnormals &) = delete;

 private:
#if defined(__x86_64__) || defined(__i386__)
  static constexpr unsigned kFlush = 0x8040;  // FTZ | DAZ
  unsigned saved_;
#endif
};

}  // namespace spmd
