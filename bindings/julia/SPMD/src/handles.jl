# Runtimes, devices, meshes, specs and shardings.
#
# Every handle type is a `Handle{C}` for its C handle type C, holding the C
# handle `ptr::Ptr{C}` and a `closed` flag, with a finalizer calling `close`
# and one `_destroy` method. `close` destroys the C handle once (idempotent).
# After close the handle keeps its (destroyed) id: libspmd never reuses ids
# and rejects a destroyed one, so a use after close is an SPMDError with the
# library's message, never a dangling pointer. Handles convert to their C
# pointer type in a ccall (cconvert keeps the object rooted for the call).

abstract type Handle{C} end

Base.isopen(h::Handle) = !h.closed

function Base.close(h::Handle)
    if !h.closed
        h.closed = true
        _destroy(h)
    end
    return nothing
end

Base.cconvert(::Type{Ptr{C}}, h::Handle{C}) where {C} = h
Base.unsafe_convert(::Type{Ptr{C}}, h::Handle{C}) where {C} = h.ptr

# The C handle type of a handle type.
_ctype(::Type{<:Handle{C}}) where {C} = C

# A new handle through `spmd_xxx **out` (see _value_out), wrapped by
# wrap(ptr): by default the constructor of the handle type H.
function _handle_out(f, ::Type{H}, wrap=H) where {H<:Handle}
    out = Ref{Ptr{_ctype(H)}}(C_NULL)
    _check(f(out))
    return wrap(out[])
end

# ---- Runtime ----------------------------------------------------------------

"""
    Runtime(; platform=:default, devices=0, worker_threads=0, device_cache_bytes=0,
            devices_per_gpu=0, callback_memory=:default, distributed=:default,
            exact_reductions=false)

A libspmd runtime: one platform's devices (`spmd_runtime_create`).
`platform` is `:default` (`\$SPMD_PLATFORM`, else cpu), `:cpu`, `:sim` or
`:cuda`; `devices` the number of virtual CPU/sim devices (0: `\$SPMD_CPU_DEVICES`,
else 8). On cuda, `devices_per_gpu` logical devices share each GPU (0:
`\$SPMD_CUDA_DEVICES_PER_GPU`, else 1). `callback_memory` is the memory
[`shard_map`](@ref) functions receive: `:default` (the platform's: host on
cpu, device on cuda, mapped on sim), `:device`, `:host_mapped` (host memory
the GPU maps, which indexing a `Block` needs on cuda) or `:host` (cpu only).
`distributed` is `:default` (`\$SPMD_DISTRIBUTED`), `:none` (one process) or
`:mpi` (every process under mpirun, each with the same number of local
devices; global device ids are process-major). Over several processes,
`exact_reductions=true` adds the terms of every reduction across processes in
the order one process adds them (results bit for bit those of one process
with as many devices, every block sent to every process of its group);
`false` leaves it to `\$SPMD_EXACT_REDUCTIONS`. Released by the garbage
collector or `close(runtime)`; meshes and arrays made from it keep what they
need alive.
"""
mutable struct Runtime <: Handle{LibSPMD.spmd_runtime}
    ptr::Ptr{LibSPMD.spmd_runtime}
    closed::Bool
    Runtime(ptr::Ptr{LibSPMD.spmd_runtime}) = finalizer(close, new(ptr, false))
end
_destroy(r::Runtime) = LibSPMD.spmd_runtime_destroy(r.ptr)

const _PLATFORMS = (default=LibSPMD.SPMD_PLATFORM_DEFAULT, cpu=LibSPMD.SPMD_PLATFORM_CPU,
                    cuda=LibSPMD.SPMD_PLATFORM_CUDA, sim=LibSPMD.SPMD_PLATFORM_SIM)

