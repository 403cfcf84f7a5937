"""The seeds end to end: the shard_map cells of the seed notebooks run by
JAX, with their inputs and outputs, so libspmd's examples can load the same
inputs and be checked against the same outputs.

Writes tests/conformance/seeds/cases.json. Each case holds:
  mesh        {"shape", "axis_names", "devices"}
  inputs      name -> {"dtype", "shape", "hex"} (raw little-endian bytes)
              or {"dtype", "shape", "normal_key": seed} for inputs libspmd
              regenerates itself (jax.random.normal(PRNGKey(seed), shape))
  outputs     name -> {"dtype", "shape", "hex"}, or for big arrays
              {"dtype", "shape", "sum", "abs_sum", "samples": [[flat index,
              value], ...]} with sums in float64 over the float32 values
  text        name -> what the notebook prints for the case (repr, picture)
  tolerance   absolute tolerance for float outputs (summation order differs)
"""

from __future__ import annotations

import pathlib

import refio


def _mesh(shape, names):
    import jax
    import numpy as np
    from jax.sharding import Mesh
    n = int(np.prod(shape))
    return Mesh(np.array(jax.devices()[:n]).reshape(shape), names)


def _mesh_json(shape, names) -> dict:
    import numpy as np
    return {"shape": list(shape), "axis_names": list(names),
            "devices": list(range(int(np.prod(shape))))}


def _shard_map():
    try:
        from jax import shard_map  # newer JAX
        return lambda f, **kw: shard_map(f, **{k: v for k, v in kw.items() if k != "check_rep"},
                                         check_vma=kw.get("check_rep", True))
    except ImportError:  # pragma: no cover - older JAX
        from jax.experimental.shard_map import shard_map
        return shard_map


