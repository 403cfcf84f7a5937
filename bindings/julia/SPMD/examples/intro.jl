# The first seed notebook end to end, printing each cell as the C tour
# (examples/c/tour.c) prints it: a header of the Python it reproduces, then
# what the notebook shows. bindings/gen/check_example_output.py compares the
# two (CTest binding_julia_example).
#
#   JULIA_SPMD_LIBRARY=build/src/libspmd.so \
#       julia --project=bindings/julia/SPMD bindings/julia/SPMD/examples/intro.jl

using SPMD

cell(python) = print("\n>>> ", python, "\n")

println("libspmd ", SPMD.version(), " Julia intro")
rt = Runtime()  # the default platform, cpu: 8 virtual devices

println("\n=== Device parallelism for SPMD ===")
cell("jax.devices()")
println("[", join(string.(devices(rt)), ", "), "]")

cell("mesh = jax.make_mesh((3,), ('x',))\n" *
     "... sharding = jax.sharding.NamedSharding(mesh, PartitionSpec('x',)); print(sharding)")
mesh_x = Mesh(rt, (3,), ("x",))
rows = Sharding(mesh_x, P("x"))
println(rows)

cell("arr = jnp.arange(24.0).reshape(3, 8); arr.shape")
# The notebook's arr is row-major: row i holds 8(i-1), ..., 8(i-1)+7. The
# Julia matrix with those rows (A[i, j] is arr[i-1, j-1]):
A = permutedims(reshape(Float32.(0:23), 8, 3))
arr = device_put(A, single_device(rt, 0))
println(size(arr))

cell("arr_sharded = jax.device_put(arr, sharding); arr_sharded.sharding")
arr_sharded = device_put(arr, rows)
println(sharding(arr_sharded))

cell("jax.debug.visualize_array_sharding(arr_sharded)")
print(visualize(arr_sharded))

cell("@jax.jit\n... def f(x):\n...     return 2 * jnp.sin(x) + 1\n" *
     "... result = f(arr_sharded); jax.debug.visualize_array_sharding(result)")
f(x) = 2 .* sin.(x) .+ 1
result = f(arr_sharded)
print(visualize(result))

cell("arr_sharded.sharding == result.sharding")
println(sharding(arr_sharded) == sharding(result) ? "True" : "False")

cell("@jax.jit\n... def f(x):\n...     return x.sum(axis=0)\n" *
     "... result = f(arr_sharded); jax.debug.visualize_array_sharding(result)")
result = sum(arr_sharded; dims=1, keepdims=false)  # JAX's axis=0 is Julia's dims=1
print(visualize(result))

cell("arr.sum(axis=1)")
println(repr(sum(arr; dims=2, keepdims=false)))

cell("@jax.jit\n... def f(x):\n...     return x.sum(axis=1)\n" *
     "... result = f(arr_sharded); jax.debug.visualize_array_sharding(result)")
result = sum(arr_sharded; dims=2, keepdims=false)
print(visualize(result))

println("\n=== Manual partitioning with shard_map ===")
cell("def f(x):\n" *
     "...     sum_in_shard = x.sum()\n" *
     "...     return jax.lax.psum(sum_in_shard, 'x')\n" *
     "... result = shard_map(f, mesh=mesh, in_specs=PartitionSpec('x'),\n" *
     "...                    out_specs=PartitionSpec())(arr_sharded)\n" *
     "... result")
result = shard_map(mesh_x, arr_sharded, P("x"), P()) do ctx
    # On each device: the sum of its (1, 8) block, then psum over 'x'.
    psum(ctx, sum(input(ctx, 1)), "x")
end
println(repr(result))

cell("result.sharding")
println(sharding(result))

foreach(close, (result, arr_sharded, arr, rows, mesh_x, rt))
