"""The work of spmd-ops-bench in JAX on 8 CPU devices, printed the same way.

Run with XLA_FLAGS=--xla_force_host_platform_device_count=8 (the
ops-bench-vs-jax.sh script sets it)."""
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

iters = int(sys.argv[1]) if len(sys.argv) > 1 else 10
mesh = Mesh(np.array(jax.devices()[:8]), ("x",))


def put(a, *spec):
    return jax.device_put(a, NamedSharding(mesh, P(*spec)))


def timed(f, *args, n=iters, warm=2):
    for _ in range(warm):
        f(*args).block_until_ready()
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        f(*args).block_until_ready()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


big = 16 << 20
h = ((np.arange(big) * 7) % 13 - 6).astype(np.float32)
a, b = put(h, "x"), put(0.5 * h, "x")
t = timed(jax.jit(lambda u, v: u + v), a, b)
print(f"{'add f32 64 MiB (read+write)':34s} {1e3 * t:10.3f} ms {3 * 64 * 2**20 / t / 1e9:10.2f} GB/s")
t = timed(jax.jit(lambda u: 2 * jnp.sin(u) + 1), a)
print(f"{'2*sin(x)+1 f32 16 M elements':34s} {1e3 * t:10.3f} ms {big / t / 1e9:10.2f} G elem/s")
x, y = put(np.ones(8, np.float32), "x"), put(np.ones(8, np.float32), "x")
t = timed(jax.jit(lambda u, v: u + v), x, y, n=2000, warm=100)
print(f"{'tiny add, 8 devices':34s} {1e6 * t:10.2f} us (median of 2000)")
n = 2048
m = ((np.arange(n * n) % 17 - 8) / 8).astype(np.float32).reshape(n, n)
mm = jax.jit(lambda u, v: u @ v)
for name, sa, sb in [("matmul 2048^3 batch-sharded", ("x", None), ()),
                     ("matmul 2048^3 contraction-sharded", (None, "x"), ("x", None))]:
    t = timed(mm, put(m, *sa), put(m, *sb))
    print(f"{name:34s} {1e3 * t:10.3f} ms {2 * n**3 / t / 1e9:10.2f} GFLOP/s")
