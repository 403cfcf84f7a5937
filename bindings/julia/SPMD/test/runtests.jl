# The tests Pkg.test() runs (CTest binding_julia_test when julia is on PATH).
# The library: $JULIA_SPMD_LIBRARY or $SPMD_LIBRARY, else "libspmd" on the
# loader's path (see the README).

using Test
using SPMD
using SPMD: LibSPMD, status_name

# The error a call throws, or nothing.
function error_of(f)
    try
        f()
    catch e
        return e
    end
    return nothing
end

# Live handles once the garbage collector has run the finalizers.
function settled_handles()
    GC.gc(true)
    GC.gc(true)
    return live_handles()
end

# The notebooks' arr = jnp.arange(24.0).reshape(3, 8): row i holds
# 8(i-1), ..., 8(i-1)+7.
const A = permutedims(reshape(Float32.(0:23), 8, 3))

# The picture JAX draws for a (3, 8) array split by rows over 3 devices.
const ROWS_PICTURE = """
┌───────────────────────────────────────────────────────────────┐
│                             CPU 0                             │
│                                                               │
├───────────────────────────────────────────────────────────────┤
│                             CPU 1                             │
│                                                               │
├───────────────────────────────────────────────────────────────┤
│                             CPU 2                             │
│                                                               │
└───────────────────────────────────────────────────────────────┘
"""

const rt = Runtime(platform=:cpu, devices=8)
const mesh3 = Mesh(rt, (3,), ("x",))
const rows = Sharding(mesh3, P("x"))
const rep3 = replicated(mesh3)

@testset "SPMD.jl" begin

@testset "library, errors, dtypes" begin
    @test SPMD.version() == VersionNumber(LibSPMD.SPMD_VERSION_STRING)
    @test SPMD.version_number() == LibSPMD.SPMD_VERSION_NUMBER
    @test status_name(LibSPMD.SPMD_ERR_INVALID_ARGUMENT) == "invalid argument"
    @test SPMD.dtype_name(Float32) == "float32"
    @test SPMD.dtype_name(BFloat16) == "bfloat16"
    @test SPMD.dtype_size(Float16) == 2
    @test SPMD.dtype_size(Bool) == 1
    @test SPMD.dtype_from_name("int64") === Int64
    e = error_of(() -> SPMD.dtype_from_name("floot"))
    @test e isa SPMDError
    @test e.status == LibSPMD.SPMD_ERR_INVALID_ARGUMENT
    @test occursin("'floot' is not a dtype", e.message)
    @test occursin("float32", e.message)
    @test startswith(sprint(showerror, e), "SPMDError: invalid argument: spmd_dtype_from_name")
    @test SPMD.last_error() == e.message
    SPMD.clear_error()
    @test SPMD.last_error() == ""
    @test_throws ArgumentError SPMD.dtype(ComplexF32)
    @test Float32(BFloat16(1.5f0)) == 1.5f0
    @test live_handles() isa Int
end

@testset "runtime and devices" begin
    @test device_count(rt) == 8
    @test (process_index(rt), process_count(rt), local_device_count(rt)) == (0, 1, 8)
    @test platform(rt) == :cpu
    devs = devices(rt)
    @test length(devs) == 8
    @test string(devs[4]) == "CpuDevice(id=3)"
    info = device_info(devs[3])
    @test info.id == 2
    @test info.platform == :cpu
    @test info.platform_name == "cpu"
    @test info.local_index == 2
    @test info.memory_bytes == 0 && info.compute_capability == 0
    @test_throws ArgumentError Runtime(platform=:tpu)
    @test_throws ArgumentError Runtime(platform=:cpu, distributed=:gloo)
    # The CUDA options are accepted, and ignored, by the cpu platform.
    r2 = Runtime(platform=:cpu, devices=2, worker_threads=1, devices_per_gpu=4,
                 callback_memory=:host)
    @test device_count(r2) == 2
    close(r2)
    # Exact reductions change nothing in one process.
    r3 = Runtime(platform=:cpu, devices=2, exact_reductions=true)
    @test process_count(r3) == 1
    close(r3)
    @test_throws ArgumentError Runtime(platform=:cpu, callback_memory=:pinned)
    # The sim platform gives callbacks mapped memory only, and nothing but
    # the cpu platform takes plain host memory.
    for kind in (:device, :host)
        e = error_of(() -> Runtime(platform=:sim, devices=2, callback_memory=kind))
        @test e isa SPMDError && e.status == LibSPMD.SPMD_ERR_INVALID_ARGUMENT
        @test occursin("memory", e.message)
    end
end

@testset "meshes" begin
    m = Mesh(rt, (2, 4), ("x", "y"))
    @test ndims(m) == 2
    @test size(m) == (2, 4)
    @test size(m, 2) == 4
    @test length(m) == 8
    @test axis_names(m) == ["x", "y"]
    @test axis_index(m, "y") == 2
    @test device_ids(m) == collect(0:7)
    @test device_at(m, 2, 1) == 4
    @test device_coords(m, 5) == (2, 2)
    @test string(m) == "Mesh('x': 2, 'y': 4)"
    @test m == Mesh(rt, (2, 4), (:x, :y))
    @test !(m == Mesh(rt, (2, 4), (:x, :y); devices=7:-1:0))
    @test isopen(m)
    close(m)
    @test !isopen(m)
    close(m)  # idempotent
end

