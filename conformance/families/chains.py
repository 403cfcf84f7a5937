"""Whole programs under one jax.jit: random chains of 2-6 ops with layout
constraints anywhere, and JAX's layout and values for every value the
program returns. jax.jit places a program as a whole, forward and backward
(Shardy's propagation), so an op followed by a constraint may be computed
in a layout derived from the constraint rather than from its operands:
these cases hold libspmd's programs to that placement.

Writes tests/conformance/chains/cases.json:
  meshes   the meshes used (refio.mesh_table)
  cases    a list of
    name     unique
    mesh     a name of `meshes`
    inputs   [{"spec": dims, "array": {"dtype", "shape", "hex"}}]; input 0
             is the chain's start, the others operands its steps add
             (float32, or int32 for a take's indices)
    steps    in order; step k makes value k + 1 (value 0 is input 0):
               {"op": "unary", "fn": "sin" | "tanh" | "neg" | "abs"}
               {"op": "scalar", "fn": "mul" | "add", "scalar": s}  (v * s, v + s)
               {"op": "binary", "fn": "add" | "mul", "input": k}   (v op inputs[k])
               {"op": "transpose", "perm": [...]}
               {"op": "sum", "axis": a}                           (keepdims false)
               {"op": "matmul", "input": k}                       (v @ inputs[k])
               {"op": "einsum", "eq": e, "input": k}   (jnp.einsum(e, v, inputs[k]))
               {"op": "constraint", "spec": dims}  (with_sharding_constraint)
             and, in the cases named chain_shape_*, also
               {"op": "reshape", "shape": [...]}
               {"op": "slice", "start": [...], "limit": [...]}    (v[start:limit])
               {"op": "softmax", "axis": a}               (jax.nn.softmax)
             and, in the cases named chain_einsum3_*, also
               {"op": "einsum3", "eq": e, "inputs": [k, l]}
                                      (jnp.einsum(e, v, inputs[k], inputs[l]))
             and, in the cases named chain_concat_*, also
               {"op": "concat", "input": k, "axis": a}
                                      (jnp.concatenate([v, inputs[k]], a))
               {"op": "broadcast", "shape": [...]}        (jnp.broadcast_to)
             and, in the cases named chain_index_*, also
               {"op": "argmax", "fn": "argmax" | "argmin", "axis": a}
                                      (int32 indices; steps after them see
                                       int32 values, as jnp's ops do)
               {"op": "cumsum", "axis": a}                (jnp.cumsum)
               {"op": "log_softmax", "axis": a}       (jax.nn.log_softmax)
               {"op": "one_hot", "classes": n}   (jax.nn.one_hot of int32
                                                  values: float32, a last
                                                  dimension of n)
             and, in the cases named chain_take_*, those and also
               {"op": "take", "input": k, "axis": a}
                                      (jnp.take(v, inputs[k], axis=a): k an
                                       int32 input of indices from -n to
                                       n - 1, n the axis's length)
               {"op": "take_from", "input": k}
                                      (jnp.take(inputs[k], v, axis=0), right
                                       after an arg-max/-min: v's indices
                                       pick rows of a float32 table)
               {"op": "scatter_add", "indices": k, "updates": l, "axis": a}
                                      (v.at[(:,) * a + (inputs[k],)]
                                       .add(inputs[l]))
               {"op": "dynamic_slice", "start": [...], "sizes": [...]}
                                      (jax.lax.dynamic_slice: a start
                                       below 0 counts from the end, then
                                       the window is moved inside v)
             and, in the cases named chain_stride_*, the chain_shape_*
             steps and also
               {"op": "slice_strided", "start": [...], "limit": [...],
                "strides": [...]}     (jax.lax.slice with strides)
    outputs  [{"value": i, "spec": dims of JAX's layout, "array": {...}}]:
             the chain's last value and some of the others, returned
    out_spec where present, the layout asked of the last output
             (out_shardings)
    jax_wrong  where present, the outputs whose values jax.jit got wrong
             (beyond any rounding, against the program evaluated in float64
             by NumPy): their "array" is NumPy's, rounded to float32, and
             this lists JAX's own, as {"value", "array"}
    exact    in an output, where present: the program in float64 by NumPy,
             rounded to float32, given where JAX's own rounding takes more
             than half of rtol/atol (sums that cancel); an element then
             agrees within rtol/atol of JAX's value or of this one
    rtol, atol   the agreement asked of the values (sums and products are
             reassociated by a different split)
Specs are lists of dims, each a list of axis names ([] for None).
"""

