/* The arrays a sequence of global ops makes, released together: each op's
 * result goes into the next free slot, and seed_temps_free destroys them all
 * (NULL slots and donated handles included). For the seed models written
 * with global ops. */
#ifndef SPMD_SEED_TEMPS_H
#define SPMD_SEED_TEMPS_H

#include <spmd/spmd.h>

typedef struct seed_temps {
  spmd_array *a[64];
  int n;
} seed_temps;

static inline spmd_array **seed_slot(seed_temps *t) { return &t->a[t->n++]; }

static inline void seed_temps_free(seed_temps *t) {
  for (int i = 0; i < t->n; ++i) spmd_array_destroy(t->a[i]);
  t->n = 0;
}

#endif /* SPMD_SEED_TEMPS_H */