# spmd_memory_kind by name: Runtime's callback_memory, memory_kind(block).
const _MEMORY_KINDS = (default=LibSPMD.SPMD_MEMORY_DEFAULT, device=LibSPMD.SPMD_MEMORY_DEVICE,
                       host_mapped=LibSPMD.SPMD_MEMORY_HOST_MAPPED, host=LibSPMD.SPMD_MEMORY_HOST)

# spmd_distributed by name: Runtime's distributed.
const _DISTRIBUTED = (default=LibSPMD.SPMD_DISTRIBUTED_DEFAULT, none=LibSPMD.SPMD_DISTRIBUTED_NONE,
                      mpi=LibSPMD.SPMD_DISTRIBUTED_MPI)

function Runtime(; platform::Symbol=:default, devices::Integer=0, worker_threads::Integer=0,
                 device_cache_bytes::Integer=0, devices_per_gpu::Integer=0,
                 callback_memory::Symbol=:default, distributed::Symbol=:default,
                 exact_reductions::Bool=false)
    haskey(_PLATFORMS, platform) ||
        throw(ArgumentError("platform must be one of $(keys(_PLATFORMS)), not :$platform"))
    haskey(_MEMORY_KINDS, callback_memory) ||
        throw(ArgumentError("callback_memory must be one of $(keys(_MEMORY_KINDS)), " *
                            "not :$callback_memory"))
    haskey(_DISTRIBUTED, distributed) ||
        throw(ArgumentError("distributed must be one of $(keys(_DISTRIBUTED)), " *
                            "not :$distributed"))
    options = _initialised(LibSPMD.spmd_runtime_options_init, LibSPMD.spmd_runtime_options)
    options[] = _with(options[]; platform=_PLATFORMS[platform], cpu_device_count=devices,
                      worker_threads=worker_threads, device_cache_bytes=device_cache_bytes,
                      devices_per_gpu=devices_per_gpu,
                      callback_memory=_MEMORY_KINDS[callback_memory],
                      distributed=_DISTRIBUTED[distributed],
                      exact_reductions=Cint(exact_reductions))
    return _handle_out(out -> LibSPMD.spmd_runtime_create(options, out), Runtime)
end

"""
    device_count(runtime) -> Int

Number of devices of the runtime (`spmd_runtime_device_count`).
"""
device_count(r::Runtime) = Int(_value_out(out -> LibSPMD.spmd_runtime_device_count(r, out), Cint))

"""
    process_index(runtime) -> Int

This process's index among the runtime's processes, `jax.process_index()`
(`spmd_runtime_process_index`); 0 for one process.
"""
process_index(r::Runtime) =
    Int(_value_out(out -> LibSPMD.spmd_runtime_process_index(r, out), Cint))

"""
    process_count(runtime) -> Int

Number of processes the runtime spans, `jax.process_count()`
(`spmd_runtime_process_count`).
"""
process_count(r::Runtime) =
    Int(_value_out(out -> LibSPMD.spmd_runtime_process_count(r, out), Cint))

"""
    local_device_count(runtime) -> Int

Number of this process's own devices, `len(jax.local_devices())`
(`spmd_runtime_local_device_count`), the same in every process.
"""
local_device_count(r::Runtime) =
    Int(_value_out(out -> LibSPMD.spmd_runtime_local_device_count(r, out), Cint))

"""
    platform(runtime) -> Symbol

`:cpu`, `:sim` or `:cuda` (`spmd_runtime_platform`).
"""
function platform(r::Runtime)
    code = _value_out(out -> LibSPMD.spmd_runtime_platform(r, out), LibSPMD.spmd_platform)
    for (name, c) in pairs(_PLATFORMS)
        c == code && return name
    end
    return Symbol("platform", code)
end

"""
    Device(runtime, id)

Device `id` (0-based global id, as `jax.Device.id`) of a runtime. Prints as
JAX's repr, "CpuDevice(id=3)".
"""
struct Device
    runtime::Runtime
    id::Int
end

"""
    devices(runtime) -> Vector{Device}

The runtime's devices, `jax.devices()`.
"""
devices(r::Runtime) = [Device(r, i) for i in 0:device_count(r)-1]

