// How many threads run library work side by side with the calling one: a
// shard_map body's device threads all run at once, and a backend whose
// devices share the host's cores runs each one's work on that thread alone
// when there are as many of them as cores (a product spread over every
// core would keep its threads waiting on the other devices' work).
#pragma once

#include <cstddef>

namespace spmd::side_by_side {

// Sets, for the calling thread, the number of threads running with it (0:
// none, work of its own may use every core).
void set(size_t threads);

// The calling thread's number, 0 unless set.
size_t threads();

}  // namespace spmd::side_by_side
