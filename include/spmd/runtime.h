/**
 * @file
 * libspmd: the runtime, the devices one process can use.
 */
#ifndef SPMD_RUNTIME_H
#define SPMD_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "spmd/export.h"
#include "spmd/status.h"

SPMD_EXTERN_C_BEGIN

/**
 * A runtime: one platform's devices and the threads and memory that serve
 * them. Made by spmd_runtime_create, released with spmd_runtime_destroy.
 */
typedef struct spmd_runtime spmd_runtime;

/** The platforms a runtime can run on. Values are stable across releases. */
typedef enum spmd_platform {
  SPMD_PLATFORM_DEFAULT = 0, /**< SPMD_PLATFORM from the environment, else cpu */
  SPMD_PLATFORM_CPU = 1,     /**< N virtual devices in this process          */
  SPMD_PLATFORM_CUDA = 2,    /**< logical devices on the visible GPUs (a plugin) */
  /** Simulated devices whose memory the host cannot touch and whose work
   * completes later, on one queue per device: the platform that tests code
   * written for devices like GPUs on any machine (docs/design.md). As many
   * devices as the CPU platform would have. */
  SPMD_PLATFORM_SIM = 3
} spmd_platform;

/**
 * The memory shard_map callbacks receive (spmd_runtime_options.callback_memory,
 * spmd_block.memory_kind). Values are stable across releases.
 */
typedef enum spmd_memory_kind {
  /** The platform's choice: host memory on cpu, device memory on cuda,
   * mapped on sim; $SPMD_CALLBACK_MEMORY ("device" or "mapped") chooses
   * when set. */
  SPMD_MEMORY_DEFAULT = 0,
  /** Device memory: on cuda, device pointers, for kernels queued on the
   * device's stream (spmd_ctx_stream); host code must not touch them. On
   * cpu, whose devices' memory is host memory, the same as
   * SPMD_MEMORY_HOST. */
  SPMD_MEMORY_DEVICE = 1,
  /** Host memory the device maps too (CUDA's mapped pinned memory): host
   * code reads and writes it, as it does the CPU platform's blocks, so
   * callbacks written for the host run unchanged, at the cost of transfers. */
  SPMD_MEMORY_HOST_MAPPED = 2,
  /** Plain host memory: what the cpu platform's devices own, so its blocks
   * say this. As an option, the cpu platform alone takes it. */
  SPMD_MEMORY_HOST = 3
} spmd_memory_kind;

/**
 * Whether a runtime spans several processes (spmd_runtime_options.distributed),
 * as JAX's multi-controller model: every process runs the same program,
 * launched by mpirun or srun, and makes the same calls in the same order
 * (docs/distributed.md). Values are stable across releases. (Since 1.4.)
 */
typedef enum spmd_distributed {
  /** $SPMD_DISTRIBUTED: "mpi" for SPMD_DISTRIBUTED_MPI; unset, empty or
   * "none" for one process. */
  SPMD_DISTRIBUTED_DEFAULT = 0,
  /** One process, owning every device of its runtime. */
  SPMD_DISTRIBUTED_NONE = 1,
  /** Every process of an MPI communicator (MPI_COMM_WORLD unless
   * spmd_runtime_options.mpi_comm names one), each contributing the same
   * number of local devices. Needs the plugin libspmd_mpi.so and a process
   * started by mpirun or srun, or a program that initialised MPI itself
   * with MPI_THREAD_MULTIPLE. */
  SPMD_DISTRIBUTED_MPI = 2
} spmd_distributed;

/**
 * Options of spmd_runtime_create. Zero in a field means "default".
 *
 * Fields are only ever appended: set struct_size with
 * SPMD_RUNTIME_OPTIONS_INIT or spmd_runtime_options_init() so old callers
 * keep working.
 */