Base.show(io::IO, d::Device) =
    print(io, _string_out(out -> LibSPMD.spmd_runtime_device_to_string(d.runtime, Cint(d.id), out)))

"""
    device_info(device) -> NamedTuple

`(id, platform, platform_name, kind, process_index, local_index,
memory_bytes, compute_capability)` of a device (`spmd_runtime_device_info`):
`memory_bytes` is the memory of the device's GPU (shared by its logical
devices) and `compute_capability` the GPU's as major*10 + minor (90 for an
H100); both 0 on cpu and sim.
"""
function device_info(d::Device)
    info = _initialised(LibSPMD.spmd_device_info_init, LibSPMD.spmd_device_info)
    _check(LibSPMD.spmd_runtime_device_info(d.runtime, Cint(d.id), info))
    i = info[]
    runtime = d.runtime
    # The strings point into the runtime: copy them while it is alive.
    names = GC.@preserve runtime (_borrowed_string(i.platform_name), _borrowed_string(i.kind))
    return (id=Int(i.id), platform=platform(runtime), platform_name=names[1], kind=names[2],
            process_index=Int(i.process_index), local_index=Int(i.local_index),
            memory_bytes=Int(i.memory_bytes), compute_capability=Int(i.compute_capability))
end

# ---- Mesh -------------------------------------------------------------------

"""
    Mesh(runtime, shape, axis_names; devices=nothing)

A device mesh, `jax.make_mesh(shape, axis_names)` (`spmd_mesh_create`):
`shape` the axis sizes, `axis_names` strings or symbols, `devices` the device
ids in row-major order over the mesh (default 0, 1, ...).

`size(mesh)` is the tuple of axis sizes, `length(mesh)` the number of
devices, `axis_names(mesh)` the names; positions (axes, coordinates) are
1-based, device ids 0-based as in JAX.
"""
mutable struct Mesh <: Handle{LibSPMD.spmd_mesh}
    ptr::Ptr{LibSPMD.spmd_mesh}
    closed::Bool
    owned::Bool  # false for the mesh a shard_map context lends
    Mesh(ptr::Ptr{LibSPMD.spmd_mesh}, owned::Bool=true) = finalizer(close, new(ptr, false, owned))
end
_destroy(m::Mesh) = m.owned && LibSPMD.spmd_mesh_destroy(m.ptr)

function Mesh(r::Runtime, shape, names; devices=nothing)
    length(shape) == length(names) ||
        throw(ArgumentError("a mesh of $(length(shape)) axes needs as many names, got $(length(names))"))
    dims = _shape(shape)
    ids = devices === nothing ? C_NULL : Cint[Cint(d) for d in devices]
    return _with_cstrings(names) do cnames
        _handle_out(Mesh) do out
            LibSPMD.spmd_mesh_create(r, Csize_t(length(dims)), dims, cnames, ids, out)
        end
    end
end

Base.ndims(m::Mesh) = Int(_value_out(out -> LibSPMD.spmd_mesh_ndim(m, out), Csize_t))
Base.length(m::Mesh) = Int(_value_out(out -> LibSPMD.spmd_mesh_size(m, out), Csize_t))

function Base.size(m::Mesh)
    return ntuple(ndims(m)) do axis
        Int(_value_out(out -> LibSPMD.spmd_mesh_axis_size(m, Csize_t(axis - 1), out), Int64))
    end
end
Base.size(m::Mesh, axis::Integer) = size(m)[axis]

"""
    axis_names(mesh) -> Vector{String}
"""
function axis_names(m::Mesh)
    return map(1:ndims(m)) do axis
        GC.@preserve m begin  # the name is borrowed: it lives as long as the mesh
            unsafe_string(_value_out(out -> LibSPMD.spmd_mesh_axis_name(m, Csize_t(axis - 1), out),
                                     Ptr{Cchar}))
        end
    end
end