from __future__ import annotations

import pathlib
import random

import refio

_MESH_AXES = {"2x4": {"x": 2, "y": 4}, "4x2": {"x": 4, "y": 2}, "2x2x2": {"x": 2, "y": 2, "z": 2}}


def _reshape_step(rng, shape):
    """A reshape of `shape` that merges two neighbouring dimensions or splits
    one in two (the shape it makes, the step)."""
    merges = [d for d in range(len(shape) - 1)]
    splits = [d for d in range(len(shape)) if shape[d] >= 4 and len(shape) < 4]
    if merges and (not splits or rng.random() < 0.5):
        d = rng.choice(merges)
        out = shape[:d] + [shape[d] * shape[d + 1]] + shape[d + 2:]
    else:
        d = rng.choice(splits)
        major = rng.choice([f for f in (2, 4) if shape[d] % f == 0 and shape[d] // f >= 2])
        out = shape[:d] + [major, shape[d] // major] + shape[d + 1:]
    return out, {"op": "reshape", "shape": out}


def _slice_step(rng, shape):
    """Half of one dimension, from its start, middle or a quarter in."""
    d = rng.randrange(len(shape))
    half = shape[d] // 2
    first = rng.choice([0, half, half // 2])
    start = [0] * len(shape)
    limit = list(shape)
    start[d], limit[d] = first, first + half
    out = list(shape)
    out[d] = half
    return out, {"op": "slice", "start": start, "limit": limit}


def _einsum3_step(rng, shape, inputs, axes):
    """An einsum of v and two new inputs (the shape it makes, the step)."""
    if len(shape) == 2:
        k1, k2 = rng.choice([8, 16]), rng.choice([8, 16])
        if rng.random() < 0.5:
            eq, w1, w2 = "ij,jk,kl->il", [shape[1], k1], [k1, k2]
        else:
            eq, w1, w2 = "ij,kj,kl->il", [k1, shape[1]], [k1, k2]
        out = [shape[0], k2]
    elif rng.random() < 0.5:
        eq, w1, w2 = "bsh,hk,kd->bsd", [shape[2], 8], [8, 8]
        out = [shape[0], shape[1], 8]
    else:
        eq, w1, w2 = "bqd,bkd,bkv->bqv", [shape[0], 8, shape[2]], [shape[0], 8, 8]
        out = [shape[0], shape[1], 8]
    for w in (w1, w2):
        inputs.append((w, refio.random_spec(rng, w, axes)))
    return out, {"op": "einsum3", "eq": eq, "inputs": [len(inputs) - 2, len(inputs) - 1]}


def _random_chain(rng, axes, shape_ops=False, einsum3=False, concat=False, index=False, take=False,
                  strided=False):
    """(input shapes and specs, steps) of one chain; with `shape_ops`, also
    reshapes, slices and softmaxes; with `einsum3`, einsums of three
    operands; with `concat`, concatenations and broadcasts; with `index`,
    arg-max/-min, cumulative sums, one-hot encodings and log-softmaxes; with
    `take`, those and gathers (jnp.take) of the value or by it, scatters
    into it and dynamic slices of it; with `strided`, slices with strides.
    An input of
    a take's indices is (shape, spec, bound): int32 values in [-bound,
    bound)."""
    nd = rng.choice([2, 2, 3])
    shape = [rng.choice([8, 16]) if nd == 2 else 8 for _ in range(nd)]
    inputs = [(list(shape), refio.random_spec(rng, shape, axes))]
    steps = []
    n = rng.randint(2, 6)
    ints = False  # the value is int32 (an argmax's indices, or sums of them)
    while len(steps) < n:
        kinds = ["unary", "scalar", "binary", "constraint", "constraint"]
        if len(shape) >= 2:
            kinds += ["transpose", "sum"] + ([] if ints else ["matmul"]) + (
                ["einsum"] if len(shape) <= 3 and not ints else [])
        if index:
            kinds += ["cumsum", "cumsum"] + (["argmax", "argmax"] if len(shape) >= 2 else []) + (
                ["one_hot", "one_hot"] if ints and len(shape) <= 2 else []) + (
                [] if ints else ["log_softmax"])
        if take:
            kinds += [] if ints or len(shape) > 3 else ["take", "take", "take", "scatter_add", "scatter_add",
                                                         "dynamic_slice", "dynamic_slice"]
        if shape_ops:
            kinds += ["reshape", "reshape", "softmax"] + (["slice"] if min(shape) >= 8 else [])
        if strided:
            kinds += ["slice_strided", "slice_strided", "slice_strided"]
        if einsum3 and len(shape) in (2, 3):
            kinds += ["einsum3", "einsum3", "einsum3"]
        if concat:
            kinds += ["concat", "concat"] + (["broadcast", "broadcast"] if len(shape) < 4 else [])
        kind = rng.choice(kinds)
        if take and steps and steps[-1]["op"] == "argmax" and rng.random() < 0.6:
            kind = "take_from"  # indices that are the program's own values
        was_int = ints
        if kind in ("unary", "scalar", "binary") and ints:
            # neg and abs keep int32; the rest make floats.
            if kind != "unary":
                ints = False
        if kind == "take":
            axis = rng.randrange(len(shape))
            ishape = [rng.choice([4, 8])] if len(shape) == 3 or rng.random() < 0.6 else [2, 4]
            inputs.append((ishape, refio.random_spec(rng, ishape, axes), shape[axis]))
            steps.append({"op": "take", "input": len(inputs) - 1, "axis": axis})
            shape = shape[:axis] + ishape + shape[axis + 1:]
        elif kind == "scatter_add":
            axis = rng.randrange(len(shape))
            ishape = [rng.choice([4, 8])]
            inputs.append((ishape, refio.random_spec(rng, ishape, axes), shape[axis]))
            ushape = shape[:axis] + ishape + shape[axis + 1:]
            inputs.append((ushape, refio.random_spec(rng, ushape, axes)))
            steps.append({"op": "scatter_add", "indices": len(inputs) - 2, "updates": len(inputs) - 1,
                          "axis": axis})
        elif kind == "dynamic_slice":
            sizes = [rng.choice([n, n // 2]) for n in shape]
            start = [rng.randrange(-n, n) for n in shape]
            steps.append({"op": "dynamic_slice", "start": start, "sizes": sizes})
            shape = sizes
        elif kind == "slice_strided":
            # Every dimension by a stride of 1, 2 or 4 (leaving two or
            # more elements), from 0 or, with a stride, 1: lengths stay
            # powers of two, as the other steps want them.
            strides = [rng.choice([1] + [k for k in (2, 4) if n // k >= 2]) for n in shape]
            start = [rng.choice([0, 1]) if k > 1 else 0 for k in strides]
            limit = list(shape)
            steps.append({"op": "slice_strided", "start": start, "limit": limit, "strides": strides})
            shape = [(l - a + k - 1) // k for a, l, k in zip(start, limit, strides)]
        elif kind == "take_from":
            # The arg-max's indices are below 16 (no dimension is longer).
            table = [16, rng.choice([8, 16])]
            inputs.append((table, refio.random_spec(rng, table, axes)))
            steps.append({"op": "take_from", "input": len(inputs) - 1})
            shape = shape + [table[1]]
            ints = False
        elif kind == "argmax":
            axis = rng.randrange(len(shape))
            shape = shape[:axis] + shape[axis + 1:]
            steps.append({"op": "argmax", "fn": rng.choice(["argmax", "argmin"]), "axis": axis})
            ints = True
        elif kind == "cumsum":
            steps.append({"op": "cumsum", "axis": rng.randrange(len(shape))})
        elif kind == "log_softmax":
            steps.append({"op": "log_softmax", "axis": rng.randrange(len(shape))})
        elif kind == "one_hot":
            shape = shape + [8]
            steps.append({"op": "one_hot", "classes": 8})
            ints = False
        elif kind == "concat":
            axis = rng.randrange(len(shape))
            inputs.append((list(shape), refio.random_spec(rng, shape, axes)))
            steps.append({"op": "concat", "input": len(inputs) - 1, "axis": axis})
            shape = shape[:axis] + [2 * shape[axis]] + shape[axis + 1:]
        elif kind == "broadcast":
            # A new leading dimension.
            shape = [rng.choice([2, 4, 8])] + shape
            steps.append({"op": "broadcast", "shape": shape})
        elif kind == "einsum3":
            shape, step = _einsum3_step(rng, shape, inputs, axes)
            steps.append(step)
        elif kind == "reshape":
            shape, step = _reshape_step(rng, shape)
            steps.append(step)
        elif kind == "slice":
            shape, step = _slice_step(rng, shape)
            steps.append(step)
        elif kind == "softmax":
            steps.append({"op": "softmax", "axis": rng.randrange(len(shape))})
        elif kind == "unary":
            fn = rng.choice(["sin", "tanh", "neg", "abs"])
            ints = ints and fn in ("neg", "abs")
            steps.append({"op": "unary", "fn": fn})
        elif kind == "scalar":
            fn = rng.choice(["mul", "add"])
            # A scalar beside int32 values is not integral, so that both
            # jnp and libspmd (whose C scalar cannot say 1.0 from 1) make
            # float32 of them.
            steps.append({"op": "scalar", "fn": fn,
                          "scalar": 0.5 if fn == "mul" else (1.5 if was_int else 1.0)})
        elif kind == "binary":
            inputs.append((list(shape), refio.random_spec(rng, shape, axes)))
            steps.append({"op": "binary", "fn": rng.choice(["add", "mul"]), "input": len(inputs) - 1})
        elif kind == "constraint":
            steps.append({"op": "constraint", "spec": refio.random_spec(rng, shape, axes)})
        elif kind == "transpose":
            perm = list(range(len(shape)))
            while perm == sorted(perm):
                rng.shuffle(perm)
            shape = [shape[p] for p in perm]
            steps.append({"op": "transpose", "perm": perm})
        elif kind == "sum":
            axis = rng.randrange(len(shape))
            shape = shape[:axis] + shape[axis + 1:]
            steps.append({"op": "sum", "axis": axis})
        elif kind == "einsum":
            if len(shape) == 2:
                eq, wshape = "ij,kj->ik", [rng.choice([8, 16]), shape[1]]
                out = [shape[0], wshape[0]]
            elif rng.random() < 0.5:
                eq, wshape = "bsh,hk->bsk", [shape[2], 8]
                out = [shape[0], shape[1], 8]
            else:
                eq, wshape = "bqd,bkd->bqk", list(shape)
                out = [shape[0], shape[1], shape[1]]
            inputs.append((wshape, refio.random_spec(rng, wshape, axes)))
            shape = out
            steps.append({"op": "einsum", "eq": eq, "input": len(inputs) - 1})
        else:
            wshape = [shape[-1], rng.choice([8, 16])]
            inputs.append((wshape, refio.random_spec(rng, wshape, axes)))
            shape = shape[:-1] + [wshape[1]]
            steps.append({"op": "matmul", "input": len(inputs) - 1})
    return inputs, steps


def _apply(step, v, args, mesh=None):
    """One step: under jax.jit on the mesh, or (mesh None) in float64 NumPy,
    the check of JAX's values."""
    if mesh is None:
        import numpy as xp

        def softmax(x, axis):
            e = xp.exp(x - xp.max(x, axis=axis, keepdims=True))
            return e / xp.sum(e, axis=axis, keepdims=True)

        def log_softmax(x, axis):
            s = x - xp.max(x, axis=axis, keepdims=True)
            return s - xp.log(xp.sum(xp.exp(s), axis=axis, keepdims=True))
    else:
        import jax
        import jax.numpy as xp
        softmax = jax.nn.softmax
        log_softmax = jax.nn.log_softmax
    op = step["op"]
    if op == "unary":
        return {"sin": xp.sin, "tanh": xp.tanh, "neg": xp.negative, "abs": xp.abs}[step["fn"]](v)
    if op == "scalar":
        return v * step["scalar"] if step["fn"] == "mul" else v + step["scalar"]
    if op == "binary":
        w = args[step["input"]]
        return v + w if step["fn"] == "add" else v * w
    if op == "transpose":
        return xp.transpose(v, step["perm"])
    if op == "sum":
        return xp.sum(v, axis=step["axis"])
    if op == "matmul":
        return v @ args[step["input"]]
    if op == "einsum":
        return xp.einsum(step["eq"], v, args[step["input"]])
    if op == "reshape":
        return xp.reshape(v, step["shape"])
    if op == "slice":
        return v[tuple(slice(a, b) for a, b in zip(step["start"], step["limit"]))]
    if op == "softmax":
        return softmax(v, axis=step["axis"])
    if op == "log_softmax":
        return log_softmax(v, axis=step["axis"])
    if op == "einsum3":
        k, l = step["inputs"]
        return xp.einsum(step["eq"], v, args[k], args[l])
    if op == "concat":
        return xp.concatenate([v, args[step["input"]]], axis=step["axis"])
    if op == "broadcast":
        return xp.broadcast_to(v, step["shape"])
    if op == "argmax":
        return getattr(xp, step["fn"])(v, axis=step["axis"]).astype(xp.int32)
    if op == "take":
        return xp.take(v, args[step["input"]].astype(xp.int32), axis=step["axis"])
    if op == "take_from":
        return xp.take(args[step["input"]], v.astype(xp.int32), axis=0)
    if op == "scatter_add":
        where = (slice(None),) * step["axis"] + (args[step["indices"]].astype(xp.int32),)
        if mesh is None:
            out = v.copy()
            xp.add.at(out, where, args[step["updates"]])
            return out
        return v.at[where].add(args[step["updates"]])
    if op == "slice_strided":
        if mesh is None:
            return v[tuple(slice(a, b, k) for a, b, k in zip(step["start"], step["limit"], step["strides"]))]
        return jax.lax.slice(v, step["start"], step["limit"], step["strides"])
    if op == "dynamic_slice":
        if mesh is None:
            at = [min(max(s + n if s < 0 else s, 0), n - k)
                  for s, n, k in zip(step["start"], v.shape, step["sizes"])]
            return v[tuple(slice(a, a + k) for a, k in zip(at, step["sizes"]))]
        return jax.lax.dynamic_slice(v, step["start"], step["sizes"])
    if op == "cumsum":
        return xp.cumsum(v, axis=step["axis"])
    if op == "one_hot":
        if mesh is None:
            return (v[..., None] == xp.arange(step["classes"])).astype(xp.float64)
        return jax.nn.one_hot(v, step["classes"])
    if mesh is None:
        return v
    from jax.sharding import NamedSharding
    return jax.lax.with_sharding_constraint(v, NamedSharding(mesh, refio.jax_spec(step["spec"])))


def generate(out_dir: pathlib.Path, count: int = 256, seed: int = 20261127, shape_count: int = 192,
             shape_seed: int = 20261128, einsum3_count: int = 96, einsum3_seed: int = 20261129,
             concat_count: int = 96, concat_seed: int = 20261130, index_count: int = 160,
             index_seed: int = 20261131, take_count: int = 128, take_seed: int = 20261132,
             stride_count: int = 64, stride_seed: int = 20261133) -> None:
    meshes = {name: refio.jax_mesh(name) for name in _MESH_AXES}
    cases = []
    # The chains of the first set, then (each set from a generator of its
    # own, so the sets before stay as they were) those with reshapes, slices
    # and softmaxes, those with einsums of three operands, those with
    # concatenations and broadcasts, those with arg-max/-min and
    # cumulative sums, those with gathers, and those with strided slices.
    plan = [(random.Random(seed), "chain", count, {}),
            (random.Random(shape_seed), "chain_shape", shape_count, {"shape_ops": True}),
            (random.Random(einsum3_seed), "chain_einsum3", einsum3_count, {"einsum3": True}),
            (random.Random(concat_seed), "chain_concat", concat_count, {"concat": True}),
            (random.Random(index_seed), "chain_index", index_count, {"index": True}),
            (random.Random(take_seed), "chain_take", take_count, {"index": True, "take": True}),
            (random.Random(stride_seed), "chain_stride", stride_count, {"shape_ops": True, "strided": True})]
    for rng, prefix, how_many, kinds in plan:
        cases += _chains(rng, prefix, how_many, kinds, meshes)
    refio.write_json(out_dir / "cases.json",
                     {"meshes": refio.mesh_table(list(_MESH_AXES)), "cases": cases})


def _chains(rng, prefix, count, kinds, meshes):
    import jax
    import numpy as np
    from jax.sharding import NamedSharding

    cases = []
    n = 0
    while n < count:
        mesh_name = rng.choice(list(_MESH_AXES))
        mesh = meshes[mesh_name]
        inputs, steps = _random_chain(rng, _MESH_AXES[mesh_name], **kinds)
        if _near_tie(inputs, steps, n):
            continue  # an arg-max whose answer rounding could change
        values = len(steps) + 1
        returned = sorted({values - 1} | {i for i in range(1, values - 1) if rng.random() < 0.4})
        args, records = [], []
        for v, (shape, spec, *_) in zip(_inputs(inputs, n), inputs):
            a = jax.device_put(v, NamedSharding(mesh, refio.jax_spec(spec)))
            args.append(a)
            records.append({"spec": spec, "array": refio.array_hex(a)})

        def program(*xs, steps=steps, returned=returned, mesh=mesh):
            vals = [xs[0]]
            for step in steps:
                vals.append(_apply(step, vals[-1], xs, mesh))
            return tuple(vals[i] for i in returned)

        # A third of the cases ask for the last output's layout
        # (out_shardings), which jax.jit also places backward.
        out_spec = None
        if rng.random() < 0.33:
            out_spec = refio.random_spec(rng, [int(d) for d in jax.eval_shape(program, *args)[-1].shape],
                                         _MESH_AXES[mesh_name])
        kw = {}
        if out_spec is not None:
            kw["out_shardings"] = tuple([None] * (len(returned) - 1) +
                                        [NamedSharding(mesh, refio.jax_spec(out_spec))])
        try:
            outs = jax.jit(program, **kw)(*args)
        except jax.errors.JaxRuntimeError:
            # XLA's partitioner fails some gathers ("Slice dim size 16
            # greater than dynamic slice dimension: 8", JAX 0.10.2): no
            # answer to hold libspmd to.
            continue
        case = {
            "name": f"{prefix}_{n:03d}", "mesh": mesh_name, "inputs": records, "steps": steps,
            "outputs": [{"value": i, "spec": refio.spec_dims(o.sharding.spec, o.ndim),
                         "array": refio.array_hex(o)} for i, o in zip(returned, outs)],
            "rtol": 1e-5, "atol": 1e-5,
        }
        # JAX's values against the program in float64: where jax.jit is
        # wrong beyond rounding, the case holds NumPy's values.
        exact = [np.asarray(a, np.float64) for a in args]
        vals = [exact[0]]
        for step in steps:
            vals.append(_apply(step, vals[-1], exact))
        wrong = []
        for out, o in zip(case["outputs"], outs):
            want = vals[out["value"]]
            if not np.allclose(np.asarray(o, np.float64), want, rtol=1e-3, atol=1e-3):
                wrong.append({"value": out["value"], "array": out["array"]})
                out["array"] = refio.array_hex(want.astype(np.float32))
        if wrong:
            case["jax_wrong"] = wrong
        _note_exact_where_jax_rounds(case, vals)
        if out_spec is not None:
            case["out_spec"] = out_spec
        cases.append(case)
        n += 1
    return cases


def _note_exact_where_jax_rounds(case, vals):
    """Gives an output its float64 values (rounded to float32) as "exact"
    where JAX's own rounding uses more than half the agreement asked: sums
    of products that cancel (an element of 0.07 out of terms summing to
    7e4 in magnitude), where another order of summation, as on a GPU, can
    land as far on the other side of the exact value."""
    import numpy as np
    for out in case["outputs"]:
        have = refio.array_from_hex(out["array"])
        if have.dtype != np.float32:
            continue
        want = np.asarray(vals[out["value"]], np.float64)
        slack = 0.5 * (case["atol"] + case["rtol"] * np.abs(have.astype(np.float64)))
        if (np.abs(have.astype(np.float64) - want) > slack).any():
            out["exact"] = refio.array_hex(want.astype(np.float32))


def _inputs(inputs, n):
    """The chain's input values (float32; int32 indices where the input has
    a bound), as _chains makes them."""
    import numpy as np
    out = []
    for i, (shape, _, *bound) in enumerate(inputs):
        k = np.arange(int(np.prod(shape)), dtype=np.float64)
        if bound:
            out.append(((k * 5 + i * 3 + n) % (2 * bound[0]) - bound[0]).reshape(shape).astype(np.int32))
        else:
            out.append((((k * 37 + i * 11 + n) % 97 - 48) / 64.0).reshape(shape).astype(np.float32))
    return out


def _near_tie(inputs, steps, n):
    """Whether an arg-max/-min step of the chain (evaluated in float64)
    meets two candidates closer than rounding could keep apart (or equal:
    a tie broken by rounding differently)."""
    import numpy as np
    if not any(s["op"] == "argmax" for s in steps):
        return False
    args = [a.astype(np.float64) for a in _inputs(inputs, n)]
    v = args[0]
    for step in steps:
        if step["op"] == "argmax":
            w = np.sort(np.moveaxis(v, step["axis"], -1), axis=-1)
            gap = (w[..., -1] - w[..., -2]) if step["fn"] == "argmax" else (w[..., 1] - w[..., 0])
            if np.min(np.abs(gap)) < 1e-3 * (1 + np.max(np.abs(w))):
                return True
        v = _apply(step, v, args)
    return False
