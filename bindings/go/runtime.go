package spmd

import (
	"fmt"
	"runtime"

	"github.com/libspmd/libspmd/bindings/go/internal/capi"
)

// Version is the version of the libspmd actually loaded: major*10000 +
// minor*100 + patch.
func Version() uint { return capi.Spmd_version() }

// VersionString is the version of the libspmd actually loaded, "1.4.0".
func VersionString() string { return capi.Spmd_version_string() }

// LiveHandles is the number of libspmd handles live in this process, of
// every kind (runtimes, meshes, specs, shardings, arrays, collectives, and
// the contexts of callbacks running now). Meant for leak checks: the count
// before and after a piece of work tells whether it left a handle open.
// Handles made by other goroutines meanwhile count too.
func LiveHandles() (int, error) {
	n, err := get("LiveHandles", capi.Spmd_live_handles)
	return int(n), err
}

// Platform is a platform a runtime can run on (spmd_platform).
type Platform int

// The platforms.
const (
	// PlatformDefault reads $SPMD_PLATFORM, else takes the CPU platform.
	PlatformDefault Platform = 0
	// PlatformCPU is N virtual devices in this process.
	PlatformCPU Platform = 1
	// PlatformCUDA is logical devices on the visible GPUs (a plugin):
	// RuntimeOptions.DevicesPerGPU of them on each GPU.
	PlatformCUDA Platform = 2
	// PlatformSim is simulated devices whose memory the host cannot touch
	// and whose work completes later, to test code written for GPUs on any
	// machine; as many devices as the CPU platform would have.
	PlatformSim Platform = 3
)

// String names the platform as JAX does ("cpu", "cuda", "sim"; "default").
func (p Platform) String() string {
	switch p {
	case PlatformDefault:
		return "default"
	case PlatformCPU:
		return "cpu"
	case PlatformCUDA:
		return "cuda"
	case PlatformSim:
		return "sim"
	}
	return fmt.Sprintf("Platform(%d)", int(p))
}

// Distributed says whether a runtime spans several processes
// (spmd_distributed), as JAX's multi-controller model: every process runs
// the same program under mpirun and makes the same calls.
type Distributed int

// The choices.
const (
	// DistributedDefault reads $SPMD_DISTRIBUTED: "mpi", or one process when
	// unset or "none".
	DistributedDefault Distributed = 0
	// DistributedNone is one process owning every device of its runtime.
	DistributedNone Distributed = 1
	// DistributedMPI is every process of MPI_COMM_WORLD, each contributing
	// the same number of local devices (the plugin libspmd_mpi.so, under
	// mpirun or srun).
	DistributedMPI Distributed = 2
)

// MemoryKind is the kind of memory ShardMap callbacks receive
// (spmd_memory_kind): RuntimeOptions.CallbackMemory asks for one, and
// Block.MemoryKind says where a block lies.
type MemoryKind int

// The memory kinds.
const (
	// MemoryDefault is the platform's choice: host memory on cpu, device
	// memory on cuda, mapped on sim; $SPMD_CALLBACK_MEMORY ("device" or
	// "mapped") chooses when set.
	MemoryDefault MemoryKind = 0
	// MemoryDevice is device memory: on cuda, device pointers for kernels
	// queued on ShardContext.Stream, which host code must not touch.
	MemoryDevice MemoryKind = 1
	// MemoryHostMapped is host memory the device maps too (CUDA's mapped
	// pinned memory): host code reads and writes it, so callbacks written
	// for the host run unchanged, at the cost of transfers.
	MemoryHostMapped MemoryKind = 2
	// MemoryHost is plain host memory, what the CPU platform's devices own.
	// As an option, the CPU platform alone takes it.
	MemoryHost MemoryKind = 3
)

// String names the kind as C does, lower case: "default", "device",
// "host_mapped", "host".
func (k MemoryKind) String() string {
	switch k {
	case MemoryDefault:
		return "default"
	case MemoryDevice:
		return "device"
	case MemoryHostMapped:
		return "host_mapped"
	case MemoryHost:
		return "host"
	}
	return fmt.Sprintf("MemoryKind(%d)", int(k))
}

// HostAddressable reports whether host code may read and write memory of
// this kind (MemoryHost and MemoryHostMapped): what BlockData needs.
func (k MemoryKind) HostAddressable() bool { return k == MemoryHost || k == MemoryHostMapped }