def generate(out_dir: pathlib.Path) -> None:
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import NamedSharding, PartitionSpec as P

    smap = _shard_map()
    cases = {}

    # Device parallelism notebook: 2*sin(x)+1 per shard of arange(24) on 3
    # devices; psum of the shard sums of arange(24.0).reshape(3, 8).
    mesh3 = _mesh((3,), ("x",))
    arr = jnp.arange(24)
    f_el = smap(lambda x: 2 * jnp.sin(x) + 1, mesh=mesh3, in_specs=P("x"), out_specs=P("x"))
    out = f_el(arr)
    cases["elementwise_sin_3dev"] = {
        "mesh": _mesh_json((3,), ("x",)), "inputs": {"x": refio.array_hex(arr)},
        "outputs": {"y": refio.array_hex(out)}, "text": {"repr": repr(out)}, "tolerance": 1e-6}
    x38 = jax.device_put(jnp.arange(24.0).reshape(3, 8), NamedSharding(mesh3, P("x")))
    psum = smap(lambda x: jax.lax.psum(x.sum(), "x"), mesh=mesh3, in_specs=P("x"),
                out_specs=P())(x38)
    cases["psum_of_shard_sums_3dev"] = {
        "mesh": _mesh_json((3,), ("x",)), "inputs": {"x": refio.array_hex(x38)},
        "outputs": {"total": refio.array_hex(psum)},
        "text": {"repr": repr(psum), "sharding": refio.seed_form(str(psum.sharding))},
        "tolerance": 0.0}

    # Introduction to sharded computation: shard_map over all 8 devices.
    mesh8 = _mesh((8,), ("x",))
    x32 = jnp.arange(32)
    y = smap(lambda x: x * 2, mesh=mesh8, in_specs=P("x"), out_specs=P("x"))(x32)
    s = smap(lambda x: jnp.sum(x, keepdims=True), mesh=mesh8, in_specs=P("x"),
             out_specs=P("x"))(x32)
    t = smap(lambda x: jax.lax.psum(x.sum(), "x"), mesh=mesh8, in_specs=P("x"),
             out_specs=P())(x32)
    cases["local_shapes_8dev"] = {
        "mesh": _mesh_json((8,), ("x",)), "inputs": {"x": refio.array_hex(x32)},
        "outputs": {"doubled": refio.array_hex(y), "shard_sums": refio.array_hex(s),
                    "total": refio.array_hex(t)},
        "text": {"shard_sums": repr(s), "total": repr(t)}, "tolerance": 0.0}

    # Automatic parallelism via jit on arange(32.0).reshape(4, 8) laid out
    # P('x', 'y') over a 2x4 mesh: an elementwise function keeps the
    # sharding, x.sum(axis=0) ends replicated over 'x', and a sharding
    # constraint puts it over an 8-device mesh.
    mesh24 = _mesh((2, 4), ("x", "y"))
    arr_sharded = jax.device_put(jnp.arange(32.0).reshape(4, 8),
                                 NamedSharding(mesh24, P("x", "y")))
    elementwise = jax.jit(lambda x: 2 * jnp.sin(x) + 1)(arr_sharded)
    contract = jax.jit(lambda x: x.sum(axis=0))(arr_sharded)

    def f_contract_2(x):
        out = x.sum(axis=0)
        return jax.lax.with_sharding_constraint(out, NamedSharding(mesh8, P("x")))

    contract_2 = jax.jit(f_contract_2)(arr_sharded)
    cases["jit_cells_2x4"] = {
        "mesh": _mesh_json((2, 4), ("x", "y")), "inputs": {"x": refio.array_hex(arr_sharded)},
        "outputs": {"elementwise": refio.array_hex(elementwise),
                    "contract": refio.array_hex(contract),
                    "contract_2": refio.array_hex(contract_2)},
        "text": {"shardings_match": str(elementwise.sharding == arr_sharded.sharding),
                 "contract_sharding": refio.seed_form(str(contract.sharding)),
                 "contract_picture": refio.picture(contract),
                 "contract_repr": str(contract),
                 "contract_2_sharding": refio.seed_form(str(contract_2.sharding)),
                 "contract_2_picture": refio.picture(contract_2)},
        "tolerance": 1e-6}

    # layer(x, weights, bias) = sigmoid(x @ weights + bias), three ways.
    rng = np.random.default_rng(0)
    xl = rng.normal(size=(32,))
    wl = rng.normal(size=(32, 4))
    bl = rng.normal(size=(4,))

    @jax.jit
    def layer(x, weights, bias):
        return jax.nn.sigmoid(x @ weights + bias)

    plain = layer(xl, wl, bl)
    sh = NamedSharding(mesh8, P("x"))
    auto = layer(jax.device_put(xl, sh), jax.device_put(wl, sh), bl)
    sharded = jax.jit(smap(lambda x, w, b: jax.nn.sigmoid(jax.lax.psum(x @ w, "x") + b),
                           mesh=mesh8, in_specs=(P("x"), P("x", None), P(None)),
                           out_specs=P(None)))(xl, wl, bl)
    cases["layer_three_ways_8dev"] = {
        "mesh": _mesh_json((8,), ("x",)),
        "inputs": {"x": refio.array_hex(np.asarray(xl, np.float32)),
                   "weights": refio.array_hex(np.asarray(wl, np.float32)),
                   "bias": refio.array_hex(np.asarray(bl, np.float32))},
        "outputs": {"layer": refio.array_hex(plain), "layer_jit_sharded": refio.array_hex(auto),
                    "layer_shard_map": refio.array_hex(sharded)},
        "text": {"layer": repr(plain)}, "tolerance": 1e-5}

    # FSDP, TP and FSDP+TP matmuls on a 2x2 ("data", "model") mesh.
    mesh22 = _mesh((2, 2), ("data", "model"))
    key = jax.random.PRNGKey(0)
    x = jax.random.normal(key, (4, 10))
    A = jax.random.normal(key, (10, 10))
    W1 = jax.random.normal(key, (10, 40))
    W2 = jax.random.normal(key, (40, 10))
    normal_inputs = {
        "x": {"dtype": "float32", "shape": [4, 10], "normal_key": 0},
        "A": {"dtype": "float32", "shape": [10, 10], "normal_key": 0},
        "W1": {"dtype": "float32", "shape": [10, 40], "normal_key": 0},
        "W2": {"dtype": "float32", "shape": [40, 10], "normal_key": 0},
    }

    def fsdp(x, A):
        A = jax.lax.all_gather(A, axis_name="data", axis=0, tiled=True)
        return x @ A

    B = smap(fsdp, mesh=mesh22, in_specs=(P("data", None), P("data", None)),
             out_specs=P("data", None))(
        jax.device_put(x, NamedSharding(mesh22, P("data", None))),
        jax.device_put(A, NamedSharding(mesh22, P("data", None))))
    cases["fsdp_matmul_2x2"] = {
        "mesh": _mesh_json((2, 2), ("data", "model")),
        "inputs": {k: normal_inputs[k] for k in ("x", "A")},
        "outputs": {"B": refio.array_hex(B), "unsharded": refio.array_hex(x @ A)},
        "text": {"picture": refio.picture(B)}, "tolerance": 1e-5}

    def tp(x, W1, W2):
        x = jax.lax.all_gather(x, axis_name="model", axis=1, tiled=True)
        temp = x @ W1
        temp = temp @ W2
        return jax.lax.psum_scatter(temp, axis_name="model", scatter_dimension=1, tiled=True)

    B = smap(tp, mesh=mesh22, in_specs=(P(None, "model"), P(None, "model"), P("model", None)),
             out_specs=P(None, "model"))(x, W1, W2)
    cases["tp_mlp_2x2"] = {
        "mesh": _mesh_json((2, 2), ("data", "model")),
        "inputs": {k: normal_inputs[k] for k in ("x", "W1", "W2")},
        "outputs": {"B": refio.array_hex(B), "unsharded": refio.array_hex(x @ W1 @ W2)},
        "text": {"picture": refio.picture(B)}, "tolerance": 1e-4}

    def fsdp_tp(x, W1, W2):
        x = jax.lax.all_gather(x, axis_name="model", axis=1, tiled=True)
        W1 = jax.lax.all_gather(W1, axis_name="data", axis=0, tiled=True)
        W2 = jax.lax.all_gather(W2, axis_name="data", axis=1, tiled=True)
        out = (x @ W1) @ W2
        return jax.lax.psum_scatter(out, axis_name="model", scatter_dimension=1, tiled=True)

    B = smap(fsdp_tp, mesh=mesh22,
             in_specs=(P("data", "model"), P("data", "model"), P("model", "data")),
             out_specs=P("data", "model"))(x, W1, W2)
    cases["fsdp_tp_2x2"] = {
        "mesh": _mesh_json((2, 2), ("data", "model")),
        "inputs": {k: normal_inputs[k] for k in ("x", "W1", "W2")},
        "outputs": {"B": refio.array_hex(B), "unsharded": refio.array_hex(x @ W1 @ W2)},
        "text": {"picture": refio.picture(B)}, "tolerance": 1e-4}

    # Benchmarking communication: all_to_all of a 1000x1000 array over 4
    # devices, applied twice is the identity. The full-size case is checked
    # through summaries of inputs libspmd regenerates; a scaled-down copy in
    # full.
    mesh4 = _mesh((4,), ("data",))
    a2a = smap(lambda x: jax.lax.all_to_all(x, axis_name="data", split_axis=1, concat_axis=0,
                                            tiled=True),
               mesh=mesh4, in_specs=P("data", None), out_specs=P(None, "data"), check_rep=False)
    X = jax.device_put(jax.random.normal(key, (1000, 1000)), NamedSharding(mesh4, P("data", None)))
    XT = a2a(X)
    XTT = a2a(XT)
    cases["all_to_all_1000x1000_4dev"] = {
        "mesh": _mesh_json((4,), ("data",)),
        "inputs": {"X": {"dtype": "float32", "shape": [1000, 1000], "normal_key": 0}},
        "outputs": {"X": refio.array_summary(X), "X_T": refio.array_summary(XT),
                    "X_T_T": refio.array_summary(XTT)},
        "text": {"round_trip_equal": str(bool(np.allclose(X, XTT))),
                 "X_picture": refio.picture(X), "X_T_picture": refio.picture(XT)},
        "tolerance": 0.0}
    small = jax.device_put(jnp.arange(96.0).reshape(8, 12), NamedSharding(mesh4, P("data", None)))
    cases["all_to_all_8x12_4dev"] = {
        "mesh": _mesh_json((4,), ("data",)),
        "inputs": {"X": refio.array_hex(small)},
        "outputs": {"X_T": refio.array_hex(a2a(small)),
                    "X_T_T": refio.array_hex(a2a(a2a(small)))},
        "text": {}, "tolerance": 0.0}

    refio.write_json(out_dir / "cases.json", {"cases": [dict(name=k, **v) for k, v in
                                                        sorted(cases.items())]})