"""
    axis_index(mesh, name) -> Int

The 1-based position of the axis called `name` (`spmd_mesh_axis_index`).
"""
axis_index(m::Mesh, name) =
    Int(_value_out(out -> LibSPMD.spmd_mesh_axis_index(m, string(name), out), Csize_t)) + 1

"""
    device_ids(mesh) -> Vector{Int}

The mesh's device ids in row-major mesh order, `mesh.devices.flat`
(`spmd_mesh_device`).
"""
function device_ids(m::Mesh)
    return map(1:length(m)) do i
        Int(_value_out(out -> LibSPMD.spmd_mesh_device(m, Csize_t(i - 1), out), Cint))
    end
end

"""
    device_at(mesh, coords...) -> Int

The id of the device at 1-based mesh coordinates (`spmd_mesh_device_at`).
"""
function device_at(m::Mesh, coords::Integer...)
    c = Int64[Int64(x) - 1 for x in coords]
    return Int(_value_out(out -> LibSPMD.spmd_mesh_device_at(m, Csize_t(length(c)), c, out), Cint))
end

"""
    device_coords(mesh, id) -> NTuple{N,Int}

The 1-based mesh coordinates of device `id` (`spmd_mesh_device_coords`).
"""
function device_coords(m::Mesh, id::Integer)
    n = Ref{Csize_t}(0)
    coords = zeros(Int64, ndims(m))
    _check(LibSPMD.spmd_mesh_device_coords(m, Cint(id), Csize_t(length(coords)), coords, n))
    return Tuple(Int(c) + 1 for c in coords)
end

Base.:(==)(a::Mesh, b::Mesh) = _value_out(out -> LibSPMD.spmd_mesh_equal(a, b, out), Cint) != 0
Base.hash(m::Mesh, h::UInt) = hash(string(m), hash(:Mesh, h))

Base.show(io::IO, m::Mesh) = print(io, _string_out(out -> LibSPMD.spmd_mesh_to_string(m, out)))

# ---- Spec -------------------------------------------------------------------

"""
    Spec(text)
    P(entries...)

A partition spec, `jax.sharding.PartitionSpec`. `Spec(text)` parses Python's
spelling (`spmd_spec_parse`): "P('x', None)", "x, None", "(x, y)", "".
`P(entries...)` builds one dimension per entry (`spmd_spec_create` and
`spmd_spec_append`): `nothing` (replicated), an axis name (String or Symbol),
or a tuple of names. `P("x", nothing)` is `PartitionSpec('x', None)`.

`length(spec)` is its number of dimensions and `spec[d]` the axis names of
dimension `d` (1-based).
"""
mutable struct Spec <: Handle{LibSPMD.spmd_spec}
    ptr::Ptr{LibSPMD.spmd_spec}
    closed::Bool
    Spec(ptr::Ptr{LibSPMD.spmd_spec}) = finalizer(close, new(ptr, false))
end
_destroy(s::Spec) = LibSPMD.spmd_spec_destroy(s.ptr)

Spec(text::AbstractString) = _handle_out(out -> LibSPMD.spmd_spec_parse(String(text), out), Spec)

function P(entries...)
    spec = _handle_out(out -> LibSPMD.spmd_spec_create(out), Spec)
    try
        for e in entries
            names = e === nothing ? String[] :
                    e isa Union{AbstractString,Symbol} ? [string(e)] : [string(a) for a in e]
            _with_cstrings(names) do cnames
                _check(LibSPMD.spmd_spec_append(spec, cnames, Csize_t(length(cnames))))
            end
        end
    catch
        close(spec)
        rethrow()
    end
    return spec
end

Base.length(s::Spec) = Int(_value_out(out -> LibSPMD.spmd_spec_ndim(s, out), Csize_t))

