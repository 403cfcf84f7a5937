/* libspmd: the runtime, the devices one process can use. */
#ifndef SPMD_RUNTIME_H
#define SPMD_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "spmd/export.h"
#include "spmd/status.h"

SPMD_EXTERN_C_BEGIN

typedef struct spmd_runtime spmd_runtime;

typedef enum spmd_platform {
  SPMD_PLATFORM_DEFAULT = 0, /* SPMD_PLATFORM from the environment, else cpu */
  SPMD_PLATFORM_CPU = 1,     /* N virtual devices in this process          */
  SPMD_PLATFORM_CUDA = 2,    /* one device per visible GPU                  */
  /* Simulated devices whose memory the host cannot touch and whose work
   * completes later, on one queue per device: the platform that tests code
   * written for devices like GPUs on any machine (docs/design.md). As many
   * devices as the CPU platform would have. */
  SPMD_PLATFORM_SIM = 3
} spmd_platform;

/* Options of spmd_runtime_create. Zero in a field means "default".
 * Fields are only ever appended: set struct_size with SPMD_RUNTIME_OPTIONS_INIT
 * or spmd_runtime_options_init() so old callers keep working. */
typedef struct spmd_runtime_options {
  size_t struct_size;
  spmd_platform platform;
  /* CPU and sim platforms: number of virtual devices. 0 = $SPMD_CPU_DEVICES
   * if set, else 8 (the same as --xla_force_host_platform_device_count=8). */
  int cpu_device_count;
  /* Worker threads for per-shard kernels and copies, the calling thread
   * included. 0 = number of cores; at most SPMD_MAX_WORKER_THREADS. */
  int worker_threads;
  /* CPU platform: bytes of freed device memory kept per runtime for reuse
   * (as XLA's and PyTorch's allocators keep it; first-touch page faults cost
   * more than most copies). The cache is emptied and the allocation retried
   * before SPMD_ERR_OUT_OF_MEMORY is reported. 0 = 4 GiB; negative = keep
   * nothing. */
  int64_t device_cache_bytes;
} spmd_runtime_options;

/* The most worker threads a runtime takes. */
#define SPMD_MAX_WORKER_THREADS 1024

#define SPMD_RUNTIME_OPTIONS_INIT \
  { sizeof(spmd_runtime_options), SPMD_PLATFORM_DEFAULT, 0, 0, 0 }

/* Fills *options with the defaults (for bindings that cannot use the macro). */
SPMD_API void spmd_runtime_options_init(spmd_runtime_options *options);

/* Creates a runtime. options may be NULL (all defaults). On success the caller
 * owns *out and releases it with spmd_runtime_destroy. Errors:
 * SPMD_ERR_INVALID_ARGUMENT (bad option values, unknown struct_size tail),
 * SPMD_ERR_UNSUPPORTED (platform not built in or not present). */
SPMD_API spmd_status spmd_runtime_create(const spmd_runtime_options *options,
                                         spmd_runtime **out);

/* Releases the caller's reference. Meshes, shardings and arrays made from the
 * runtime keep what they need alive, so order of destruction does not matter.
 * NULL is accepted. */
SPMD_API void spmd_runtime_destroy(spmd_runtime *runtime);

/* Number of devices this runtime can address. */
SPMD_API spmd_status spmd_runtime_device_count(const spmd_runtime *runtime,
                                               int *out);

/* The platform the runtime runs on. */
SPMD_API spmd_status spmd_runtime_platform(const spmd_runtime *runtime,
                                           spmd_platform *out);

/* Description of one device. Strings point into the runtime and live as long
 * as it does. */
typedef struct spmd_device_info {
  size_t struct_size;
  int id;                /* global id, as jax.Device.id                     */
  spmd_platform platform;
  const char *platform_name; /* "cpu", "sim" or "cuda" (jax.Device.platform) */
  const char *kind;      /* device kind: "cpu", or the GPU's name            */
  int process_index;     /* the process that owns the device                */
  int local_index;       /* index among this process's devices              */
} spmd_device_info;

#define SPMD_DEVICE_INFO_INIT { sizeof(spmd_device_info), 0, SPMD_PLATFORM_DEFAULT, NULL, NULL, 0, 0 }

/* Describes device `device_id`. out->struct_size must be set by the caller;
 * only fields that fit are written. Errors: SPMD_ERR_OUT_OF_RANGE for an
 * unknown id. */
SPMD_API spmd_status spmd_runtime_device_info(const spmd_runtime *runtime,
                                              int device_id,
                                              spmd_device_info *out);

/* JAX's repr of a device, "CpuDevice(id=3)". Caller frees with
 * spmd_string_free. */
SPMD_API spmd_status spmd_runtime_device_to_string(const spmd_runtime *runtime,
                                                   int device_id, char **out);

SPMD_EXTERN_C_END

#endif /* SPMD_RUNTIME_H */
