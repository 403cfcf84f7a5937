/**
 * @file
 * libspmd: the place for APIs not yet promised stable.
 *
 * Headers under spmd/experimental/ declare functions that may change or go
 * away in any release, minor or patch: new ground (global ops, sharded
 * compute) starts here and moves to spmd/ once its shape has settled, with
 * the ABI promise of docs/abi.md from then on. Their functions are named
 * spmd_x_<noun>_<verb>, are exported under a linker version node of
 * their own, SPMD_EXPERIMENTAL (not SPMD_<major>), and are left out of the
 * ABI baseline. To use them, define SPMD_EXPERIMENTAL before including, and
 * expect to rebuild against each release. Their declarations are
 * documented as those of spmd/ are.
 */
#ifndef SPMD_EXPERIMENTAL_EXPERIMENTAL_H
#define SPMD_EXPERIMENTAL_EXPERIMENTAL_H

#ifndef SPMD_EXPERIMENTAL
#error "spmd/experimental/ declares APIs that may change in any release; define SPMD_EXPERIMENTAL to use them"
#endif

#include "spmd/spmd.h"

#endif /* SPMD_EXPERIMENTAL_EXPERIMENTAL_H */