function Base.getindex(s::Spec, dim::Integer)
    d = Csize_t(dim - 1)
    n = _value_out(out -> LibSPMD.spmd_spec_dim_size(s, d, out), Csize_t)
    return map(1:Int(n)) do i
        GC.@preserve s begin  # the name is borrowed: it lives as long as the spec
            unsafe_string(_value_out(out -> LibSPMD.spmd_spec_dim_axis(s, d, Csize_t(i - 1), out),
                                     Ptr{Cchar}))
        end
    end
end

Base.:(==)(a::Spec, b::Spec) = _value_out(out -> LibSPMD.spmd_spec_equal(a, b, out), Cint) != 0
Base.hash(s::Spec, h::UInt) = hash(:Spec, h)  # P('x') == P('x', None): their strings differ

Base.show(io::IO, s::Spec) = print(io, _string_out(out -> LibSPMD.spmd_spec_to_string(s, out)))

# ---- Sharding ---------------------------------------------------------------

"""
    Sharding(mesh, spec::Spec)
    Sharding(mesh, text::AbstractString)
    NamedSharding(mesh, spec)

`NamedSharding(mesh, spec)` (`spmd_sharding_named`, or
`spmd_sharding_named_text` for a spec given as text). See also
[`replicated`](@ref) and [`single_device`](@ref). `==` is JAX's: the same
placement of every element.
"""
mutable struct Sharding <: Handle{LibSPMD.spmd_sharding}
    ptr::Ptr{LibSPMD.spmd_sharding}
    closed::Bool
    Sharding(ptr::Ptr{LibSPMD.spmd_sharding}) = finalizer(close, new(ptr, false))
end
_destroy(s::Sharding) = LibSPMD.spmd_sharding_destroy(s.ptr)

Sharding(m::Mesh, s::Spec) = _handle_out(out -> LibSPMD.spmd_sharding_named(m, s, out), Sharding)
Sharding(m::Mesh, text::AbstractString) =
    _handle_out(out -> LibSPMD.spmd_sharding_named_text(m, String(text), out), Sharding)

const NamedSharding = Sharding

"""
    replicated(mesh) -> Sharding

`NamedSharding(mesh, P())`: every device holds the whole array
(`spmd_sharding_replicated`).
"""
replicated(m::Mesh) = _handle_out(out -> LibSPMD.spmd_sharding_replicated(m, out), Sharding)

"""
    single_device(runtime, id) -> Sharding

`SingleDeviceSharding(device)` (`spmd_sharding_single_device`).
"""
single_device(r::Runtime, id::Integer) =
    _handle_out(out -> LibSPMD.spmd_sharding_single_device(r, Cint(id), out), Sharding)
single_device(d::Device) = single_device(d.runtime, d.id)

"""
    kind(sharding) -> Symbol

`:named` or `:single_device` (`spmd_sharding_get_kind`).
"""
function kind(s::Sharding)
    code = _value_out(out -> LibSPMD.spmd_sharding_get_kind(s, out), LibSPMD.spmd_sharding_kind)
    return code == LibSPMD.SPMD_SHARDING_NAMED ? :named : :single_device
end

"""
    mesh(sharding) -> Mesh

The sharding's mesh (a one-device mesh for a single-device sharding).
"""
mesh(s::Sharding) = _handle_out(out -> LibSPMD.spmd_sharding_mesh(s, out), Mesh)

"""
    spec(sharding) -> Spec

A copy of the sharding's spec (P() for a single-device sharding).
"""
spec(s::Sharding) = _handle_out(out -> LibSPMD.spmd_sharding_spec(s, out), Spec)

"""
    device_count(sharding) -> Int

Number of devices holding a shard (the mesh size).
"""
device_count(s::Sharding) =
    Int(_value_out(out -> LibSPMD.spmd_sharding_device_count(s, out), Csize_t))

Base.:(==)(a::Sharding, b::Sharding) =
    _value_out(out -> LibSPMD.spmd_sharding_equal(a, b, out), Cint) != 0
Base.hash(s::Sharding, h::UInt) = hash(:Sharding, h)

