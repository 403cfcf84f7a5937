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
normal = jax.jit(lambda k: jax.random.normal(k, (big,), jnp.float32),
                 out_shardings=NamedSharding(mesh, P("x")))
t = timed(normal, jax.random.PRNGKey(0))
print(f"{'random normal f32 16 M elements':34s} {1e3 * t:10.3f} ms {64 * 2**20 / t / 1e9:10.2f} GB/s")
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

# The seed Layer (Attention + MLP, tensor-parallel weights) on the 2x2
# ('data', 'model') mesh at the notebook's size, as libspmd's global ops
# write it.
mesh22 = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ("data", "model"))


def put22(a, *spec):
    return jax.device_put(a, NamedSharding(mesh22, P(*spec)))


hid, heads = 1024, 16
key = jax.random.PRNGKey(0)
ks = jax.random.split(key, 7)
x = put22(jax.random.normal(ks[0], (2, 128, hid)), "data", None, None)
col = [put22(jax.random.normal(k, (hid, hid)) / 32, None, "model") for k in ks[1:4]]
wo = put22(jax.random.normal(ks[4], (hid, hid)) / 32, "model", None)
w1 = put22(jax.random.normal(ks[5], (hid, 4 * hid)) / 32, None, "model")
w2 = put22(jax.random.normal(ks[6], (4 * hid, hid)) / 64, "model", None)


@jax.jit
def layer(x, wq, wk, wv, wo, w1, w2):
    b, s, h = x.shape
    def heads_of(t):
        return t.reshape(b, s, heads, h // heads).transpose(0, 2, 1, 3)
    q = heads_of(jnp.einsum("bsh,hk->bsk", x, wq) / np.sqrt(h).astype(np.float32))
    k = heads_of(jnp.einsum("bsh,hk->bsk", x, wk))
    v = heads_of(jnp.einsum("bsh,hk->bsk", x, wv))
    p = jax.nn.softmax(jnp.einsum("bhqd,bhkd->bhqk", q, k), axis=-1)
    o = jnp.einsum("bhqk,bhkd->bhqd", p, v).transpose(0, 2, 1, 3).reshape(b, s, h)
    y = x + jnp.einsum("bsh,hk->bsk", o, wo)
    return y + jnp.einsum("bsh,hk->bsk", jax.nn.relu(jnp.einsum("bsh,hk->bsk", y, w1)), w2)


t = timed(layer, x, *col, wo, w1, w2)
print(f"{'Layer (2,128,1024) jit':34s} {1e3 * t:10.3f} ms (median of {iters})")

# One data-parallel training step of the autoparallelism notebook's MLP
# (4 -> 32 -> 4, relu, mean squared error, optax.adam), batch 32 split over
# 8 devices, parameters replicated.
import optax

params = {"w0": jnp.ones((32, 4)) * 0.1, "b0": jnp.zeros(32), "w1": jnp.ones((4, 32)) * 0.1,
          "b1": jnp.zeros(4)}
params = jax.device_put(params, NamedSharding(mesh, P()))
opt = optax.adam(3e-4)
state = opt.init(params)
xb = put(np.random.default_rng(0).normal(size=(32, 4)).astype(np.float32), "x", None)
yb = jnp.sin(xb)


def loss_fn(p, x, y):
    h = jax.nn.relu(x @ p["w0"].T + p["b0"])
    return jnp.mean((y - (h @ p["w1"].T + p["b1"])) ** 2)


@jax.jit
def train_step(p, s, x, y):
    loss, g = jax.value_and_grad(loss_fn)(p, x, y)
    u, s = opt.update(g, s)
    return optax.apply_updates(p, u), s, loss


for _ in range(10):
    params, state, loss = train_step(params, state, xb, yb)
ts = []
for _ in range(200):
    t0 = time.perf_counter()
    params, state, loss = train_step(params, state, xb, yb)
    loss.block_until_ready()
    ts.append(time.perf_counter() - t0)
print(f"{'training step jit':34s} {1e3 * statistics.median(ts):10.3f} ms (median of 200)")