typedef struct spmd_runtime_options {
  size_t struct_size;     /**< sizeof(spmd_runtime_options) as the caller was compiled */
  spmd_platform platform; /**< the platform; SPMD_PLATFORM_DEFAULT reads $SPMD_PLATFORM */
  /** CPU and sim platforms: number of virtual devices, at most 4096.
   * 0 = $SPMD_CPU_DEVICES if set, else 8 (the same as
   * --xla_force_host_platform_device_count=8). */
  int cpu_device_count;
  /** Worker threads for per-shard kernels and copies, the calling thread
   * included. 0 = number of cores; at most SPMD_MAX_WORKER_THREADS. */
  int worker_threads;
  /** CPU platform: bytes of freed device memory kept per runtime for reuse
   * (as XLA's and PyTorch's allocators keep it; first-touch page faults cost
   * more than most copies). The cache is emptied and the allocation retried
   * before SPMD_ERR_OUT_OF_MEMORY is reported. 0 = 4 GiB; negative = keep
   * nothing. CUDA platform: the same for its memory pools, 0 keeping all
   * freed memory (as XLA's allocator does on GPUs). */
  int64_t device_cache_bytes;
  /** CUDA platform: logical devices placed on each GPU, each with its own
   * stream, memory pool and cuBLAS handle, so that an 8-device mesh runs on
   * one GPU. 0 = $SPMD_CUDA_DEVICES_PER_GPU if set, else 1; at most 64.
   * Other platforms ignore it. (Since 1.3.) */
  int devices_per_gpu;
  /** The memory shard_map callbacks receive (spmd_memory_kind). The sim
   * platform gives mapped memory only. (Since 1.3.) */
  spmd_memory_kind callback_memory;
  /** One process or several (spmd_distributed). Over several, every
   * process makes its runtime with the same options, each has the same
   * number of local devices, and global device ids are process-major:
   * process_index * local_device_count + local index. (Since 1.4.) */
  spmd_distributed distributed;
  /** Nonzero when mpi_comm names the communicator; 0 takes MPI_COMM_WORLD.
   * A flag of its own, since 0 is a valid Fortran handle in some MPIs
   * (OpenMPI's MPI_COMM_WORLD). spmd_runtime_create_mpi (spmd/mpi.h) sets
   * both. (Since 1.4.) */
  int mpi_comm_given;
  /** The communicator's Fortran handle (MPI_Comm_c2f), read when
   * mpi_comm_given is nonzero. Its processes are the runtime's, each with
   * its rank as process index. (Since 1.4.) */
  int mpi_comm;
  /** Over several processes, nonzero adds the terms of every reduction
   * across processes (psum, pmean, pmax, pmin, and the sums of global ops)
   * in the order one process adds them, so results are bit for bit those
   * of one process with as many devices; it costs bytes: every member's
   * block travels to every process of its group. 0 (or
   * $SPMD_EXACT_REDUCTIONS unset or "0") sends one partial result per
   * process and group, adding by process, then by device: within the
   * summation bound of one process's order. (Since 1.4.) */
  int exact_reductions;
} spmd_runtime_options;

/** The most worker threads a runtime takes (spmd_runtime_options.worker_threads). */
#define SPMD_MAX_WORKER_THREADS 1024

/** An initialiser of spmd_runtime_options: struct_size set, every option default. */
#define SPMD_RUNTIME_OPTIONS_INIT \
  { sizeof(spmd_runtime_options), SPMD_PLATFORM_DEFAULT, 0, 0, 0, 0, SPMD_MEMORY_DEFAULT, \
    SPMD_DISTRIBUTED_DEFAULT, 0, 0, 0 }

/**
 * Fills *options with the defaults, for bindings that cannot use the macro.
 *
 * Writes exactly `size` bytes: the defaults, a tail this library does not
 * know zeroed, and struct_size set to `size`, so an older caller never gets
 * more bytes written than it has.
 *
 * @param options The struct to fill; not NULL.
 * @param size sizeof(spmd_runtime_options) as the caller was compiled.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL options or a size
 *         smaller than a size_t or above 1024 bytes (nothing written).
 */
SPMD_API spmd_status spmd_runtime_options_init(spmd_runtime_options *options, size_t size);

/**
 * Creates a runtime.
 *
 * On success the caller owns *out and releases it with spmd_runtime_destroy.
 *
 * @param options The options; NULL takes all defaults. A struct_size larger
 *        than this library's is accepted only when the unknown tail is zero.
 * @param out Receives the new runtime; not NULL. Left untouched on failure.
 * Over several processes (options->distributed) every process of the
 * communicator must call it: it returns once all have described their
 * devices to each other, or fails in every process alike.
 *
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for bad option values (an
 *         unknown platform or spmd_distributed, a device count outside
 *         0..4096, worker_threads negative or above SPMD_MAX_WORKER_THREADS,
 *         a communicator given to a runtime of one process, a struct_size
 *         that is too small, uninitialised or has a non-zero unknown tail),
 *         a bad $SPMD_PLATFORM, $SPMD_CPU_DEVICES or $SPMD_DISTRIBUTED, a
 *         NULL out, or processes whose platforms or local device counts
 *         differ (naming each process's);
 *         SPMD_ERR_UNSUPPORTED when the platform is not available, with
 *         the reason (the cuda platform's plugin missing or built from
 *         another libspmd, no driver, no GPU), or the processes cannot be
 *         joined (the MPI plugin missing, a process not started by mpirun
 *         or srun, MPI without MPI_THREAD_MULTIPLE);
 *         SPMD_ERR_TIMEOUT when a process does not come within
 *         $SPMD_DISTRIBUTED_TIMEOUT seconds (300), naming it.
 */
SPMD_API spmd_status spmd_runtime_create(const spmd_runtime_options *options,
                                         spmd_runtime **out);

/**
 * Releases the caller's reference to a runtime.
 *
 * Meshes, shardings and arrays made from the runtime keep what they need
 * alive, so order of destruction does not matter.
 *
 * @param runtime The runtime; NULL and already-destroyed handles are
 *        ignored.
 */
SPMD_API void spmd_runtime_destroy(spmd_runtime *runtime);

/**
 * Number of devices of the runtime, every process's (jax.device_count()):
 * meshes name them by global id, 0 to this count - 1.
 *
 * @param runtime The runtime; not NULL.
 * @param out Receives the count; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed
 *         runtime or a NULL out.
 */
