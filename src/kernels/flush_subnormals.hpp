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
  FlushSubnormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | 0x8040); }
  ~FlushSubnormals() { _mm_setcsr(saved_); }
#endif
  FlushSubnormals(const FlushSubnormals &) = delete;
  FlushSubnormals &operator=(const FlushSubnormals &) = delete;

 private:
#if defined(__x86_64__) || defined(__i386__)
  unsigned saved_;
#endif
};

}  // namespace spmd