@testset "specs and shardings" begin
    s = Spec("P('x', None)")
    @test length(s) == 2
    @test s[1] == ["x"]
    @test s[2] == String[]
    @test string(s) == "PartitionSpec('x', None)"
    @test s == P("x")
    @test string(P(("x", "y"), nothing)) == "PartitionSpec(('x', 'y'), None)"
    @test string(P()) == "PartitionSpec()"
    @test string(rows) ==
          "NamedSharding(mesh=Mesh('x': 3), spec=PartitionSpec('x',), memory_kind=device)"
    @test rows == Sharding(mesh3, "P('x',)")
    @test rows == NamedSharding(mesh3, "x")
    @test SPMD.kind(rows) == :named
    @test SPMD.kind(single_device(rt, 1)) == :single_device
    @test device_count(rows) == 3
    @test !is_fully_replicated(rows)
    @test is_fully_replicated(rep3)
    @test spec(rows) == P("x")
    @test mesh(rows) == mesh3
    @test string(single_device(rt, 0)) ==
          "SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)"
    info = shard_info(rows, (3, 8), 2)
    @test info.device == 1
    @test info.indices == (2:2, 1:8)
    @test size(info) == (1, 8)
    @test shard_info(rows, (3, 8); device=2).indices == (3:3, 1:8)
    @test visualize(rows, (3, 8)) == ROWS_PICTURE
    @test occursin("+", visualize(rows, (3, 8); ascii=true))
end

@testset "column-major arrays: a 3x8 Float32 matrix" begin
    x = device_put(A, rows)
    @test x isa ShardedArray{Float32,2}
    @test size(x) == (3, 8)
    @test length(x) == 24
    @test nbytes(x) == 96
    @test eltype(x) === Float32
    # Array gives A back: A[i, j] is element (i-1, j-1) of the global array.
    @test Array(x) == A
    @test Array(x)[2, 3] == 10f0  # jnp.arange(24.0).reshape(3, 8)[1, 2]
    # One process holds every shard: process_allgather is Array, and this
    # process's part of an array is all of it.
    @test is_fully_addressable(x)
    @test process_allgather(x) == Array(x) == A
    @test process_local_shape(rows, (3, 8)) == (3, 8)
    @test Array(make_array_from_process_local_data(rows, A)) == A
    @test Array(make_array_from_process_local_data(rows, A, (3, 8))) == A
    @test_throws SPMDError make_array_from_process_local_data(rows, A[1:2, :], (3, 8))
    # P('x') splits A's rows, one row per device.
    @test shard_count(x) == 3
    for i in 1:3
        info = shard_info(x, i)
        @test info.device == i - 1
        @test info.indices == (i:i, 1:8)
        @test shard_read(x, i) == A[i:i, :]
        @test A[info.indices...] == shard_read(x, i)
    end
    @test shard_info(x; device=1).indices == (2:2, 1:8)
    @test visualize(x) == ROWS_PICTURE
    # Reductions follow Julia's dims.
    @test Array(sum(x; dims=2)) == sum(A; dims=2)
    @test Array(sum(x; dims=1)) == sum(A; dims=1)
    @test Array(sum(x; dims=2, keepdims=false)) == vec(sum(A; dims=2))
    @test sum(x)[] == sum(A)
    @test repr(sum(x; dims=2, keepdims=false)) == "Array([ 28.,  92., 156.], dtype=float32)"
    @test string(sum(x; dims=2, keepdims=false)) == "[ 28.  92. 156.]"
    # arange builds the same row-major global array.
    @test Array(arange(Float32, rows, 3, 8)) == A
    # Shapes, slices and transposes are the global array's too.
    @test Array(x[2:3, 1:4]) == A[2:3, 1:4]
    @test Array(x[1:2:3, 2:3:8]) == A[1:2:3, 2:3:8]
    @test Array(dynamic_slice(x, (4, 0), (2, 1))) == A[2:3, 8:8]
    @test Array(x[:, 5:8]) == A[:, 5:8]
    @test Array(permutedims(x)) == permutedims(A)
    @test Array(transpose(x)) == permutedims(A)
    @test Array(reshape(x, 8, 3)) == reshape(A, 8, 3)
    @test Array(reshape(x, 4, :)) == reshape(A, 4, :)
    @test Array(reshape_rowmajor(x, 8, 3)) == permutedims(reshape(vec(permutedims(A)), 3, 8))
    @test Array(vcat(x, x)) == vcat(A, A)
    @test Array(hcat(x, x)) == hcat(A, A)
    # Other element types and ranks.
    v = device_put(Int32[1, 2, 3], rows)
    @test Array(v) == Int32[1, 2, 3]
    c = device_put(reshape(collect(Int64, 1:24), 2, 3, 4), rep3)
    @test Array(c) == reshape(collect(Int64, 1:24), 2, 3, 4)
    @test process_allgather(c) == Array(c)
    @test Array(device_put([true, false, true], rep3)) == [true, false, true]
    @test Float32.(Array(device_put(BFloat16.([1.5f0, -2.25f0]), rep3))) == [1.5f0, -2.25f0]
    s = device_put(3.5, rep3)
    @test ndims(s) == 0
    @test s[] == 3.5
    @test repr(device_put(276f0, rep3)) == "Array(276., dtype=float32)"
    # Device-side constructors, writes, resharding.
    @test Array(zeros(Float64, rows, 3, 2)) == zeros(3, 2)
    @test Array(fill(7f0, rows, 3, 2)) == fill(7f0, 3, 2)
    z = zeros(Float32, rows, 3, 8)
    shard_write!(z, 2, A[2:2, :])
    @test Array(z)[2, :] == A[2, :]
    @test Array(z)[1, :] == zeros(Float32, 8)
    shard_write!(z, 3, Float64.(A[3:3, :]))  # converted to Float32 on the way
    @test Array(z)[3, :] == A[3, :]
    r = reshard(x, rep3)
    @test Array(r) == A
    @test is_fully_replicated(sharding(r))
    y = device_put(x, Sharding(mesh3, P(nothing, "x")))
    @test Array(y) == A
    @test device(device_put(A, single_device(rt, 5))) == 5
    @test block_until_ready(x) === x
