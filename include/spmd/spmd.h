/* libspmd: JAX's SPMD sharding model for C. The umbrella header. */
#ifndef SPMD_SPMD_H
#define SPMD_SPMD_H

#include "spmd/export.h"
#include "spmd/version.h"
#include "spmd/status.h"
#include "spmd/dtype.h"
#include "spmd/runtime.h"
#include "spmd/mesh.h"
#include "spmd/spec.h"
#include "spmd/sharding.h"
#include "spmd/array.h"
#include "spmd/format.h"
#include "spmd/random.h"
#include "spmd/visualize.h"
#include "spmd/shard_map.h"
#include "spmd/collective.h"

#endif /* SPMD_SPMD_H */
