/* The functions libspmd calls on its device threads during a ShardMap.
 * user_data is the value of a runtime/cgo.Handle (never a Go pointer); the
 * exported Go functions of callback.go look the closure up through it,
 * recover panics and return a status, so nothing unwinds through C. */
#include "trampoline.h"

#include "spmd/spmd.h"

#include "_cgo_export.h"

static spmd_status shard_trampoline(spmd_ctx *ctx, void *user_data) {
  return (spmd_status)spmdGoShardCallback((uintptr_t)ctx, (uintptr_t)user_data);
}

static void print_trampoline(int device, const char *text, void *user_data) {
  spmdGoPrintCallback(device, (char *)text, (uintptr_t)user_data);
}

uintptr_t spmd_go_shard_fn(void) { return (uintptr_t)&shard_trampoline; }

uintptr_t spmd_go_print_fn(void) { return (uintptr_t)&print_trampoline; }