end

@testset "make_array_from_single_device_arrays" begin
    grid = Sharding(Mesh(rt, (2, 2), ("x", "y")), P("x", "y"))
    B = reshape(Float32.(1:24), 4, 6)
    # One single-device array per device holding its block, given in
    # reverse order: any order will do.
    infos = [shard_info(grid, size(B), i) for i in device_count(grid):-1:1]
    blocks = [device_put(B[info.indices...], single_device(rt, info.device)) for info in infos]
    @test all(device(b) == info.device for (b, info) in zip(blocks, infos))
    x = make_array_from_single_device_arrays(grid, size(B), blocks)
    @test x isa ShardedArray{Float32,2}
    @test sharding(x) == grid
    @test Array(x) == B
    @test Array(make_array_from_single_device_arrays(Float32, grid, size(B), Tuple(blocks))) == B
    # The blocks were copied: they stay the caller's and usable.
    @test Array(blocks[1]) == shard_read(x, 4) == B[infos[1].indices...]
    # One array short: libspmd refuses the count.
    e = error_of(() -> make_array_from_single_device_arrays(grid, size(B), blocks[1:3]))
    @test e isa SPMDError && e.status == LibSPMD.SPMD_ERR_INVALID_ARGUMENT
    @test occursin("count", e.message)
    @test_throws ArgumentError make_array_from_single_device_arrays(grid, size(B), ShardedArray[])
end

@testset "DLPack" begin
    s = Sharding(Mesh(rt, (4,), ("x",)), P("x"))
    x = device_put(Float32.(1:8), s)
    tensors = [shard_to_dlpack(x, i) for i in 1:shard_count(x)]
    devs = [shard_info(x, i).device for i in 1:shard_count(x)]
    # Refused: the caller keeps the tensors.
    e = error_of(() -> from_dlpack(Int32, s, (8,), devs, tensors))
    @test e isa SPMDError && occursin("tensors[0]: of float32", e.message)
    @test_throws ArgumentError from_dlpack(Float32, s, (8,), devs[1:1], tensors)
    # Adopted back without a copy: the same values.
    y = from_dlpack(Float32, s, (8,), devs, tensors)
    @test Array(y) == Float32.(1:8)
    e = error_of(() -> shard_to_dlpack(x, 9))
    @test e isa SPMDError && e.status == LibSPMD.SPMD_ERR_OUT_OF_RANGE
end

@testset "narrow integers: Int8, Int16, UInt16, UInt32 as JAX's" begin
    for v in (Int8[100, -2, 127, -128], Int16[1, -2, typemax(Int16), typemin(Int16)],
              UInt16[1, 2, typemax(UInt16), 4], UInt32[1, 2, typemax(UInt32), 0x80000000])
        x = device_put(v, rows)
        @test eltype(x) === eltype(v)
        @test Array(x) == v
    end
    @test SPMD.dtype_from_name("uint32") === UInt32
    @test SPMD.dtype_size(Int16) == 2
    i8 = device_put(Int8[100, -2, 127, -128], rows)
    u8 = device_put(UInt8[200, 2, 255, 0], rows)
    @test Array(i8 + i8) == Int8[-56, -4, -2, 0]          # wraps, as JAX's int8
    @test eltype(i8 + u8) === Int16                        # jnp.promote_types(int8, uint8)
    @test Array(i8 + u8) == Int16[300, 0, 382, -128]
    @test eltype(sum(u8)) === UInt32                       # jnp.sum of uint8
    @test Array(sum(u8))[] == 457
    @test Array(i8 + 300) == Int8[-112, 42, -85, -84]     # 300 becomes int8 44, as in JAX
    e = error_of(() -> i8 + 2^31)
    @test e isa SPMDError
    @test occursin("is outside int32", e.message)
end