"""
    is_fully_replicated(sharding) -> Bool
"""
is_fully_replicated(s::Sharding) =
    _value_out(out -> LibSPMD.spmd_sharding_is_fully_replicated(s, out), Cint) != 0

Base.show(io::IO, s::Sharding) =
    print(io, _string_out(out -> LibSPMD.spmd_sharding_to_string(s, out)))

"""
    ShardInfo

Where one shard of a global array lives (jax's `Shard`): `device` (its id),
`replica_id`, and `indices`, one 1-based `UnitRange` per dimension, so that
`A[info.indices...]` is the shard of the Julia array `A` that was put.
`size(info)` is the local shape.
"""
struct ShardInfo{N}
    device::Int
    replica_id::Int
    indices::NTuple{N,UnitRange{Int}}
end

Base.size(s::ShardInfo) = map(length, s.indices)

function ShardInfo(raw::LibSPMD.spmd_shard_info)
    n = Int(raw.ndim)
    indices = ntuple(d -> (Int(raw.start[d]) + 1):Int(raw.stop[d]), n)
    return ShardInfo{n}(Int(raw.device), Int(raw.replica_id), indices)
end

# The ShardInfo a C function fills through `spmd_shard_info *out`.
function _shard_info_out(f)
    info = _initialised(LibSPMD.spmd_shard_info_init, LibSPMD.spmd_shard_info)
    _check(f(info))
    return ShardInfo(info[])
end

"""
    process_local_shape(sharding, dims) -> Tuple

The size of this process's part of an array of global shape `dims` under the
sharding, what [`make_array_from_process_local_data`](@ref) takes: the
smallest box covering the blocks of this process's devices, `Tuple(dims)`
in a runtime of one process (`spmd_array_process_local_shape`).
"""
function process_local_shape(s::Sharding, dims)
    shape = _shape(dims)
    local_shape = similar(shape)
    _check(LibSPMD.spmd_array_process_local_shape(s, Csize_t(length(shape)), shape, local_shape))
    return Tuple(Int.(local_shape))
end

"""
    shard_info(sharding, dims, i) -> ShardInfo
    shard_info(sharding, dims; device=id) -> ShardInfo

Shard `i` (1-based, in mesh device order) of an array of global shape `dims`
under the sharding, or the shard on device `id`
(`spmd_sharding_shard_info`, `spmd_sharding_shard_info_of_device`).
"""
function shard_info(s::Sharding, dims, i::Integer)
    shape = _shape(dims)
    return _shard_info_out() do info
        LibSPMD.spmd_sharding_shard_info(s, Csize_t(length(shape)), shape, Csize_t(i - 1), info)
    end
end

function shard_info(s::Sharding, dims; device::Integer)
    shape = _shape(dims)
    return _shard_info_out() do info
        LibSPMD.spmd_sharding_shard_info_of_device(s, Csize_t(length(shape)), shape, Cint(device),
                                                   info)
    end
end

"""
    visualize(sharding, dims; ascii=false, max_width=0, min_width=0, scale=0) -> String
    visualize(x::ShardedArray; ...) -> String

`jax.debug.visualize_array_sharding`: the text picture of how an array of
global shape `dims` (1 or 2 dimensions) is laid out, ending with a newline
(`spmd_sharding_visualize`, `spmd_array_visualize`). Zero options take JAX's
defaults (80 columns).
"""
function visualize(s::Sharding, dims; kw...)
    shape = _shape(dims)
    options = _visualize_options(; kw...)
    return _string_out() do out
        LibSPMD.spmd_sharding_visualize(s, Csize_t(length(shape)), shape, options, out)
    end
end

function _visualize_options(; ascii::Bool=false, max_width::Integer=0, min_width::Integer=0,
                            scale::Real=0)
    options = _initialised(LibSPMD.spmd_visualize_options_init, LibSPMD.spmd_visualize_options)
    options[] = _with(options[]; ascii=ascii ? 1 : 0, max_width=max_width, min_width=min_width,
                      scale=scale)
    return options
end
