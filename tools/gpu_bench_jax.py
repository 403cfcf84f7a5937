#!/usr/bin/env python3
"""The single-device work of spmd-gpu-bench, in JAX on the same GPU.

A device copy of 1 GiB, x + y on two 1 GiB f32 operands, a bf16 matmul of
8192 x 8192 by 8192 x 8192, and the host time per tiny op (8 x 8 f32 adds
queued, then one wait). Collectives need several devices and are left out.
Each figure is timed with block_until_ready: medians of ITERS repetitions
after WARMUPS, (slowest .. fastest) beside them, in spmd-gpu-bench's units,
and as "RESULT key value unit" lines, which tools/gpu-check.sh sets beside
spmd-gpu-bench's.

usage: gpu_bench_jax.py [ITERS] [WARMUPS]
"""
import os
import statistics
import sys
import time

# Allocate as needed, as libspmd does, instead of 75% of the GPU up front.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

GIB = 1 << 30


def timed(fn, iters, warmups):
    """(min, median, max) seconds of fn() and a wait for its result."""
    times = []
    for i in range(warmups + iters):
        t0 = time.perf_counter()
        out = fn()
        jax.block_until_ready(out)
        t = time.perf_counter() - t0
        del out
        if i >= warmups:
            times.append(t)
    times.sort()
    return times[0], statistics.median(times), times[-1]


def rate(name, work, spread, scale, unit, key):
    lo, med, hi = spread
    value = work / med / scale
    print(f"{name:<44} {1e3 * med:10.3f} ms {value:10.2f} {unit:<8} "
          f"({work / hi / scale:.2f} .. {work / lo / scale:.2f})")
    print(f"RESULT {key} {value:.2f} {unit}")
    return value


def figure(name, run):
    """Runs one figure; a failure is printed and the others still run."""
    try:
        return run()
    except Exception as e:  # the figure's failure, whatever it is
        print(f"  FAILED: {name}: {type(e).__name__}: {e}")
        return 0.0
    finally:
        sys.stdout.flush()


def main():
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    warmups = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    if not gpus:
        print(f"JAX {jax.__version__} sees no GPU: {jax.devices()}")
        return 1
    dev = gpus[0]
    print(f"# JAX {jax.__version__} on {dev.device_kind} ({dev}), one device; "
          f"{iters} repetitions after {warmups} warm-ups; medians, (slowest .. fastest)")

    def copy():
        x = jax.device_put(jnp.ones((GIB // 4,), jnp.float32), dev)
        f = jax.jit(jnp.copy)
        return rate("copy 1024 MiB (read+write), jit(jnp.copy)", 2.0 * GIB,
                    timed(lambda: f(x), iters, warmups), 1e9, "GB/s", "copy_gbs")

    def add():
        x = jax.device_put(jnp.full((GIB // 4,), 1.0, jnp.float32), dev)
        y = jax.device_put(jnp.full((GIB // 4,), 2.0, jnp.float32), dev)
        f = jax.jit(lambda a, b: a + b)
        z = f(x, y)
        if float(z[0]) != 3.0:
            print(f"  WRONG: 1 + 2 gave {float(z[0])}")
        del z
        return rate("jit(x + y) f32 (2 reads + 1 write)", 3.0 * GIB,
                    timed(lambda: f(x, y), iters, warmups), 1e9, "GB/s", "add_gbs")

    def total():
        x = jax.device_put(jnp.full((GIB // 4,), 0.5, jnp.float32), dev)
        f = jax.jit(jnp.sum)
        got = float(f(x))
        if got != 0.5 * (GIB // 4):
            print(f"  WRONG: sum {got}, want {0.5 * (GIB // 4)}")
        return rate("jit(jnp.sum) f32 to one value (reads)", 1.0 * GIB,
                    timed(lambda: f(x), iters, warmups), 1e9, "GB/s", "sum_gbs")

    def matmul():
        n = 8192
        idx = jnp.arange(n * n, dtype=jnp.int32)
        a = jax.device_put(((idx * 7 % 17 - 8) / 8.0).astype(jnp.bfloat16).reshape(n, n), dev)
        b = jax.device_put((((idx * 7 + 5) % 17 - 8) / 8.0).astype(jnp.bfloat16).reshape(n, n), dev)
        f = jax.jit(lambda p, q: p @ q)
        return rate(f"jit(a @ b) bf16 {n}^3", 2.0 * n ** 3,
                    timed(lambda: f(a, b), iters, warmups), 1e12, "TFLOP/s", "matmul_tflops")

    def dispatch():
        ops = 1000
        x = jax.device_put(jnp.ones((8, 8), jnp.float32), dev)
        y = jax.device_put(jnp.full((8, 8), 2.0, jnp.float32), dev)
        f = jax.jit(lambda a, b: a + b)
        jax.block_until_ready(f(x, y))
        per_op = []
        for i in range(warmups + iters):
            t0 = time.perf_counter()
            for _ in range(ops):
                z = f(x, y)
            z.block_until_ready()
            if i >= warmups:
                per_op.append((time.perf_counter() - t0) / ops)
        per_op.sort()
        med = statistics.median(per_op)
        print(f"{'tiny add, queued then one wait':<44} {1e6 * med:10.2f} us per op "
              f"({1e6 * per_op[0]:.2f} .. {1e6 * per_op[-1]:.2f})")
        print(f"RESULT tiny_add_us {1e6 * med:.2f} us")
        return med

    copy_gbs = figure("copy", copy)
    add_gbs = figure("add", add)
    if copy_gbs > 0 and add_gbs > 0:
        print(f"RESULT add_ratio {add_gbs / copy_gbs:.3f} of copy")
    sum_gbs = figure("sum", total)
    if copy_gbs > 0 and sum_gbs > 0:
        print(f"RESULT sum_ratio {sum_gbs / copy_gbs:.3f} of copy")
    figure("matmul", matmul)
    figure("dispatch", dispatch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