@testset "global ops" begin
    x = device_put(A, rows)
    y = 2 .* sin.(x) .+ 1
    @test Array(y) ≈ 2 .* sin.(A) .+ 1
    @test sharding(y) == sharding(x)
    @test Array(x + x) == A + A
    @test Array(x - 1) == A .- 1
    @test Array(1 - x) == 1 .- A
    @test Array(3 * x) == 3 .* A
    @test Array(x * 3) == 3 .* A
    @test Array(x / 2) == A ./ 2
    @test Array(x .* x) == A .* A
    @test Array(x ./ (x .+ 1)) ≈ A ./ (A .+ 1)
    @test Array(x .^ 2) == A .^ 2
    @test Array(max.(x, 5f0)) == max.(A, 5f0)
    @test Array(min.(x, x .* 0)) == min.(A, A .* 0)
    @test Array(x .> 10) == (A .> 10)
    @test Array(x .== 3) == (A .== 3)
    @test Array(-x) == -A
    @test Array(abs(-x)) == A
    @test Array(exp(x / 10)) ≈ exp.(A ./ 10)
    @test Array(log(x .+ 1)) ≈ log.(A .+ 1)
    @test Array(sqrt(x)) ≈ sqrt.(A)
    @test Array(tanh(x / 10)) ≈ tanh.(A ./ 10)
    @test Array(cos.(x)) ≈ cos.(A)
    @test Array(rsqrt(x .+ 1)) ≈ 1 ./ sqrt.(A .+ 1)
    @test Array(relu(x .- 10)) == max.(A .- 10, 0)
    @test Array(sigmoid(x / 10)) ≈ 1 ./ (1 .+ exp.(-A ./ 10))
    g = A ./ 10
    @test Array(gelu(x / 10)) ≈ 0.5f0 .* g .* (1 .+ tanh.(sqrt(2f0 / π) .* (g .+ 0.044715f0 .* g .^ 3))) rtol=1e-5
    xi = astype(x, Int32)
    @test eltype(xi) === Int32
    @test Array(xi) == Int32.(A)
    @test Array(select(x .> 10, x, -x)) == ifelse.(A .> 10, A, -A)
    @test Array(ifelse.(x .> 10, x, -x)) == ifelse.(A .> 10, A, -A)
    @test Array(maximum(x; dims=2)) == maximum(A; dims=2)
    @test minimum(x)[] == minimum(A)
    @test Array(SPMD.mean(x; dims=1)) ≈ sum(A; dims=1) ./ 3
    B = Float32[mod(7i + 3j, 11) for i in 1:3, j in 1:8]
    @test Array(argmax(device_put(B, rows); dims=2)) == Int32[argmax(B[i, :]) for i in 1:3]
    @test Array(argmin(device_put(B, rows); dims=2)) == Int32[argmin(B[i, :]) for i in 1:3]
    @test Array(cumsum(device_put(B, rows); dims=2)) == cumsum(B; dims=2)
    @test Array(take(device_put(B, rows), device_put(Int32[7, 0], single_device(rt, 0)); dims=2)) == B[:, [8, 1]]
    U = Float32[10i + j for i in 1:3, j in 1:3]
    @test Array(scatter_add(device_put(B, rows), device_put(Int32[7, 0, -1], single_device(rt, 0)),
                            device_put(U, single_device(rt, 0)); dims=2)) ==
          B .+ hcat(U[:, 2], zeros(Float32, 3, 6), U[:, 1] .+ U[:, 3])
    @test Array(onehot(device_put(Int32[0, 2, 5], single_device(rt, 0)), 3, Int32)) == Int32[1 0 0; 0 0 1; 0 0 0]
    sm = exp.(A ./ 10) ./ sum(exp.(A ./ 10); dims=2)
    @test Array(softmax(x / 10; dims=2)) ≈ sm
    @test Array(logsoftmax(x / 10; dims=2)) ≈ log.(sm) rtol=1e-5
    W = Float32.(reshape(1:16, 8, 2))
    w = device_put(W, rep3)
    @test Array(x * w) ≈ A * W
    @test Array(matmul(x, w)) ≈ A * W
    @test Array(dot_general(x, w; contract=((2,), (1,)))) ≈ A * W
    @test Array(einsum("ij,jk->ik", x, w)) ≈ A * W
    @test Array(einsum("ij,jk,kl->il", x, w, device_put(Matrix(W'), rep3))) ≈ A * W * W'
    @test Array(einsum("ij->j", w)) ≈ vec(sum(W; dims=1))
    v = device_put(Float32.(1:8), rep3)
    @test Array(broadcast_to(v, 3, 8)) == repeat(reshape(Float32.(1:8), 1, 8), 3, 1)
    @test Array(x .+ v) == A .+ reshape(Float32.(1:8), 1, 8)  # NumPy's rule
    @test Array(concatenate([x, x, x]; dims=1)) == vcat(A, A, A)
    # out_sharding and donate.
    s1 = sum(x; dims=1, out_sharding=rep3)
    @test is_fully_replicated(sharding(s1))
    @test Array(s1) == sum(A; dims=1)
    d = device_put(A, rows)
    n = SPMD.unary(:neg, d; donate=true)
    @test Array(n) == -A
    e = error_of(() -> Array(d))
    @test e isa SPMDError && e.status == LibSPMD.SPMD_ERR_INVALID_ARGUMENT
    close(d)
    e = error_of(() -> x .+ device_put(zeros(Float32, 5), rep3))
    @test e isa SPMDError && occursin("(3, 8)", e.message)
    @test_throws ArgumentError identity.(x)  # not a libspmd op
end

@testset "random numbers" begin
    k = PRNGKey(0)
    @test k.words == (0x00000000, 0x00000000)
    @test PRNGKey((1 << 32) + 5).words == (0x00000001, 0x00000005)
    ks = split(k, 3)
    @test length(ks) == 3
    @test split(k, 2) == ks[1:2]
    @test split(k)[1].words == (0x6b200159, 0x99ba4efe)  # libspmd's split(PRNGKey(0))[0]
    @test fold_in(k, 1) != k
    @test fold_in(k, 1) == fold_in(k, 1)
    u = uniform(k, rows, Float32, 3, 8)
    U = Array(u)
    @test all(0 .<= U .< 1)
    @test U == Array(uniform(k, rep3, Float32, 3, 8))  # independent of the sharding
    @test Array(uniform(k, rows, Float32, 3, 8; minval=2, maxval=3)) ≈ U .+ 2 atol=1e-6
    Nn = Array(normal(ks[2], rows, Float64, 3, 100))
    @test all(isfinite, Nn)
    @test abs(sum(Nn) / length(Nn)) < 0.3
    T = Array(truncated_normal(ks[3], rows, Float32, 3, 100; lower=-1, upper=1))
    @test all(-1 .< T .< 1)
    b = random_bits(k, rows, UInt32, 3, 8)
    @test eltype(b) === UInt32
    @test eltype(random_bits(k, rows, UInt16, 3)) === UInt16
    @test Array(b) == Array(random_bits(k, rep3, UInt32, 3, 8))
    @test eltype(random_bits(k, rows, UInt8, 3)) === UInt8
end

@testset "shard_map" begin
    x = device_put(A, rows)
    # The notebook's psum: shard_map(lambda x: psum(x.sum(), 'x'), P('x'), P()).
    total = shard_map(mesh3, x, "x", "P()") do ctx
        psum(ctx, sum(input(ctx, 1)), "x")
    end
    @test total[] == 276f0
    @test repr(total) == "Array(276., dtype=float32)"
    @test string(sharding(total)) ==
          "NamedSharding(mesh=Mesh('x': 3), spec=PartitionSpec(), memory_kind=device)"
    # Blocks index like the global array; outputs from Julia arrays.
    doubled = shard_map(mesh3, x, P("x"), P("x")) do ctx
        b = input(ctx, 1)
        size(b) == (1, 8) || error("block of size $(size(b))")
        return Array(b) .* 2
    end
    @test Array(doubled) == 2 .* A
    # The device's id, axis index and size, input count, mesh; several outputs.
    ids, idx, sz = shard_map(mesh3, [x], [P("x")], (P("x"), P("x"), P("x"))) do ctx
        (fill(Float32(device_id(ctx)), 1, 1), fill(Int32(axis_index(ctx, "x")), 1),
         fill(Int64(axis_size(ctx, "x") * 10 + input_count(ctx) + length(mesh(ctx))), 1))
    end
    @test vec(Array(ids)) == Float32[0, 1, 2]
    @test Array(idx) == Int32[0, 1, 2]
    @test Array(sz) == fill(Int64(34), 3)
    # alloc and set_output, row-major memory through rowmajor().
    plus = shard_map(mesh3, x, P("x"), P("x")) do ctx
        b = input(ctx, 1)
        o = alloc(ctx, Float32, 1, 8)
        for j in 1:8
            o[1, j] = b[1, j] + 100
        end
        size(rowmajor(b)) == (8, 1) || error("rowmajor size")
        set_output(ctx, 1, o)
        print(ctx, "device ", device_id(ctx), " done")
        nothing
    end
    @test Array(plus) == A .+ 100
    # Collectives.
    gathered, mx, mn, mean_, scattered, shifted = shard_map(
            mesh3, x, P("x"), (P(), P(), P(), P(), P("x"), P("x"))) do ctx
        b = input(ctx, 1)
        g = all_gather(ctx, b, "x"; dims=1, tiled=true)
        (g, pmax(ctx, b, "x"), pmin(ctx, b, "x"), pmean(ctx, b, "x"),
         psum_scatter(ctx, g, "x"; dims=1, tiled=true),
         ppermute(ctx, b, "x", [0 => 1, 1 => 2, 2 => 0]))
    end
    @test Array(gathered) == A
    @test Array(mx) == A[3:3, :]
    @test Array(mn) == A[1:1, :]
    @test Array(mean_) ≈ sum(A; dims=1) ./ 3
    @test Array(scattered) == 3 .* A
    @test Array(shifted) == circshift(A, (1, 0))
    C = Float32[10i + j for i in 1:3, j in 1:6]
    c = device_put(C, rows)
    swapped = shard_map(mesh3, c, P("x"), P(nothing, "x")) do ctx
        all_to_all(ctx, input(ctx, 1), "x"; split_dims=2, concat_dims=1, tiled=true)
    end
    @test Array(swapped) == C
    stacked = shard_map(mesh3, x, P("x"), P()) do ctx
        all_gather(ctx, sum(input(ctx, 1)), ("x",))
    end
    @test Array(stacked) == vec(sum(A; dims=2))
end

# Runs a shard_map on a runtime's first two devices, checking the values read
# through the blocks, and returns the memory kinds of an input, an alloc'd
# block and a collective's result on each device, and whether every device
# saw a NULL stream.
function block_memory_kinds(r::Runtime)
    m = Mesh(r, (2,), ("x",))
    s = Sharding(m, P("x"))
    x = device_put(Float32[0, 1, 2, 3], s)
    kinds = Vector{Any}(nothing, 2)
    no_stream = fill(false, 2)
    sum_, doubled = shard_map(m, x, P("x"), (P(), P("x"))) do ctx
        i = axis_index(ctx, "x") + 1
        no_stream[i] = stream(ctx) == C_NULL  # host work is not queued
        b = input(ctx, 1)
        local_ = alloc(ctx, Float32)
        local_[] = sum(b)
        total = psum(ctx, local_, "x")
        kinds[i] = (memory_kind(b), memory_kind(local_), memory_kind(total))
        (total, Array(b) .* 2)  # a Julia array copied into a block
    end
    @test sum_[] == 6f0
    @test Array(doubled) == Float32[0, 2, 4, 6]
    foreach(close, (sum_, doubled, x, s, m))
    return kinds, no_stream
end

@testset "blocks say where their memory lies" begin
    kinds, no_stream = block_memory_kinds(rt)
    @test kinds == [(:host, :host, :host), (:host, :host, :host)]
    @test all(no_stream)
    # The sim platform's devices own memory the host cannot touch; its
    # functions get mapped memory, which blocks index.
    sim = Runtime(platform=:sim, devices=2, worker_threads=1)
    info = device_info(devices(sim)[1])
    @test info.memory_bytes == 0 && info.compute_capability == 0
    kinds, no_stream = block_memory_kinds(sim)
    @test kinds == [(:host_mapped, :host_mapped, :host_mapped),
                    (:host_mapped, :host_mapped, :host_mapped)]
    @test all(no_stream)
    close(sim)
end

@testset "a device block is never read as host memory" begin
    # A block made by hand over host memory that would read fine, saying it
    # is device memory: only the memory kind check can refuse it (no GPU).
    data = Float32[1, 2, 3, 4]
    GC.@preserve data begin
        raw = SPMD._initialised(LibSPMD.spmd_block_init, LibSPMD.spmd_block)[]
        raw = SPMD._with(raw; data=Ptr{Cvoid}(pointer(data)), dtype=LibSPMD.SPMD_F32, ndim=1,
                         shape=(Int64(4), ntuple(_ -> Int64(0), 7)...),
                         memory_kind=LibSPMD.SPMD_MEMORY_DEVICE)
        ctx = SPMD.ShardContext(Ptr{LibSPMD.spmd_ctx}(C_NULL), SPMD._Job(identity, 0), true)
        b = SPMD._block(ctx, raw, true, "the block of input 1")
        @test memory_kind(b) == :device
        @test pointer(b) == pointer(data)
        @test size(b) == (4,)
        for f in (() -> b[1], () -> (b[2] = 5f0), () -> rowmajor(b), () -> Array(b), () -> sum(b))
            e = error_of(f)
            @test e isa SPMDError
            @test e.status == LibSPMD.SPMD_ERR_INVALID_ARGUMENT
            @test occursin("the block of input 1 is device memory", e.message)
            @test occursin("stream(ctx)", e.message)
            @test occursin("SPMD_CALLBACK_MEMORY=mapped", e.message)
        end
        @test data == Float32[1, 2, 3, 4]
        # Host and mapped memory read as arrays; an unknown kind does not.
        for (kind, name) in ((LibSPMD.SPMD_MEMORY_HOST, :host),
                             (LibSPMD.SPMD_MEMORY_HOST_MAPPED, :host_mapped))
            h = SPMD._block(ctx, SPMD._with(raw; memory_kind=kind), true, "the block of input 1")
            @test memory_kind(h) == name
            @test Array(h) == data
        end
        u = SPMD._block(ctx, SPMD._with(raw; memory_kind=LibSPMD.SPMD_MEMORY_DEFAULT), false,
                        "the block of input 1")
        @test error_of(() -> u[1]) isa SPMDError
    end
end

@testset "persistent collectives" begin
    x = device_put(A, rows)
    g = Collective(:all_gather, rows, "x", Float32, 3, 8; dims=1, tiled=true)
    @test size(g) == (3, 8)
    @test ndims(g) == 2
    @test eltype(g) === Float32
    @test is_fully_replicated(output_sharding(g))
    @test Array(execute(g, x)) == A
    out = zeros(Float32, output_sharding(g), 3, 8)
    @test execute!(out, g, x) === out
    @test Array(out) == A
    p = Collective(:psum, rows, "x", Float32, 3, 8)
    @test size(p) == (1, 8)
    @test Array(execute(p, x)) == sum(A; dims=1)
    pp = Collective(:ppermute, rows, "x", Float32, 3, 8; pairs=[0 => 1, 1 => 2, 2 => 0])
    @test Array(execute(pp, x)) == circshift(A, (1, 0))
    e = error_of(() -> Collective(:psum_scatter, rows, "x", Float32, 3, 8))
    @test e isa SPMDError && e.status == LibSPMD.SPMD_ERR_UNSUPPORTED
    close(g); close(p); close(pp); close(out)
end

@testset "checkpoints" begin
    mktempdir() do tmp
        dir = joinpath(tmp, "checkpoint")  # made by save_checkpoint
        x = device_put(A, rows)
        @test save_checkpoint(x, dir) === nothing
        # Restored under another sharding, on another mesh: the saved element
        # type, size and values.
        grid = Mesh(rt, (2, 4), ("a", "b"))
        cols = Sharding(grid, P(nothing, "b"))
        y = load_checkpoint(cols, dir)
        @test y isa ShardedArray{Float32,2}
        @test size(y) == (3, 8)
        @test sharding(y) == cols
        @test Array(y) == A
        @test shard_read(y, 2) == A[:, 3:4]
        # A directory holds one checkpoint.
        e = error_of(() -> save_checkpoint(y, dir))
        @test e isa SPMDError
        @test e.status == LibSPMD.SPMD_ERR_INVALID_ARGUMENT
        @test occursin("already holds a checkpoint", e.message)
        # Nothing to load, or a path C would cut short.
        e = error_of(() -> load_checkpoint(cols, joinpath(dir, "missing")))
        @test e isa SPMDError && e.status == LibSPMD.SPMD_ERR_INVALID_ARGUMENT
        @test_throws ArgumentError load_checkpoint(cols, dir * "\0")
        foreach(close, (y, cols, grid, x))
    end
end

@testset "programs (experimental): record once, run many times" begin
    before = settled_handles()
    m24 = Mesh(rt, (2, 4), ("x", "y"))
    s = Sharding(m24, P("x", "y"))
    f(x) = 2 .* sin.(x) .+ 1               # the tour's f
    p = record(f, rt, [InputSpec(Float32, (8, 16), s)])
    @test p isa Program
    @test input_count(p) == 1 && output_count(p) == 1
    for seed in 1:2                       # two runs, two inputs
        X = Float32[3 * sin(7 * (16i + j) + 13seed) for i in 0:7, j in 0:15]
        x = device_put(X, s)
        y = p(x)
        want = f(x)                       # the same ops, eagerly
        @test y isa ShardedArray{Float32,2}
        @test size(y) == (8, 16)
        @test sharding(y) == sharding(want)
        @test reinterpret(UInt32, Array(y)) == reinterpret(UInt32, Array(want))  # bit for bit
        @test Array(y) ≈ 2 .* sin.(X) .+ 1
        foreach(close, (x, y, want))
    end
    text = sprint(show, p)
    @test occursin("program: 1 input, 1 output", text)
    @test occursin("fused into 1 pass", text)
    @test occursin("sin, mul, add in one pass per shard", text)

    # The arguments and every array made while f runs are closed by record;
    # reshard records a constraint; a tuple out, out_shardings.
    kept = ShardedArray[]
    cols = Sharding(m24, P(nothing, "y"))
    x = device_put(Float32.(reshape(1:128, 8, 16)) ./ 100, s)
    q = record(rt, x; out_shardings=(cols, nothing)) do v   # the spec taken from x
        @test size(v) == (8, 16) && eltype(v) === Float32
        @test error_of(() -> Array(v)) isa SPMDError      # no values
        tv = tanh.(v)
        rv = reshard(tv, replicated(m24))
        append!(kept, (v, tv, rv))
        (tv, rv)
    end
    @test all(!isopen, kept)
    # A shard_map inside record is refused: its function would run at every
    # run of the program, after record has returned.
    err = error_of(() -> record(rt, x) do v
        shard_map(c -> nothing, m24, v, P("x", "y"), P("x", "y"))
    end)
    @test err isa SPMDError && occursin("inside record", err.message)
    # A donated argument is consumed by the call.
    pd = record(f, rt, [InputSpec(Float32, (8, 16), s)]; donate=(1,))
    xd = device_put(Float32.(reshape(1:128, 8, 16)) ./ 100, s)
    yd = pd(xd)
    @test Array(yd) ≈ 2 .* sin.(Float32.(reshape(1:128, 8, 16)) ./ 100) .+ 1
    @test error_of(() -> Array(xd)) isa SPMDError
    foreach(close, (xd, yd, pd))
    t, r = q(x)
    @test sharding(t) == cols
    @test is_fully_replicated(sharding(r))
    @test Array(t) == Array(r) ≈ tanh.(Array(x))
    foreach(close, (t, r, cols))

    # Errors: a run's wrong input is named as libspmd counts, from 0; a bad
    # input spec; an op's own error from f; an output that is not a value.
    wrong = device_put(zeros(Float32, 8, 8), s)
    e = error_of(() -> p(wrong))
    @test e isa SPMDError && e.status == LibSPMD.SPMD_ERR_INVALID_ARGUMENT
    @test occursin("inputs[0]: float32[8,8] where the program was recorded with float32[8,16]", e.message)
    e = error_of(() -> p())
    @test e isa SPMDError && occursin("0 inputs for a program of 1", e.message)
    e = error_of(() -> record(identity, rt, [InputSpec(Float32, (8,), s)]))
    @test e isa SPMDError && startswith(e.message, "record: inputs[0]: ")
    e = error_of(() -> record((a, b) -> a .+ b, rt, [InputSpec(Float32, (8, 16), s), InputSpec(wrong)]))
    @test e isa SPMDError && occursin("do not broadcast", e.message)
    e = error_of(() -> record(v -> wrong, rt, [InputSpec(Float32, (8, 16), s)]))
    @test e isa SPMDError && startswith(e.message, "record: outputs[0]: ")
    @test error_of(() -> record(v -> (), rt, [InputSpec(Float32, (8, 16), s)])) isa ArgumentError
    @test isopen(wrong)                   # made before f ran: not record's
    close(p)
    close(p)
    e = error_of(() -> p(x))
    @test e isa SPMDError && occursin("not a live spmd_x_program", e.message)
    foreach(close, (q, x, wrong, s, m24))
    @test settled_handles() <= before
end

@testset "keys as arrays (experimental): draws from key data, recorded" begin
    before = settled_handles()
    m24 = Mesh(rt, (2, 4), ("x", "y"))
    s = Sharding(m24, P("x", "y"))
    rep = replicated(m24)
    k = fold_in(PRNGKey(42), 7)
    d = key_data(k, rep)
    @test d isa ShardedArray{UInt32,1}
    @test Array(d) == [k.words...]
    same(x, y) = reinterpret(UInt32, Array(x)) == reinterpret(UInt32, Array(y))  # bit for bit
    @test same(normal(d, s, Float32, 8, 4), normal(k, s, Float32, 8, 4))
    @test same(uniform(d, s, Float32, 8, 4; minval=-1, maxval=2),
               uniform(k, s, Float32, 8, 4; minval=-1, maxval=2))
    @test same(truncated_normal(d, s, Float32, 8, 4; lower=-0.5, upper=1),
               truncated_normal(k, s, Float32, 8, 4; lower=-0.5, upper=1))
    @test Array(random_bits(d, s, UInt32, 8, 4)) == Array(random_bits(k, s, UInt32, 8, 4))

    # A program of the key data draws from the key each call is given.
    p = record(rt, [InputSpec(UInt32, (2,), rep)]) do key
        normal(key, s, Float32, 8, 4)
    end
    runs = map(1:2) do step
        ks = fold_in(PRNGKey(0), step)
        y = p(key_data(ks, rep))
        @test same(y, normal(ks, s, Float32, 8, 4))
        Array(y)
    end
    @test runs[1] != runs[2]

    # A key that is not uint32[2] is named.
    e = error_of(() -> normal(device_put(Float32[0, 42], rep), s, Float32, 8, 4))
    @test e isa SPMDError && e.status == LibSPMD.SPMD_ERR_INVALID_ARGUMENT
    @test occursin("key: float32[2] where key data is uint32[2]", e.message)
    e = error_of(() -> random_bits(device_put(UInt32[0, 42, 7], rep), s, UInt32, 8))
    @test e isa SPMDError && occursin("key: uint32[3]", e.message)
    foreach(close, (p, d, s, rep, m24))
    @test settled_handles() <= before
end

@testset "keys as arrays (experimental): split and fold_in of key data, recorded" begin
    before = settled_handles()
    m24 = Mesh(rt, (2, 4), ("x", "y"))
    s = Sharding(m24, P("x", "y"))
    rep = replicated(m24)
    byx = Sharding(m24, P("x"))
    k = fold_in(PRNGKey(42), 7)
    same(x, y) = reinterpret(UInt32, Array(x)) == reinterpret(UInt32, Array(y))  # bit for bit
    # Key data derives key data as the key derives keys, laid out as the key data.
    for layout in (rep, byx)
        d = key_data(k, layout)
        ks = split(d, 3)
        @test ks isa Vector{ShardedArray{UInt32,1}} && length(ks) == 3
        @test [Array(x) for x in ks] == [[w.words...] for w in split(k, 3)]
        @test all(x -> sharding(x) == layout, ks)
        f = fold_in(d, 3)
        @test f isa ShardedArray{UInt32,1}
        @test Array(f) == [fold_in(k, 3).words...]
        @test sharding(f) == layout
        @test isempty(split(d, 0))
        foreach(close, (ks..., f, d))
    end

    # A program splits its key input in two, folds 3 into the second and
    # draws from each, as under jax.jit.
    p = record(rt, [InputSpec(UInt32, (2,), rep)]) do key
        k1, k2 = split(key, 2)
        (normal(k1, s, Float32, 8, 4),
         uniform(fold_in(k2, 3), s, Float32, 8, 4; minval=-1, maxval=2))
    end
    runs = map(1:2) do step
        ks = fold_in(PRNGKey(0), step)
        y, z = p(key_data(ks, rep))
        k1, k2 = split(ks, 2)
        @test same(y, normal(k1, s, Float32, 8, 4))
        @test same(z, uniform(fold_in(k2, 3), s, Float32, 8, 4; minval=-1, maxval=2))
        Array(y)
    end
    @test runs[1] != runs[2]

    # A key that is not uint32[2] is named.
    floats = device_put(Float32[0, 42], rep)
    e = error_of(() -> split(floats, 2))
    @test e isa SPMDError && e.status == LibSPMD.SPMD_ERR_INVALID_ARGUMENT
    @test occursin("key: float32[2] where key data is uint32[2]", e.message)
    e = error_of(() -> fold_in(floats, 3))
    @test e isa SPMDError && occursin("key: float32[2]", e.message)
    foreach(close, (p, floats, s, byx, rep, m24))
    @test settled_handles() <= before
end

@testset "bad input: SPMDError with the library's message, no leak" begin
    x = device_put(A, rows)
    before = settled_handles()
    # A bad spec.
    e = error_of(() -> Spec("x,,y"))
    @test e isa SPMDError
    @test e.status == LibSPMD.SPMD_ERR_INVALID_ARGUMENT
    @test occursin("spec 'x,,y': column 3", e.message)
    e = error_of(() -> Sharding(mesh3, "P('z')"))
    @test e isa SPMDError && occursin("mesh has no axis 'z'", e.message)
    e = error_of(() -> P("x", "x"))
    @test e isa SPMDError && e.status == LibSPMD.SPMD_ERR_INVALID_ARGUMENT
    # A wrong-size host array.
    z = zeros(Float32, rows, 3, 8)
    e = error_of(() -> shard_write!(z, 1, zeros(Float32, 2, 8)))
    @test e isa SPMDError
    @test occursin("shard 0 needs exactly 32", e.message)
    two_dims = Sharding(mesh3, "x, None")
    e = error_of(() -> device_put(Float32[1, 2, 3], two_dims))
    @test e isa SPMDError && occursin("names 2 dimensions but the array has 1", e.message)
    close(two_dims)
    close(z)
    # A use after close.
    y = device_put(A, rows)
    close(y)
    close(y)
    e = error_of(() -> Array(y))
    @test e isa SPMDError
    @test occursin("not a live spmd_array", e.message)
    # An exception inside a shard_map function.
    e = error_of(() -> shard_map(ctx -> error("boom on $(device_id(ctx))"), mesh3, x, "x", "x"))
    @test e isa SPMDError
    @test e.status == LibSPMD.SPMD_ERR_CALLBACK
    @test occursin("boom on", e.message)
    # An error the function reports through error(ctx, ...), with its status.
    e = error_of(() -> shard_map(mesh3, x, "x", "x") do ctx
        error(ctx, "no thanks"; status=LibSPMD.SPMD_ERR_OUT_OF_RANGE)
    end)
    @test e isa SPMDError
    @test e.status == LibSPMD.SPMD_ERR_OUT_OF_RANGE
    @test occursin("no thanks", e.message)
    # A function that returns what no output can be.
    e = error_of(() -> shard_map(ctx -> "text", mesh3, x, "x", "x"))
    @test e isa SPMDError && occursin("returned a String", e.message)
    # A block kept past its shard_map.
    kept = Ref{Any}(nothing)
    copied = shard_map(mesh3, x, "x", "x") do ctx
        device_id(ctx) == 0 && (kept[] = input(ctx, 1))
        input(ctx, 1)
    end
    @test Array(copied) == A
    close(copied)
    e = error_of(() -> kept[][1, 1])
    @test e isa SPMDError && occursin("after its function returned", e.message)
    kept[] = nothing
    # Nothing made since `before` is left open; a stale GC root of an earlier
    # testset's array may have gone meanwhile, so the count can only be lower.
    @test settled_handles() <= before
    close(x)
end

end # @testset
