"""The Equinox data-parallel training run of the autoparallelism notebook
(eqx.nn.MLP(4, 4, 32, depth=1), Adam with learning rate 3e-4, batches of 16
split over 8 devices, replicated parameters), computed by JAX so libspmd's
training example can be checked step by step against the same numbers.

Writes tests/conformance/training/cases.json:
  mesh          {"shape", "axis_names", "devices"}
  data          xs, ys (float32, (64, 4)): np.random.seed(0), then
                xs = np.random.normal(size=(64, 4)), ys = sin(xs)
  params        the initial parameters (key PRNGKey(6789)), in full:
                layer0_weight (32, 4), layer0_bias (32,), layer1_weight
                (4, 32), layer1_bias (4,); weights are (out, in)
  batches       the index rows of every step's batch as the notebook's
                train_dataloader drew them (uint8, (steps, 16))
  losses        each step's batch loss, before that step's update
  eval_after    [{"steps": n, "loss"}]: the notebook's printed "train loss"
                (mean of compute_loss over the 4 batches of 16) after n steps
  final_params  the parameters after the last step, in full
  tolerance     {"loss_rel", "param_abs"}
"""

from __future__ import annotations

import pathlib

import refio

TRAIN_STEPS = 300
SEED_STEPS = 10  # num_steps in the notebook


def _training_case() -> dict:
    import equinox as eqx
    import jax
    import jax.numpy as jnp
    import jax.random as jr
    import numpy as np
    import optax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    dataset_size, channel_size, hidden_size, depth = 64, 4, 32, 1
    learning_rate, batch_size = 3e-4, 16

    np.random.seed(0)
    xs = np.random.normal(size=(dataset_size, channel_size))
    ys = np.sin(xs)

    model = eqx.nn.MLP(channel_size, channel_size, hidden_size, depth, key=jr.PRNGKey(6789))
    optim = optax.adam(learning_rate)
    opt_state = optim.init(eqx.filter(model, eqx.is_inexact_array))

    def params_of(m) -> dict:
        return {"layer0_weight": refio.array_hex(np.asarray(m.layers[0].weight)),
                "layer0_bias": refio.array_hex(np.asarray(m.layers[0].bias)),
                "layer1_weight": refio.array_hex(np.asarray(m.layers[1].weight)),
                "layer1_bias": refio.array_hex(np.asarray(m.layers[1].bias))}

    initial = params_of(model)

    def compute_loss(model, x, y):
        pred_y = jax.vmap(model)(x)
        return jnp.mean((y - pred_y) ** 2)

    def train_dataloader(arrays, batch_size):
        n = arrays[0].shape[0]
        indices = np.arange(n)
        while True:
            perm = np.random.permutation(indices)
            start, end = 0, batch_size
            while end <= n:
                yield perm[start:end]
                start = end
                end = start + batch_size

    # The notebook's PositionalSharding over create_device_mesh((8, 1)) is
    # NamedSharding(Mesh(8 devices), P('x')): the batch split over 8.
    mesh = Mesh(np.array(jax.devices()), ("x",))
    sharding = NamedSharding(mesh, P("x"))
    replicated = NamedSharding(mesh, P())

    @eqx.filter_jit(donate="all")
    def train_step(model, opt_state, x, y):
        model, opt_state = eqx.filter_shard((model, opt_state), replicated)
        x, y = eqx.filter_shard((x, y), sharding)
        loss, grads = eqx.filter_value_and_grad(compute_loss)(model, x, y)
        updates, opt_state = optim.update(grads, opt_state)
        model = eqx.apply_updates(model, updates)
        model, opt_state = eqx.filter_shard((model, opt_state), replicated)
        return model, opt_state, loss

    @eqx.filter_jit
    def evaluate(model, x, y):
        model = eqx.filter_shard(model, replicated)
        x, y = eqx.filter_shard((x, y), sharding)
        return compute_loss(model, x, y)

    def eval_loss(model) -> float:
        loss, batches = 0.0, 0
        for start in range(0, dataset_size, batch_size):
            x = jnp.asarray(xs[start:start + batch_size], jnp.float32)
            y = jnp.asarray(ys[start:start + batch_size], jnp.float32)
            loss = loss + evaluate(model, x, y).item()
            batches += 1
        return loss / batches

    model = eqx.filter_shard(model, replicated)
    batches, losses, evals = [], [], []
    loader = train_dataloader((xs, ys), batch_size)
    for step in range(1, TRAIN_STEPS + 1):
        idx = next(loader)
        batches.append(idx)
        x = jnp.asarray(xs[idx], jnp.float32)
        y = jnp.asarray(ys[idx], jnp.float32)
        x, y = eqx.filter_shard((x, y), sharding)
        model, opt_state, loss = train_step(model, opt_state, x, y)
        losses.append(float(loss))
        if step in (SEED_STEPS, TRAIN_STEPS):
            evals.append({"steps": step, "loss": eval_loss(model)})

    return {
        "mesh": {"shape": [8], "axis_names": ["x"], "devices": list(range(8))},
        "learning_rate": learning_rate, "batch_size": batch_size,
        "adam": {"b1": 0.9, "b2": 0.999, "eps": 1e-8},
        "data": {"xs": refio.array_hex(np.asarray(xs, np.float32)),
                 "ys": refio.array_hex(np.asarray(ys, np.float32))},
        "params": initial,
        "batches": refio.array_hex(np.asarray(batches, np.uint8)),
        "losses": losses,
        "eval_after": evals,
        "final_params": params_of(model),
        "tolerance": {"loss_rel": 1e-4, "param_abs": 1e-5},
    }


def generate(out_dir: pathlib.Path) -> None:
    refio.write_json(out_dir / "cases.json",
                     dict(name="equinox_data_parallel_mlp", **_training_case()))
