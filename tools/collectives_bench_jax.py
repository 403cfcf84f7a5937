"""spmd-bench's collectives in JAX on 8 CPU devices: shard_map over one
mesh axis 'x', the same sizes counted the nccl-tests way as spmd-bench
counts them, median wall time of jitted calls; prints algbw in GB/s.

usage: XLA_FLAGS=--xla_force_host_platform_device_count=8 \\
       python tools/collectives_bench_jax.py [ITERS]"""
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

try:
    from jax import shard_map
except ImportError:  # older JAX
    from jax.experimental.shard_map import shard_map

iters = int(sys.argv[1]) if len(sys.argv) > 1 else 10
n = 8
mesh = Mesh(np.array(jax.devices()[:n]), ("x",))


def program(op):
    if op == "all_reduce":
        return lambda b: jax.lax.psum(b, "x"), P("x"), P("x")
    if op == "all_gather":
        return lambda b: jax.lax.all_gather(b, "x", tiled=True), P("x"), P()
    return lambda b: jax.lax.psum_scatter(b, "x", tiled=True), P("x"), P("x")


print(f"{'size(B)':>12} {'collective':>15} {'median(us)':>11} {'algbw':>8}")
for op in ("all_gather", "all_reduce", "reduce_scatter"):
    size = 1 << 20
    while size <= 64 << 20:
        elems = size // 4
        # Per-device buffer as spmd-bench counts it: all_reduce and
        # reduce_scatter one device's input, all_gather the gathered result.
        per_device = elems // n if op == "all_gather" else elems
        f, spec_in, spec_out = program(op)
        try:
            sm = shard_map(f, mesh=mesh, in_specs=spec_in, out_specs=spec_out, check_vma=False)
        except TypeError:  # older JAX: check_rep
            sm = shard_map(f, mesh=mesh, in_specs=spec_in, out_specs=spec_out, check_rep=False)
        g = jax.jit(sm)
        x = jax.device_put(jnp.ones((n * per_device,), jnp.float32), NamedSharding(mesh, spec_in))
        for _ in range(3):
            g(x).block_until_ready()
        ts = []
        for _ in range(iters):
            t0 = time.perf_counter()
            g(x).block_until_ready()
            ts.append(time.perf_counter() - t0)
        t = statistics.median(ts)
        print(f"{size:>12} {op:>15} {1e6 * t:>11.1f} {size / t / 1e9:>8.2f}")
        size *= 2
