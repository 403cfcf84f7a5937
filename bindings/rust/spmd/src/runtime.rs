//! The runtime: one platform's devices.
use crate::error::{check, from_c, out_string, Error, Result};
use crate::{c_device, from_c_size, init_struct, out_value, sys};

/// The platforms a runtime can run on (`spmd_platform`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Platform {
    /// `$SPMD_PLATFORM` from the environment, else cpu.
    #[default]
    Default,
    /// N virtual devices in this process.
    Cpu,
    /// Logical devices on the visible GPUs (a plugin):
    /// [`RuntimeBuilder::devices_per_gpu`] on each.
    Cuda,
    /// Simulated devices whose memory the host cannot touch.
    Sim,
}

impl Platform {
    /// The C value.
    pub fn to_raw(self) -> sys::spmd_platform {
        match self {
            Platform::Default => sys::SPMD_PLATFORM_DEFAULT,
            Platform::Cpu => sys::SPMD_PLATFORM_CPU,
            Platform::Cuda => sys::SPMD_PLATFORM_CUDA,
            Platform::Sim => sys::SPMD_PLATFORM_SIM,
        }
    }

    /// The platform of a C value.
    pub fn from_raw(raw: sys::spmd_platform) -> Option<Platform> {
        Some(match raw {
            sys::SPMD_PLATFORM_DEFAULT => Platform::Default,
            sys::SPMD_PLATFORM_CPU => Platform::Cpu,
            sys::SPMD_PLATFORM_CUDA => Platform::Cuda,
            sys::SPMD_PLATFORM_SIM => Platform::Sim,
            _ => return None,
        })
    }
}

/// Whether a runtime spans several processes (`spmd_distributed`), as JAX's
/// multi-controller model: every process runs the same program under
/// mpirun and makes the same calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Distributed {
    /// `$SPMD_DISTRIBUTED`: "mpi", or one process when unset or "none".
    #[default]
    Default,
    /// One process owning every device of its runtime.
    None,
    /// Every process of MPI_COMM_WORLD, each contributing the same number of
    /// local devices (the plugin libspmd_mpi.so, under mpirun or srun).
    Mpi,
}

impl Distributed {
    /// The C value.
    pub fn to_raw(self) -> sys::spmd_distributed {
        match self {
            Distributed::Default => sys::SPMD_DISTRIBUTED_DEFAULT,
            Distributed::None => sys::SPMD_DISTRIBUTED_NONE,
            Distributed::Mpi => sys::SPMD_DISTRIBUTED_MPI,
        }
    }
}

/// The memory shard_map callbacks receive (`spmd_memory_kind`): asked for
/// with [`RuntimeBuilder::callback_memory`], and said of each block by
/// [`Block::memory_kind`](crate::Block::memory_kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MemoryKind {
    /// The platform's choice: host memory on cpu, device memory on cuda,
    /// mapped on sim; `$SPMD_CALLBACK_MEMORY` ("device" or "mapped")
    /// chooses when set.
    #[default]
    Default,
    /// Device memory: on cuda, device pointers for kernels queued on
    /// [`ShardContext::stream`](crate::ShardContext::stream); host code must
    /// not touch them.
    Device,
    /// Host memory the device maps too (CUDA's mapped pinned memory): host
    /// code reads and writes it, so closures written for the host run
    /// unchanged, at the cost of transfers.
    HostMapped,
    /// Plain host memory, what the cpu platform's devices own. As an
    /// option, the cpu platform alone takes it.
    Host,
}

impl MemoryKind {
    /// The C value.
    pub fn to_raw(self) -> sys::spmd_memory_kind {
        match self {
            MemoryKind::Default => sys::SPMD_MEMORY_DEFAULT,
            MemoryKind::Device => sys::SPMD_MEMORY_DEVICE,
            MemoryKind::HostMapped => sys::SPMD_MEMORY_HOST_MAPPED,
            MemoryKind::Host => sys::SPMD_MEMORY_HOST,
        }
    }

    /// The memory kind of a C value.
    pub fn from_raw(raw: sys::spmd_memory_kind) -> Option<MemoryKind> {
        Some(match raw {
            sys::SPMD_MEMORY_DEFAULT => MemoryKind::Default,
            sys::SPMD_MEMORY_DEVICE => MemoryKind::Device,
            sys::SPMD_MEMORY_HOST_MAPPED => MemoryKind::HostMapped,
            sys::SPMD_MEMORY_HOST => MemoryKind::Host,
            _ => return None,
        })
    }