SPMD_API spmd_status spmd_runtime_device_count(const spmd_runtime *runtime,
                                               int *out);

/**
 * This process's index among the runtime's processes
 * (jax.process_index()): 0 for a runtime of one process, the rank in the
 * communicator over several. (Since 1.4.)
 *
 * @param runtime The runtime; not NULL.
 * @param out Receives the index; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed
 *         runtime or a NULL out.
 */
SPMD_API spmd_status spmd_runtime_process_index(const spmd_runtime *runtime,
                                                int *out);

/**
 * Number of processes the runtime spans (jax.process_count()): 1 unless
 * it is distributed. (Since 1.4.)
 *
 * @param runtime The runtime; not NULL.
 * @param out Receives the count; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed
 *         runtime or a NULL out.
 */
SPMD_API spmd_status spmd_runtime_process_count(const spmd_runtime *runtime,
                                                int *out);

/**
 * Number of this process's own devices (len(jax.local_devices())), the
 * same in every process: its global ids are process_index * this count
 * onwards. Equal to spmd_runtime_device_count for one process. (Since 1.4.)
 *
 * @param runtime The runtime; not NULL.
 * @param out Receives the count; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed
 *         runtime or a NULL out.
 */
SPMD_API spmd_status spmd_runtime_local_device_count(const spmd_runtime *runtime,
                                                     int *out);

/**
 * The platform the runtime runs on (never SPMD_PLATFORM_DEFAULT).
 *
 * @param runtime The runtime; not NULL.
 * @param out Receives the platform; not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed
 *         runtime or a NULL out.
 */
SPMD_API spmd_status spmd_runtime_platform(const spmd_runtime *runtime,
                                           spmd_platform *out);

/**
 * Description of one device (jax.Device). Strings point into the runtime
 * and live as long as it does.
 */
typedef struct spmd_device_info {
  size_t struct_size;    /**< sizeof(spmd_device_info) as the caller was compiled */
  int id;                /**< global id, as jax.Device.id                     */
  spmd_platform platform; /**< the platform the device belongs to            */
  const char *platform_name; /**< "cpu", "sim" or "cuda" (jax.Device.platform) */
  const char *kind;      /**< device kind: "cpu", or the GPU's name            */
  int process_index;     /**< the process that owns the device                */
  int local_index;       /**< index among its process's devices               */
  /** Bytes of memory of the device's GPU (shared by its logical devices);
   * 0 on cpu and sim. (Since 1.3.) */
  int64_t memory_bytes;
  /** The GPU's compute capability as major * 10 + minor (90 for an H100);
   * 0 on cpu and sim. (Since 1.3.) */
  int compute_capability;
} spmd_device_info;

/** An initialiser of spmd_device_info: struct_size set, every field zero. */
#define SPMD_DEVICE_INFO_INIT \
  { sizeof(spmd_device_info), 0, SPMD_PLATFORM_DEFAULT, NULL, NULL, 0, 0, 0, 0 }

/**
 * Fills *info as SPMD_DEVICE_INFO_INIT does, writing exactly `size` bytes.
 *
 * @param info The struct to fill; not NULL.
 * @param size sizeof *info as the caller was compiled.
 * @return SPMD_OK; SPMD_ERR_INVALID_ARGUMENT for a NULL info or a size
 *         smaller than a size_t or above 1024 bytes (nothing written).
 */
SPMD_API spmd_status spmd_device_info_init(spmd_device_info *info, size_t size);

/**
 * Describes device `device_id`, this process's or another's: the kind,
 * memory and compute capability of another process's device are those its
 * process reported for its first device when the runtime was made.
 *
 * Only the fields that fit in out->struct_size are written; struct_size
 * itself keeps the caller's value.
 *
 * @param runtime The runtime; not NULL.
 * @param device_id The device's global id, 0 to the device count - 1.
 * @param out Receives the description; not NULL, with struct_size set by the
 *        caller (SPMD_DEVICE_INFO_INIT). Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_OUT_OF_RANGE for an unknown id;
 *         SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed runtime, a NULL
 *         out, or a struct_size too small to hold id or above 1024 bytes.
 */
SPMD_API spmd_status spmd_runtime_device_info(const spmd_runtime *runtime,
                                              int device_id,
                                              spmd_device_info *out);

/**
 * JAX's repr of a device, "CpuDevice(id=3)", the same for another
 * process's device (JAX prints CPU and GPU devices without their process).
 *
 * @param runtime The runtime; not NULL.
 * @param device_id The device's global id.
 * @param out Receives a new string the caller frees with spmd_string_free;
 *        not NULL. Left untouched on failure.
 * @return SPMD_OK; SPMD_ERR_OUT_OF_RANGE for an unknown id;
 *         SPMD_ERR_INVALID_ARGUMENT for a NULL or destroyed runtime or a
 *         NULL out.
 */
SPMD_API spmd_status spmd_runtime_device_to_string(const spmd_runtime *runtime,
                                                   int device_id, char **out);

SPMD_EXTERN_C_END

#endif /* SPMD_RUNTIME_H */