// RuntimeOptions are the options of NewRuntime; zero in a field means the
// default.
type RuntimeOptions struct {
	// Platform; PlatformDefault reads $SPMD_PLATFORM, else the CPU.
	Platform Platform
	// DeviceCount is the number of virtual devices of the CPU and sim
	// platforms, at most 4096; 0 = $SPMD_CPU_DEVICES if set, else 8 (as
	// --xla_force_host_platform_device_count=8).
	DeviceCount int
	// WorkerThreads for per-shard kernels and copies, the calling thread
	// included; 0 = the number of cores.
	WorkerThreads int
	// DeviceCacheBytes of freed device memory the CPU platform keeps for
	// reuse; 0 = 4 GiB, negative = keep nothing. The CUDA platform's memory
	// pools: 0 keeps all freed memory.
	DeviceCacheBytes int64
	// DevicesPerGPU is the CUDA platform's number of logical devices on each
	// GPU, each with its own stream and memory pool (so an 8-device mesh
	// runs on one GPU); 0 = $SPMD_CUDA_DEVICES_PER_GPU if set, else 1; at
	// most 64. Other platforms ignore it.
	DevicesPerGPU int
	// CallbackMemory is the memory ShardMap callbacks receive; MemoryDefault
	// takes the platform's. The sim platform gives MemoryHostMapped only.
	CallbackMemory MemoryKind
	// Distributed is one process or several; DistributedDefault reads
	// $SPMD_DISTRIBUTED. Over several, global device ids are process-major.
	Distributed Distributed
	// ExactReductions, over several processes, adds the terms of every
	// reduction across processes (psums and the sums of global ops) in the
	// order one process adds them, so results are bit for bit those of one
	// process with as many devices, at the cost of sending every block to
	// every process of its group. False leaves it to $SPMD_EXACT_REDUCTIONS
	// ("1"), else sends one partial result per process and group.
	ExactReductions bool
}

// Runtime is one platform's devices and the threads and memory that serve
// them (spmd_runtime). Close it when done; meshes, shardings and arrays made
// from it keep what they need alive, so the order of Close calls does not
// matter.
type Runtime struct{ h uintptr }

// NewRuntime creates a runtime; nil options take every default.
// ErrInvalidArgument for bad option values (or a bad $SPMD_PLATFORM,
// $SPMD_CPU_DEVICES or $SPMD_CALLBACK_MEMORY; a CallbackMemory the platform
// does not give), ErrUnsupported when the platform is not available, with
// the reason (the cuda plugin missing, no driver, no GPU).
func NewRuntime(opts *RuntimeOptions) (*Runtime, error) {
	var o capi.Spmd_runtime_options
	if opts != nil {
		o = capi.NewSpmd_runtime_options()
		defer capi.DeleteSpmd_runtime_options(o)
		if err := check("NewRuntime", capi.Spmd_runtime_options_init(o, capi.SizeofRuntimeOptions)); err != nil {
			return nil, err
		}
		o.SetPlatform(capi.Enum_SS_spmd_platform(opts.Platform))
		o.SetCpu_device_count(opts.DeviceCount)
		o.SetWorker_threads(opts.WorkerThreads)
		o.SetDevice_cache_bytes(opts.DeviceCacheBytes)
		o.SetDevices_per_gpu(opts.DevicesPerGPU)
		o.SetCallback_memory(capi.Enum_SS_spmd_memory_kind(opts.CallbackMemory))
		o.SetDistributed(capi.Enum_SS_spmd_distributed(opts.Distributed))
		if opts.ExactReductions {
			o.SetExact_reductions(1)
		}
	}
	return made("NewRuntime", newRuntime, func(h *uintptr) error { return capi.Spmd_runtime_create(o, h) })
}

func newRuntime(h uintptr) *Runtime {
	r := &Runtime{h}
	runtime.SetFinalizer(r, (*Runtime).Close)
	return r
}

func (r *Runtime) handle() uintptr {
	if r == nil {
		return 0
	}
	return r.h
}

// Close releases the caller's reference to the runtime. Closing twice is
// harmless; later calls on r fail with ErrInvalidArgument.
func (r *Runtime) Close() error {
	if r == nil {
		return nil
	}
	runtime.SetFinalizer(r, nil)
	capi.Spmd_runtime_destroy(r.h)
	return nil
}