    /// Whether host code may read and write memory of this kind ([`Host`]
    /// and [`HostMapped`]): what a block's slices need.
    ///
    /// [`Host`]: MemoryKind::Host
    /// [`HostMapped`]: MemoryKind::HostMapped
    pub fn is_host_addressable(self) -> bool {
        matches!(self, MemoryKind::Host | MemoryKind::HostMapped)
    }
}

/// The options of a runtime; zero in a numeric field means "default".
#[derive(Debug, Clone, Default)]
pub struct RuntimeBuilder {
    platform: Platform,
    cpu_devices: i32,
    worker_threads: i32,
    device_cache_bytes: i64,
    devices_per_gpu: i32,
    callback_memory: MemoryKind,
    distributed: Distributed,
    exact_reductions: bool,
}

fn to_c_int(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

impl RuntimeBuilder {
    /// Every option at its default.
    pub fn new() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    /// The platform.
    pub fn platform(mut self, platform: Platform) -> RuntimeBuilder {
        self.platform = platform;
        self
    }

    /// CPU and sim platforms: the number of virtual devices (0 =
    /// `$SPMD_CPU_DEVICES` if set, else 8).
    pub fn cpu_devices(mut self, n: usize) -> RuntimeBuilder {
        self.cpu_devices = to_c_int(n);
        self
    }

    /// Worker threads for per-shard kernels and copies (0 = number of cores).
    pub fn worker_threads(mut self, n: usize) -> RuntimeBuilder {
        self.worker_threads = to_c_int(n);
        self
    }

    /// CPU platform: bytes of freed device memory kept for reuse (0 = 4 GiB,
    /// negative = keep nothing). CUDA platform: the same for its memory
    /// pools, 0 keeping all freed memory.
    pub fn device_cache_bytes(mut self, bytes: i64) -> RuntimeBuilder {
        self.device_cache_bytes = bytes;
        self
    }

    /// CUDA platform: logical devices on each GPU, each with its own stream
    /// and memory pool, so that an 8-device mesh runs on one GPU (0 =
    /// `$SPMD_CUDA_DEVICES_PER_GPU` if set, else 1; at most 64). Other
    /// platforms ignore it.
    pub fn devices_per_gpu(mut self, n: usize) -> RuntimeBuilder {
        self.devices_per_gpu = to_c_int(n);
        self
    }

    /// The memory shard_map closures receive ([`MemoryKind::Default`]: the
    /// platform's). [`MemoryKind::HostMapped`] lets closures written for the
    /// host read and write blocks on cuda; the sim platform gives mapped
    /// memory only.
    pub fn callback_memory(mut self, kind: MemoryKind) -> RuntimeBuilder {
        self.callback_memory = kind;
        self
    }

    /// One process or several ([`Distributed::Default`]: `$SPMD_DISTRIBUTED`).
    /// Over several, global device ids are process-major.
    pub fn distributed(mut self, distributed: Distributed) -> RuntimeBuilder {
        self.distributed = distributed;
        self
    }

    /// Over several processes, `true` adds the terms of every reduction
    /// across processes (psums and the sums of global ops) in the order one
    /// process adds them, so results are bit for bit those of one process
    /// with as many devices, at the cost of sending every block to every
    /// process of its group. `false` (the default) leaves it to
    /// `$SPMD_EXACT_REDUCTIONS` ("1"), else sends one partial result per
    /// process and group.
    pub fn exact_reductions(mut self, exact: bool) -> RuntimeBuilder {
        self.exact_reductions = exact;
        self
    }

    /// Creates the runtime.
    pub fn build(&self) -> Result<Runtime> {
        let mut options = init_struct(sys::spmd_runtime_options_init)?;
        options.platform = self.platform.to_raw();
        options.cpu_device_count = self.cpu_devices;
        options.worker_threads = self.worker_threads;
        options.device_cache_bytes = self.device_cache_bytes;
        options.devices_per_gpu = self.devices_per_gpu;
        options.callback_memory = self.callback_memory.to_raw();
        options.distributed = self.distributed.to_raw();
        options.exact_reductions = self.exact_reductions as i32;
        // SAFETY: valid options and out pointer.
        Runtime::from_call(|out| unsafe { sys::spmd_runtime_create(&options, out) })
    }
}

crate::handle!(
    /// A runtime (`spmd_runtime`): one platform's devices and the threads and
    /// memory that serve them. Meshes, shardings and arrays made from it keep
    /// what they need alive, so it may drop before them.
    Runtime,
    sys::spmd_runtime,
    sys::spmd_runtime_destroy
);

/// Description of one device (jax.Device).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Global id, as jax.Device.id.
    pub id: usize,
    /// The platform the device belongs to.
    pub platform: Platform,
    /// "cpu", "sim" or "cuda".
    pub platform_name: String,
    /// Device kind: "cpu", or the GPU's name.
    pub kind: String,
    /// The process that owns the device.
    pub process_index: usize,
    /// Index among this process's devices.
    pub local_index: usize,
    /// Bytes of memory of the device's GPU (shared by its logical devices);
    /// 0 on cpu and sim.
    pub memory_bytes: i64,
    /// The GPU's compute capability as major * 10 + minor (90 for an H100);
    /// 0 on cpu and sim.
    pub compute_capability: i32,
}

