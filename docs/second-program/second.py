# The second program: a 2x4 mesh, a sharded array, a sum, a matmul and a
# shard_map with a psum, each printed with its sharding.
#   XLA_FLAGS=--xla_force_host_platform_device_count=8 python second.py
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ('x', 'y'))
a = jax.device_put(jnp.arange(32.0).reshape(4, 8), NamedSharding(mesh, P('x', 'y')))
print(a.sharding)

s = a.sum(axis=1)
print(s)
print(s.sharding)

m = a @ a.T
print(m)
print(m.sharding)

def block_sum(block):
    return jax.lax.psum(block.sum(), ('x', 'y'))

t = jax.shard_map(block_sum, mesh=mesh, in_specs=P('x', 'y'), out_specs=P())(a)
print(t)
print(t.sharding)
