"""The Attention + MLP `Layer` of the tensor-parallelism notebook (flax
nnx, column-parallel Wq/Wk/Wv/W1 and row-parallel Wo/W2 on a 2x2
('data', 'model') mesh), computed by JAX so libspmd's example can be checked
against the same numbers: the notebook's size and a scaled-down copy.

Writes tests/conformance/layer/cases.json, "cases": one entry per size:
  mesh          {"shape", "axis_names", "devices"}
  hidden, heads, x_shape
  x             {"normal_key": 0, "summary"}: X = jax.random.normal(PRNGKey(0),
                x_shape), put on P('data', None)
  weights       name -> {"shape", "spec", "fold_in", "fan_in", "summary"}:
                nnx.Rngs(0) draws kernel i from fold_in(PRNGKey(0), i) with
                kaiming_normal (a truncated normal on (-2, 2) times
                sqrt(2 / fan_in) / 0.87962566103423978); the summary lets the
                C side check that it regenerated the same weights
  output        the Layer's output, in full ("hex") when small, else a summary
                (sums in float64, samples [flat index, value])
  text          "picture": visualize_array_sharding(y.reshape(2, -1)),
                "sharding": str(y.sharding) in the seeds' form
  tolerance     absolute tolerance for elements; sums are compared with
                tolerance * sqrt(size)
"""

from __future__ import annotations

import pathlib

import refio


def _layer_case(hidden: int, heads: int, x_shape, full_output: bool) -> dict:
    """The notebook's cell, verbatim apart from the sizes."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from flax import nnx
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    def linear(i, o, spec, rngs):
        return nnx.Linear(in_features=i, out_features=o, use_bias=False,
                          kernel_init=nnx.with_partitioning(
                              nnx.initializers.kaiming_normal(), spec),
                          rngs=rngs)

    class Attention(nnx.Module):
        def __init__(self, hidden_dim, num_heads, rngs):
            self.num_heads = num_heads
            self.Wq = linear(hidden_dim, hidden_dim, PartitionSpec(None, "model"), rngs)
            self.Wk = linear(hidden_dim, hidden_dim, PartitionSpec(None, "model"), rngs)
            self.Wv = linear(hidden_dim, hidden_dim, PartitionSpec(None, "model"), rngs)
            self.Wo = linear(hidden_dim, hidden_dim, PartitionSpec("model", None), rngs)

        def __call__(self, x):
            bsz, seq_len, hidden_dim = x.shape
            q, k, v = self.Wq(x), self.Wk(x), self.Wv(x)
            q = q.reshape(bsz, seq_len, self.num_heads, -1).transpose(0, 2, 1, 3)
            k = k.reshape(bsz, seq_len, self.num_heads, -1).transpose(0, 2, 1, 3)
            v = v.reshape(bsz, seq_len, self.num_heads, -1).transpose(0, 2, 1, 3)
            q *= 1 / jnp.sqrt(hidden_dim)
            scores = jnp.einsum("bhqd, bhkd -> bhqk", q, k)
            scores = jax.nn.softmax(scores, axis=-1)
            out = jnp.einsum("bhqk, bhkd -> bhqd", scores, v)
            out = out.transpose(0, 2, 1, 3).reshape(bsz, seq_len, -1)
            return self.Wo(out)

    class MLP(nnx.Module):
        def __init__(self, hidden_dim, rngs):
            self.W1 = linear(hidden_dim, hidden_dim * 4, PartitionSpec(None, "model"), rngs)
            self.W2 = linear(hidden_dim * 4, hidden_dim, PartitionSpec("model", None), rngs)

        def __call__(self, x):
            return self.W2(nnx.relu(self.W1(x)))

    class Layer(nnx.Module):
        def __init__(self, hidden_dim, num_heads, rngs):
            self.attention = Attention(hidden_dim, num_heads, rngs)
            self.mlp = MLP(hidden_dim, rngs)

        def __call__(self, x):
            x = x + self.attention(x)
            x = x + self.mlp(x)
            return x

    mesh = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), axis_names=("data", "model"))
    rngs = nnx.Rngs(0)
    # The notebook's `with mesh:`; newer flax wants the mesh set explicitly
    # before it creates sharded variables.
    context = jax.set_mesh(mesh) if hasattr(jax, "set_mesh") else mesh
    with context:
        X = jax.random.normal(jax.random.PRNGKey(0), x_shape)
        X = jax.device_put(X, NamedSharding(mesh, PartitionSpec("data", None)))
        layer = Layer(hidden_dim=hidden, num_heads=heads, rngs=rngs)
        model = nnx.jit(layer)
        y = model(X)
        picture = refio.picture(y.reshape(2, -1))

    kernels = [("Wq", layer.attention.Wq, ["None", "model"]),
               ("Wk", layer.attention.Wk, ["None", "model"]),
               ("Wv", layer.attention.Wv, ["None", "model"]),
               ("Wo", layer.attention.Wo, ["model", "None"]),
               ("W1", layer.mlp.W1, ["None", "model"]),
               ("W2", layer.mlp.W2, ["model", "None"])]
    weights = {}
    for i, (name, lin, spec) in enumerate(kernels):
        w = np.asarray(lin.kernel[...])
        weights[name] = {"shape": list(w.shape), "spec": spec, "fold_in": i,
                         "fan_in": int(w.shape[0]), "summary": refio.array_summary(w)}
    return {
        "mesh": {"shape": [2, 2], "axis_names": ["data", "model"], "devices": [0, 1, 2, 3]},
        "hidden": hidden, "heads": heads, "x_shape": list(x_shape),
        "x": {"normal_key": 0, "summary": refio.array_summary(X)},
        "weights": weights,
        "output": refio.array_hex(y) if full_output else refio.array_summary(y),
        "text": {"picture": picture, "sharding": refio.seed_form(str(y.sharding))},
        "tolerance": 5e-5 if full_output else 1e-4,
    }


def generate(out_dir: pathlib.Path) -> None:
    cases = {
        "attention_mlp_layer_small_2x2": _layer_case(32, 4, (2, 8, 32), full_output=True),
        "attention_mlp_layer_2x2": _layer_case(1024, 16, (2, 128, 1024), full_output=False),
    }
    refio.write_json(out_dir / "cases.json", {"cases": [dict(name=k, **v) for k, v in
                                                        sorted(cases.items())]})