impl Runtime {
    /// A runtime with every option at its default (8 CPU devices unless
    /// `$SPMD_PLATFORM` / `$SPMD_CPU_DEVICES` say otherwise).
    pub fn new() -> Result<Runtime> {
        RuntimeBuilder::new().build()
    }

    /// The options of a new runtime.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::new()
    }

    /// Number of devices, every process's (jax.device_count()).
    pub fn device_count(&self) -> Result<usize> {
        // SAFETY: live handle, valid out pointer.
        let n = out_value(|n| unsafe { sys::spmd_runtime_device_count(self.ptr, n) })?;
        Ok(n as usize)
    }

    /// This process's index among the runtime's processes
    /// (jax.process_index()); 0 for one process.
    pub fn process_index(&self) -> Result<usize> {
        // SAFETY: live handle, valid out pointer.
        let n = out_value(|n| unsafe { sys::spmd_runtime_process_index(self.ptr, n) })?;
        Ok(n as usize)
    }

    /// Number of processes the runtime spans (jax.process_count()).
    pub fn process_count(&self) -> Result<usize> {
        // SAFETY: live handle, valid out pointer.
        let n = out_value(|n| unsafe { sys::spmd_runtime_process_count(self.ptr, n) })?;
        Ok(n as usize)
    }

    /// Number of this process's own devices (len(jax.local_devices())), the
    /// same in every process.
    pub fn local_device_count(&self) -> Result<usize> {
        // SAFETY: live handle, valid out pointer.
        let n = out_value(|n| unsafe { sys::spmd_runtime_local_device_count(self.ptr, n) })?;
        Ok(n as usize)
    }

    /// The platform the runtime runs on.
    pub fn platform(&self) -> Result<Platform> {
        // SAFETY: live handle, valid out pointer.
        let raw = out_value(|raw| unsafe { sys::spmd_runtime_platform(self.ptr, raw) })?;
        Platform::from_raw(raw).ok_or_else(|| Error::new(crate::Status::Internal, "unknown platform"))
    }

    /// Describes device `device_id`.
    pub fn device_info(&self, device_id: usize) -> Result<DeviceInfo> {
        let device_id = c_device("Runtime::device_info: device_id", device_id)?;
        let mut info = init_struct(sys::spmd_device_info_init)?;
        // SAFETY: live handle, initialised struct; the strings point into the
        // runtime, copied while it lives.
        unsafe {
            check(sys::spmd_runtime_device_info(self.ptr, device_id, &mut info))?;
            Ok(DeviceInfo {
                id: from_c_size(info.id)?,
                platform: Platform::from_raw(info.platform).unwrap_or(Platform::Default),
                platform_name: from_c(info.platform_name),
                kind: from_c(info.kind),
                process_index: from_c_size(info.process_index)?,
                local_index: from_c_size(info.local_index)?,
                memory_bytes: info.memory_bytes,
                compute_capability: info.compute_capability,
            })
        }
    }

    /// JAX's repr of device `device_id`: "CpuDevice(id=3)".
    pub fn device_string(&self, device_id: usize) -> Result<String> {
        let device_id = c_device("Runtime::device_string: device_id", device_id)?;
        // SAFETY: live handle, valid out pointer.
        out_string(|out| unsafe { sys::spmd_runtime_device_to_string(self.ptr, device_id, out) })
    }

    /// jax.devices() as JAX prints it: "[CpuDevice(id=0), CpuDevice(id=1)]".
    pub fn devices_string(&self) -> Result<String> {
        let names = (0..self.device_count()?).map(|d| self.device_string(d)).collect::<Result<Vec<_>>>()?;
        Ok(format!("[{}]", names.join(", ")))
    }
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("platform", &self.platform().ok())
            .field("devices", &self.device_count().ok())
            .finish()
    }
}