// DeviceCount is the number of devices of the runtime, every process's
// (jax.device_count()).
func (r *Runtime) DeviceCount() (int, error) {
	defer runtime.KeepAlive(r)
	return get("Runtime.DeviceCount", func(n *int) error { return capi.Spmd_runtime_device_count(r.handle(), n) })
}

// ProcessIndex is this process's index among the runtime's processes
// (jax.process_index()); 0 for one process.
func (r *Runtime) ProcessIndex() (int, error) {
	defer runtime.KeepAlive(r)
	return get("Runtime.ProcessIndex", func(n *int) error { return capi.Spmd_runtime_process_index(r.handle(), n) })
}

// ProcessCount is the number of processes the runtime spans
// (jax.process_count()); 1 unless it is distributed.
func (r *Runtime) ProcessCount() (int, error) {
	defer runtime.KeepAlive(r)
	return get("Runtime.ProcessCount", func(n *int) error { return capi.Spmd_runtime_process_count(r.handle(), n) })
}

// LocalDeviceCount is the number of this process's own devices
// (len(jax.local_devices())), the same in every process.
func (r *Runtime) LocalDeviceCount() (int, error) {
	defer runtime.KeepAlive(r)
	return get("Runtime.LocalDeviceCount", func(n *int) error { return capi.Spmd_runtime_local_device_count(r.handle(), n) })
}

// Platform is the platform the runtime runs on (never PlatformDefault).
func (r *Runtime) Platform() (Platform, error) {
	defer runtime.KeepAlive(r)
	p, err := get("Runtime.Platform", func(p *int) error { return capi.Spmd_runtime_platform(r.handle(), p) })
	return Platform(p), err
}

// DeviceInfo describes one device (jax.Device).
type DeviceInfo struct {
	ID           int      // global id, as jax.Device.id
	Platform     Platform // the platform the device belongs to
	PlatformName string   // "cpu", "sim" or "cuda" (jax.Device.platform)
	Kind         string   // device kind: "cpu", or the GPU's name
	ProcessIndex int      // the process that owns the device
	LocalIndex   int      // index among this process's devices
	// MemoryBytes is the memory of the device's GPU, shared by its logical
	// devices; 0 on cpu and sim.
	MemoryBytes int64
	// ComputeCapability is the GPU's, as major*10 + minor (90 for an
	// H100); 0 on cpu and sim.
	ComputeCapability int
	repr              string
}

// String is JAX's repr of the device, "CpuDevice(id=3)".
func (d DeviceInfo) String() string { return d.repr }

// Device describes device id; ErrOutOfRange for an unknown id.
func (r *Runtime) Device(id int) (DeviceInfo, error) {
	const fn = "Runtime.Device"
	defer runtime.KeepAlive(r)
	if err := cInt(fn, "id", id); err != nil {
		return DeviceInfo{}, err
	}
	info := capi.NewSpmd_device_info()
	defer capi.DeleteSpmd_device_info(info)
	if err := check(fn, capi.Spmd_device_info_init(info, capi.SizeofDeviceInfo)); err != nil {
		return DeviceInfo{}, err
	}
	if err := check(fn, capi.Spmd_runtime_device_info(r.handle(), id, info)); err != nil {
		return DeviceInfo{}, err
	}
	repr, err := get(fn, func(s *string) error { return capi.Spmd_runtime_device_to_string(r.handle(), id, s) })
	if err != nil {
		return DeviceInfo{}, err
	}
	return DeviceInfo{
		ID:                info.GetId(),
		Platform:          Platform(info.GetPlatform()),
		PlatformName:      info.GetPlatform_name(),
		Kind:              info.GetKind(),
		ProcessIndex:      info.GetProcess_index(),
		LocalIndex:        info.GetLocal_index(),
		MemoryBytes:       info.GetMemory_bytes(),
		ComputeCapability: info.GetCompute_capability(),
		repr:              repr,
	}, nil
}

// Devices describes every device of the runtime, in id order (jax.devices()).
func (r *Runtime) Devices() ([]DeviceInfo, error) { return list(r.DeviceCount, r.Device) }

// DeviceString is JAX's repr of device id, "CpuDevice(id=3)";
// ErrOutOfRange for an unknown id.
func (r *Runtime) DeviceString(id int) (string, error) {
	const fn = "Runtime.DeviceString"
	defer runtime.KeepAlive(r)
	if err := cInt(fn, "id", id); err != nil {
		return "", err
	}
	return get(fn, func(s *string) error { return capi.Spmd_runtime_device_to_string(r.handle(), id, s) })
}
