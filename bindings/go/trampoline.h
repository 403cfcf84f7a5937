/* The C side of ShardMap's callbacks (trampoline.c). */
#ifndef SPMD_GO_TRAMPOLINE_H
#define SPMD_GO_TRAMPOLINE_H

#include <stdint.h>

/* The addresses of the trampolines, as spmd_shard_fn and spmd_print_fn. */
uintptr_t spmd_go_shard_fn(void);
uintptr_t spmd_go_print_fn(void);

#endif /* SPMD_GO_TRAMPOLINE_H */
