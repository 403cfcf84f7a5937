"""Sharded compute under jax.jit: for each op and input shardings, the
sharding JAX chooses for the result (GSPMD's propagation) and the values.

Writes tests/conformance/propagation/cases.json:
  meshes   the meshes used (refio.mesh_table)
  cases    a list of
    name       unique
    mesh       a name of `meshes`
    op         unary, astype, binary, binary_scalar, where, reduce, argmax, argmin,
               cumsum, one_hot, take, scatter_add,
               softmax, matmul, einsum, transpose, reshape, slice,
               slice_strided, dynamic_slice, einsum_n, concatenate, broadcast_to
    params     the op's parameters, named as in spmd/ops.h
    inputs     [{"spec": dims, "array": {"dtype", "shape", "hex"}}]
    out_spec   the requested output sharding (out_shardings), or absent
    result     {"spec": dims of JAX's output sharding, trailing Nones
               dropped, "array": {"dtype", "shape", "hex"}}
    ulps       the agreement asked of float results, in units in the last
               place of the reference (0: bit for bit)
    atol       where present, an absolute difference also accepted (for
               functions that cancel, as gelu's 1 + tanh(z) near z = -3,
               where a last-place difference in tanh is many ulps of the
               small result)
Specs are lists of dims, each a list of axis names ([] for None).
"""

from __future__ import annotations

import pathlib

import refio

_XY = [["x"], ["y"]]
_YX = [["y"], ["x"]]
_X_ = [["x"], []]
__Y = [[], ["y"]]
__X = [[], ["x"]]
_Y_ = [["y"], []]
_REP = []


def _values(shape, dtype, salt):
    import numpy as np
    n = int(np.prod(shape)) if shape else 1
    k = np.arange(n, dtype=np.float64)
    if np.dtype(dtype).kind == "f" or dtype == "bfloat16":
        v = ((k * 37 + salt * 11) % 97 - 48) / 16.0
    elif dtype == "bool":
        v = (k * 7 + salt) % 3 == 0
    else:
        v = (k * 37 + salt * 11) % 23 - (0 if dtype == "uint8" else 11)
    import jax.numpy as jnp
    return jnp.asarray(np.asarray(v).reshape(shape)).astype(dtype)


def _random_concatenations(case, count=256, seed=20261126):
    """concatenate of 2 or 3 operands sharded at random (each axis once per
    operand, splits that divide their dimension), along a random axis of 1-3
    dimensions, on meshes of 8 devices (one in a permuted order): JAX merges
    the operands' splits and drops the axes that do not divide the result."""
    import random
    rng = random.Random(seed)
    sizes = {"2x4": {"x": 2, "y": 4}, "2x2x2": {"x": 2, "y": 2, "z": 2}, "8": {"x": 8},
             "2x4_perm2": {"x": 2, "y": 4}}
    for n in range(count):
        mesh = rng.choice(list(sizes))
        axes = sizes[mesh]
        nd = rng.choice([1, 2, 2, 3])
        axis = rng.randrange(nd)
        base = [rng.choice([2, 4, 8]) for _ in range(nd)]
        inputs = []
        for k in range(rng.choice([2, 3])):
            shape = list(base)
            shape[axis] = rng.choice([2, 4, 6, 8])
            inputs.append((tuple(shape), "float32", refio.random_spec(rng, shape, axes)))
        case(f"concatenate_random_{n:02d}", "concatenate", {"axis": axis},
             lambda *xs, a=axis: jnp_concatenate(xs, a), inputs, mesh=mesh)


_random_spec = refio.random_spec


_MESH_AXES = {"2x4": {"x": 2, "y": 4}, "2x2x2": {"x": 2, "y": 2, "z": 2}, "8": {"x": 8},
              "2x4_perm2": {"x": 2, "y": 4}}


def _broadcast_partner(rng, shape, fewer, size_one):
    """An operand's shape against `shape`: with probability `fewer` (given
    two dimensions or more) its trailing dimensions only, then up to
    `size_one` one dimension of size 1, else `shape` itself."""
    other = list(shape)
    kind = rng.random()
    if kind < fewer and len(shape) > 1:
        other = other[rng.randrange(1, len(shape)):]  # fewer dimensions
    elif kind < size_one:
        other[rng.randrange(len(shape))] = 1  # a broadcast dimension
    return other


def _random_elementwise(case, count=256, seed=20261127):
    """add of two operands sharded at random, of one shape or broadcasting
    (fewer dimensions, or dimensions of size 1), on meshes of 8 devices:
    jax.jit's choice where the operands' splits agree, refine, conflict or
    name one axis on different dimensions."""
    import random
    rng = random.Random(seed)
    for n in range(count):
        mesh = rng.choice(list(_MESH_AXES))
        axes = _MESH_AXES[mesh]
        nd = rng.choice([1, 2, 2, 3])
        shape = [rng.choice([2, 4, 8]) for _ in range(nd)]
        other = _broadcast_partner(rng, shape, 0.25, 0.5)
        inputs = [(tuple(shape), "float32", _random_spec(rng, shape, axes)),
                  (tuple(other), "float32", _random_spec(rng, other, axes))]
        if rng.random() < 0.5:
            inputs.reverse()
        case(f"add_random_{n:02d}", "binary", {"op": "add"}, jnp_add, inputs, mesh=mesh)


def _random_matmuls(case, count=256, seed=20261128):
    """matmul of two operands sharded at random, 2-d or batched (3-d by 3-d
    or by 2-d), on meshes of 8 devices: jax.jit's choice where free
    dimensions, batch dimensions and the contraction name the same axes.
    Values are small integers, so every order of summation gives the same
    float."""
    import random
    rng = random.Random(seed)
    for n in range(count):
        mesh = rng.choice(list(_MESH_AXES))
        axes = _MESH_AXES[mesh]
        m, k, nn = (rng.choice([2, 4, 8]) for _ in range(3))
        batch = rng.choice([None, None, 2, 4])
        a_shape = [m, k] if batch is None else [batch, m, k]
        b_shape = [k, nn] if batch is None or rng.random() < 0.3 else [batch, k, nn]
        inputs = [(tuple(a_shape), "float32", _random_spec(rng, a_shape, axes)),
                  (tuple(b_shape), "float32", _random_spec(rng, b_shape, axes))]
        data = [[float((i * 7 + 3 * j) % 5 - 2) for i in range(_count(sh))]
                for j, sh in enumerate((a_shape, b_shape))]
        case(f"matmul_random_{n:02d}", "matmul", {}, jnp_matmul, inputs, mesh=mesh, data=data)


def _random_reshapes(case, count=256, seed=20261129):
    """reshape of an operand sharded at random into another shape of the
    same size (merging, splitting and regrouping dimensions), on meshes of
    8 devices: jax.jit's layout of the result."""
    import random
    rng = random.Random(seed)
    factors = [2, 2, 2, 2, 2, 2]
    for n in range(count):
        mesh = rng.choice(list(_MESH_AXES))
        axes = _MESH_AXES[mesh]
        # Sizes as groups of the same 2^6 elements, cut two ways.
        def cut():
            sizes, f = [], list(factors)
            while f:
                take = rng.randint(1, min(3, len(f)))
                p = 1
                for _ in range(take):
                    p *= f.pop()
                sizes.append(p)
            return sizes
        src, dst = cut(), cut()
        if rng.random() < 0.2:
            dst.insert(rng.randrange(len(dst) + 1), 1)
        inputs = [(tuple(src), "float32", _random_spec(rng, src, axes))]
        case(f"reshape_random_{n:02d}", "reshape", {"shape": dst},
             lambda u, d=tuple(dst): u.reshape(d), inputs, mesh=mesh)


def _random_reductions(case, count=128, seed=20261130):
    """sum and max over random axes (kept or not) of an operand sharded at
    random, on meshes of 8 devices: jax.jit's layout of the result, partial
    sums combined over the reduced axes. Small integers, so every order of
    summation gives the same float."""
    import random
    rng = random.Random(seed)
    for n in range(count):
        mesh = rng.choice(list(_MESH_AXES))
        axes = _MESH_AXES[mesh]
        nd = rng.choice([1, 2, 2, 3])
        shape = [rng.choice([2, 4, 8]) for _ in range(nd)]
        reduced = sorted(rng.sample(range(nd), rng.randint(1, nd)))
        keep = rng.random() < 0.3
        op = rng.choice(["sum", "max"])
        data = [[float((i * 7 + 3) % 9 - 4) for i in range(_count(shape))]]
        inputs = [(tuple(shape), "float32", _random_spec(rng, shape, axes))]
        case(f"reduce_random_{n:03d}", "reduce", {"op": op, "axes": reduced, "keepdims": keep},
             lambda u, o=op, a=tuple(reduced), k=keep: jnp_reduce(u, o, a, k), inputs,
             mesh=mesh, data=data)


def _random_indexing(rng, mesh_axes, index_sizes):
    """A mesh of `mesh_axes` (its name and axis sizes), an operand shape of
    1-3 dimensions, an axis of it and an indices shape of 1-2 dimensions
    sized from `index_sizes`."""
    mesh = rng.choice(list(mesh_axes))
    nd = rng.choice([1, 2, 2, 3])
    shape = [rng.choice([2, 4, 8]) for _ in range(nd)]
    axis = rng.randrange(nd)
    ishape = [rng.choice(index_sizes) for _ in range(rng.choice([1, 1, 2]))]
    return mesh, mesh_axes[mesh], shape, axis, ishape


def _random_takes(case, count=128, seed=20261131):
    """jnp.take of an operand and indices sharded at random, on meshes of 8
    devices, along a random axis: jax.jit's layout of the result (the
    operand's other dimensions claim their axes first). Indices run from
    below -n to past n, so wrapped and filled elements show."""
    import random
    rng = random.Random(seed)
    for n in range(count):
        mesh, axes, shape, axis, ishape = _random_indexing(rng, _MESH_AXES, [2, 4, 8])
        size = shape[axis]
        data = [[float(i) for i in range(_count(shape))],
                [rng.randrange(-size - 2, size + 2) for _ in range(_count(ishape))]]
        inputs = [(tuple(shape), "float32", _random_spec(rng, shape, axes)),
                  (tuple(ishape), "int32", _random_spec(rng, ishape, axes))]
        case(f"take_random_{n:03d}", "take", {"axis": axis}, lambda u, v, a=axis: jnp_take(u, v, a),
             inputs, mesh=mesh, data=data)


def _random_slices(case, count=96, seed=20261201):
    """lax.slice with strides and lax.dynamic_slice of operands sharded at
    random, a third of them with an output sharding asked for: jax.jit's
    layout of the result (axes that do not divide the result dropped; the
    dynamic starts are constants, as libspmd's are, which jax.jit places as
    a slice). Dynamic starts run from before -n to past n, so wrapped and
    clamped windows show."""
    import random
    rng = random.Random(seed)
    for n in range(count):
        mesh = rng.choice(list(_MESH_AXES))
        axes = _MESH_AXES[mesh]
        nd = rng.choice([1, 2, 2, 3])
        shape = [rng.choice([4, 6, 8, 12, 16, 24]) for _ in range(nd)]
        spec = _random_spec(rng, shape, axes)
        if n % 2 == 0:
            start = [rng.randrange(0, size // 2 + 1) for size in shape]
            stop = [rng.randrange(b, size + 1) for b, size in zip(start, shape)]
            strides = [rng.choice([1, 2, 2, 3, 4, 5]) for _ in shape]
            out_shape = [-(-(e - b) // k) for b, e, k in zip(start, stop, strides)]
            out_spec = _random_spec(rng, out_shape, axes) if n % 3 == 0 and 0 not in out_shape else None
            case(f"slice_strided_random_{n:03d}", "slice_strided",
                 {"start": start, "stop": stop, "strides": strides},
                 lambda u, b=tuple(start), e=tuple(stop), k=tuple(strides): lax_slice(u, b, e, k),
                 [(tuple(shape), "float32", spec)], mesh=mesh, out_spec=out_spec)
        else:
            start = [rng.randrange(-size - 2, size + 3) for size in shape]
            sizes = [rng.choice([0, 1, size // 2, size - 1, size, size]) for size in shape]
            out_spec = _random_spec(rng, sizes, axes) if n % 3 == 0 else None
            if 0 in sizes:
                out_spec = None  # JAX cannot read back an empty result laid out so
            case(f"dynamic_slice_random_{n:03d}", "dynamic_slice", {"start": start, "sizes": sizes},
                 lambda u, b=tuple(start), z=tuple(sizes): lax_dynamic_slice(u, b, z),
                 [(tuple(shape), "float32", spec)], mesh=mesh, out_spec=out_spec)


_EINSUMS = ["ij,jk,kl->il", "ij,jk,kl->li", "bij,bjk,bkl->bil", "i,ij,j->", "ij,j,jk->ik",
            "abc,cd,de->abe", "ij,jk,kl,lm->im", "ab,bc,cd,da->", "ij,kj,kl->il", "ij->ji",
            "ijk->ki", "ij,jk,ik->i"]


def _random_einsums(case, count=64, seed=20261202):
    """jnp.einsum of one, three and four operands of random sizes (so that
    the contraction order changes) sharded at random, a quarter with an
    output sharding asked for: jax.jit's layout and values. Partial sums
    over split contracting letters combine in another order than XLA's, so
    values whose terms cancel differ by more ulps than they are far apart:
    an absolute 1e-3 is also accepted (products of four values up to 3
    over up to 16^3 terms)."""
    import random
    rng = random.Random(seed)
    for n in range(count):
        mesh = rng.choice(list(_MESH_AXES))
        axes = _MESH_AXES[mesh]
        eq = _EINSUMS[n % len(_EINSUMS)]
        terms, out = eq.split("->")
        size = {c: rng.choice([2, 4, 6, 8, 16]) for c in sorted(set(terms) - {","})}
        inputs = []
        for t in terms.split(","):
            shape = [size[c] for c in t]
            inputs.append((tuple(shape), "float32", _random_spec(rng, shape, axes)))
        out_shape = [size[c] for c in out]
        out_spec = _random_spec(rng, out_shape, axes) if n % 4 == 0 and out_shape else None
        case(f"einsum_n_random_{n:03d}", "einsum_n", {"subscripts": eq},
             lambda *xs, e=eq: jnp_einsum(e, xs), inputs, mesh=mesh, out_spec=out_spec, ulps=4,
             atol=1e-3)


def jnp_einsum(eq, xs):
    import jax.numpy as jnp
    return jnp.einsum(eq, *xs)


def lax_slice(u, start, stop, strides):
    from jax import lax
    return lax.slice(u, start, stop, strides)


def lax_dynamic_slice(u, start, sizes):
    from jax import lax
    return lax.dynamic_slice(u, start, sizes)


_SCATTER_MESH_AXES = {"2x4": {"x": 2, "y": 4}, "2x2x2": {"x": 2, "y": 2, "z": 2}, "8": {"x": 8},
                      "2x4_perm2": {"x": 2, "y": 4}, "4x2": {"x": 4, "y": 2},
                      "2x2_data_model": {"data": 2, "model": 2}, "4_data": {"data": 4},
                      "2x2_perm": {"x": 2, "y": 2}}


def _random_scatter_adds(case, count=64, seed=20261201):
    """x.at[..., indices].add(updates) with x, indices and updates sharded
    at random, on meshes of 4 and 8 devices, along a random axis, some with
    an out_sharding: jax.jit's layout (x's splits refined by the updates',
    the larger operand's claiming first). Indices run from below -n to past
    n (wrapped and dropped), with repeats; the values are whole numbers, so
    the sums are exact in any order (jax.jit sums partial scatters where it
    splits the updates' index dimensions)."""
    import random
    rng = random.Random(seed)
    for n in range(count):
        mesh, axes, shape, axis, ishape = _random_indexing(rng, _SCATTER_MESH_AXES, [2, 4, 8, 16])
        ushape = shape[:axis] + ishape + shape[axis + 1:]
        size = shape[axis]
        data = [[float(i) for i in range(_count(shape))],
                [rng.randrange(-size - 2, size + 2) for _ in range(_count(ishape))],
                [float(rng.randrange(-64, 64)) for _ in range(_count(ushape))]]
        inputs = [(tuple(shape), "float32", _random_spec(rng, shape, axes)),
                  (tuple(ishape), "int32", _random_spec(rng, ishape, axes)),
                  (tuple(ushape), "float32", _random_spec(rng, ushape, axes))]
        out_spec = _random_spec(rng, shape, axes) if rng.random() < 0.25 else None
        case(f"scatter_add_random_{n:02d}", "scatter_add", {"axis": axis},
             lambda u, v, w, a=axis: jnp_scatter_add(u, v, w, a), inputs, mesh=mesh,
             out_spec=out_spec, data=data)


def _random_wheres(case, count=128, seed=20261203):
    """jnp.where(cond, x, y): a bool condition and two float32 operands
    sharded at random, each of the result's shape or broadcasting (fewer
    dimensions, or dimensions of size 1), on meshes of 8 devices, a few
    with an out_sharding: jax.jit's choice where the operands of the
    result's size decide and the broadcast ones only refine."""
    import random
    rng = random.Random(seed)
    for n in range(count):
        mesh = rng.choice(list(_MESH_AXES))
        axes = _MESH_AXES[mesh]
        nd = rng.choice([1, 2, 2, 3, 3])
        shape = [rng.choice([2, 4, 8]) for _ in range(nd)]
        inputs = []
        for dtype in ["bool", "float32", "float32"]:
            other = _broadcast_partner(rng, shape, 0.2, 0.4)
            inputs.append((tuple(other), dtype, _random_spec(rng, other, axes)))
        out_shape = [max(s[i - nd + len(s)] if i - nd + len(s) >= 0 else 1 for s, _, _ in inputs)
                     for i in range(nd)]
        out_spec = _random_spec(rng, out_shape, axes) if rng.random() < 0.125 else None
        case(f"where_random_{n:03d}", "where", {}, jnp_where, inputs, mesh=mesh, out_spec=out_spec)


def jnp_where(c, u, v):
    import jax.numpy as jnp
    return jnp.where(c, u, v)


def jnp_scatter_add(x, indices, updates, axis):
    return x.at[(slice(None),) * axis + (indices,)].add(updates)


def jnp_take(u, v, axis):
    import jax.numpy as jnp
    return jnp.take(u, v, axis=axis)


def jnp_reduce(u, op, axes, keep):
    import jax.numpy as jnp
    return (jnp.sum if op == "sum" else jnp.max)(u, axis=axes, keepdims=keep)


def _count(shape):
    c = 1
    for s in shape:
        c *= s
    return c


def jnp_matmul(u, v):
    import jax.numpy as jnp
    return jnp.matmul(u, v)


def jnp_add(u, v):
    import jax.numpy as jnp
    return jnp.add(u, v)


def jnp_concatenate(xs, axis):
    import jax.numpy as jnp
    return jnp.concatenate(xs, axis)


def generate(out_dir: pathlib.Path) -> None:
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding

    meshes = {name: refio.jax_mesh(name) for name in ("2x4", "2x2_data_model", "2x2x2", "8",
                                                          "2x4_perm2", "4x2", "4_data", "2x2_perm")}
    cases = []

    def case(name, op, params, fn, inputs, mesh="2x4", out_spec=None, ulps=0, atol=None,
             data=None):
        m = meshes[mesh]
        args, records = [], []
        for i, (shape, dtype, spec) in enumerate(inputs):
            v = (_values(shape, dtype, i) if data is None or data[i] is None
                 else jnp.asarray(data[i], dtype=dtype).reshape(shape))
            try:
                a = jax.device_put(v, NamedSharding(m, refio.jax_spec(spec)))
            except ValueError:
                # An uneven layout JAX refuses (libspmd takes it, ceil-sized
                # blocks): JAX computes from a replicated input, the value
                # being the same; libspmd's input is laid out by `spec`.
                a = jax.device_put(v, NamedSharding(m, refio.jax_spec([])))
            args.append(a)
            records.append({"spec": spec, "array": refio.array_hex(a)})
        kw = {}
        if out_spec is not None:
            kw["out_shardings"] = NamedSharding(m, refio.jax_spec(out_spec))
        out = jax.jit(fn, **kw)(*args)
        c = {"name": name, "mesh": mesh, "op": op, "params": params, "inputs": records,
             "result": {"spec": refio.spec_dims(out.sharding.spec, out.ndim), "array": refio.array_hex(out)},
             "ulps": ulps}
        if out_spec is not None:
            c["out_spec"] = out_spec
        if atol is not None:
            c["atol"] = atol
        cases.append(c)

    f32 = "float32"
    # Elementwise: a common sharding, meets, conflicts, broadcasting.
    pairs = [("xy_xy", _XY, _XY), ("xy_yx", _XY, _YX), ("x__x", _X_, __X), ("x_y_", _X_, _Y_),
             ("xy_x_", _XY, _X_), ("x__xy", _X_, [["x", "y"], []]), ("_y_x_", __Y, _X_),
             ("rep_xy", _REP, _XY)]
    for tag, a, b in pairs:
        case(f"add_{tag}", "binary", {"op": "add"}, jnp.add, [((8, 8), f32, a), ((8, 8), f32, b)])
    case("mul_xy_vec_y", "binary", {"op": "mul"}, jnp.multiply,
         [((8, 8), f32, _XY), ((8,), f32, [["y"]])])
    case("sub_vec_x_xy", "binary", {"op": "sub"}, jnp.subtract,
         [((8,), f32, [["x"]]), ((8, 8), f32, _XY)])
    case("max_col_y_x_", "binary", {"op": "max"}, jnp.maximum,
         [((8, 1), f32, _Y_), ((8, 8), f32, _X_)])
    case("div_i32_i32", "binary", {"op": "div"}, jnp.true_divide,
         [((8, 8), "int32", _XY), ((8, 8), "int32", _X_)])
    case("add_i32_f16", "binary", {"op": "add"}, jnp.add,
         [((8, 8), "int32", _XY), ((8, 8), "float16", _XY)])
    case("lt_xy_yx", "binary", {"op": "lt"}, jnp.less, [((8, 8), f32, _XY), ((8, 8), f32, _YX)])
    case("pow_xy", "binary", {"op": "pow"}, lambda u, v: jnp.power(jnp.abs(u), v),
         [((8, 8), f32, _XY), ((8, 8), f32, _XY)], ulps=2)
    case("scalar_2x_plus_1", "binary_scalar", {"op": "mul", "scalar": 2.0, "scalar_first": True},
         lambda u: 2.0 * u, [((8, 8), f32, _XY)])
    case("scalar_i32_times_2_5", "binary_scalar", {"op": "mul", "scalar": 2.5, "scalar_first": False},
         lambda u: u * 2.5, [((8, 8), "int32", _XY)])
    case("where_xy", "where", {}, lambda c, u, v: jnp.where(c, u, v),
         [((8, 8), "bool", _XY), ((8, 8), f32, _X_), ((8,), f32, [["y"]])])
    for fname, fn, ulps in [("neg", jnp.negative, 0), ("abs", jnp.abs, 0), ("exp", jnp.exp, 4),
                            ("log", lambda u: jnp.log(jnp.abs(u) + 1), 4), ("sin", jnp.sin, 4),
                            ("cos", jnp.cos, 4), ("tanh", jnp.tanh, 4), ("sqrt", lambda u: jnp.sqrt(jnp.abs(u)), 0),
                            ("relu", jax.nn.relu, 0), ("logistic", jax.nn.sigmoid, 4),
                            ("gelu_tanh", lambda u: jax.nn.gelu(u, approximate=True), 4),
                            ("gelu_exact", lambda u: jax.nn.gelu(u, approximate=False), 4)]:
        params = {"op": fname}
        if fname == "log":
            params = {"op": "log", "prelude": "abs_plus_1"}
        if fname == "sqrt":
            params = {"op": "sqrt", "prelude": "abs"}
        case(f"unary_{fname}_xy", "unary", params, fn, [((8, 8), f32, _XY)], ulps=ulps,
             atol=2e-6 if fname.startswith("gelu") else None)
    case("unary_sin_bf16", "unary", {"op": "sin"}, jnp.sin, [((8, 8), "bfloat16", _X_)], ulps=1)
    case("astype_f32_bf16", "astype", {"dtype": "bfloat16"}, lambda u: u.astype(jnp.bfloat16),
         [((8, 8), f32, _XY)])
    # Floats out of an integer type's range saturate (NaN gives 0), as XLA
    # converts.
    nan, inf = float("nan"), float("inf")
    case("astype_f32_u8_saturates", "astype", {"dtype": "uint8"}, lambda u: u.astype(jnp.uint8),
         [((8,), f32, [["x"]])], data=[[256.0, 300.0, -1.0, -0.5, 255.9, nan, inf, -inf]])
    case("astype_f32_i32_saturates", "astype", {"dtype": "int32"}, lambda u: u.astype(jnp.int32),
         [((8,), f32, [["y"]])],
         data=[[3e9, -3e9, nan, inf, -inf, 2147483520.0, -2147483648.0, -1.5]])
    # where reads any non-zero condition as true, NaN included.
    case("where_float_condition", "where", {}, lambda c, u, v: jnp.where(c, u, v),
         [((8,), f32, [["x"]]), ((8,), "int32", [["x"]]), ((8,), "int32", [])],
         data=[[0.5, -0.25, 0.0, -0.0, nan, 1.0, 2.0, 1e-30], [1, 2, 3, 4, 5, 6, 7, 8],
               [-1, -2, -3, -4, -5, -6, -7, -8]])
    # An empty block's max or min takes no part (3 elements over 4 devices).
    case("reduce_max_i32_empty_block", "reduce", {"op": "max", "axes": [0], "keepdims": False},
         lambda u: jnp.max(u, axis=0), [((3,), "int32", [["y"]])], data=[[-5, -6, -7]])
    case("reduce_min_i32_empty_block", "reduce", {"op": "min", "axes": [0], "keepdims": False},
         lambda u: jnp.min(u, axis=0), [((3,), "int32", [["y"]])], data=[[5, 6, 7]])
    case("reduce_max_bool_empty_block", "reduce", {"op": "max", "axes": [0], "keepdims": False},
         lambda u: jnp.max(u, axis=0), [((3,), "bool", [["y"]])], data=[[False, False, False]])
    # bool products are ORs of ANDs whatever the sharding.
    for tag, a, b in [("rep", _REP, _REP), ("_x_x_", __X, _X_), ("_y_y_", __Y, _Y_)]:
        case(f"matmul_bool_{tag}", "matmul", {}, jnp.matmul,
             [((8, 8), "bool", a), ((8, 8), "bool", b)])
    case("einsum_bool_ij_jk", "einsum", {"subscripts": "ij,jk->k"},
         lambda u, v: jnp.einsum("ij,jk->k", u, v), [((8, 8), "bool", _XY), ((8, 8), "bool", _Y_)])
    case("broadcast_to_vec_y", "broadcast_to", {"shape": [8, 8]}, lambda u: jnp.broadcast_to(u, (8, 8)),
         [((8,), f32, [["y"]])])
    # Reductions: the notebook's sum(axis=0) / sum(axis=1), and the rest.
    for tag, axes, keep in [("sum0", [0], False), ("sum1", [1], False), ("sum_all", None, False),
                            ("sum0_keep", [0], True), ("sum01", [0, 1], False)]:
        case(f"reduce_{tag}_xy", "reduce", {"op": "sum", "axes": axes, "keepdims": keep},
             lambda u, axes=axes, keep=keep: jnp.sum(u, axis=None if axes is None else tuple(axes),
                                                     keepdims=keep),
             [((8, 8), f32, _XY)], ulps=2)
    case("reduce_max1_xy", "reduce", {"op": "max", "axes": [1], "keepdims": False},
         lambda u: jnp.max(u, axis=1), [((8, 8), f32, _XY)])
    case("reduce_mean0_xy", "reduce", {"op": "mean", "axes": [0], "keepdims": False},
         lambda u: jnp.mean(u, axis=0), [((8, 8), f32, _XY)], ulps=2)
    case("reduce_sum_i32_y_", "reduce", {"op": "sum", "axes": [0], "keepdims": False},
         lambda u: jnp.sum(u, axis=0), [((8, 8), "int32", _Y_)])
    case("reduce_sum0_to_y", "reduce", {"op": "sum", "axes": [0], "keepdims": False},
         lambda u: jnp.sum(u, axis=0), [((8, 8), f32, _Y_)], out_spec=[["y"]], ulps=2)
    case("argmax1_xy", "argmax", {"axis": 1}, lambda u: jnp.argmax(u, axis=1), [((8, 8), f32, _XY)])
    case("argmin1_xy", "argmin", {"axis": 1}, lambda u: jnp.argmin(u, axis=1), [((8, 8), f32, _XY)])
    case("argmin0_xy_i32", "argmin", {"axis": 0}, lambda u: jnp.argmin(u, axis=0), [((8, 8), "int32", _XY)])
    case("argmin_last_y_", "argmin", {"axis": -1}, lambda u: jnp.argmin(u, axis=-1),
         [((4, 8, 6), f32, [["y"], [], ["x"]])], out_spec=[[], ["x"]])
    # cumsum: floats drawn at random, so that the order of additions shows
    # (lines of 16 or less, blocks of 16, more than 16 blocks). Over a split
    # axis longer than 16, jit sums each gathered window in an order of its
    # own CPU loop, not the unsplit scan's (docs/differences.md): those
    # cases agree within a tolerance, the rest bit for bit.
    import numpy as np
    draws = np.random.default_rng(20261126)
    for tag, shape, dtype, spec, axis in [
            ("8x8_xy_1", (8, 8), f32, _XY, 1), ("40x8_x__0", (40, 8), f32, _X_, 0),
            ("8x40_xy_1", (8, 40), f32, _XY, 1), ("2x300__y_1", (2, 300), f32, __Y, -1),
            ("4x1200_x__1", (4, 1200), f32, _X_, 1), ("8x40_f16_1", (8, 40), "float16", _XY, 1),
            ("8x40_bf16_1", (8, 40), "bfloat16", _X_, 1),
            ("8x8_i32_0", (8, 8), "int32", _XY, 0), ("8x8_u8_1", (8, 8), "uint8", _XY, 1),
            ("8x8_bool_1", (8, 8), "bool", _XY, 1)]:
        if dtype in (f32, "float16", "bfloat16"):
            data = [draws.standard_normal(shape)]
        elif dtype == "uint8":
            data = [draws.integers(0, 256, shape)]
        elif dtype == "bool":
            data = None
        else:
            data = [draws.integers(-2**31, 2**31, shape)]
        split = spec[axis if axis >= 0 else len(shape) + axis] != [] and shape[axis] > 16
        tol = {} if not split else {"ulps": 16, "atol": 5e-2 if dtype == "float16" else 1e-4}
        case("cumsum_" + tag, "cumsum", {"axis": axis}, lambda u, axis=axis: jnp.cumsum(u, axis=axis),
             [(shape, dtype, spec)], data=data, **tol)
    case("cumsum_to_rep", "cumsum", {"axis": 0}, lambda u: jnp.cumsum(u, axis=0),
         [((8, 8), f32, _XY)], out_spec=[], data=[draws.standard_normal((8, 8))])
    # one_hot: in-range, negative and too large indices; floats that are
    # and are not whole numbers.
    for tag, shape, dtype, spec, n, axis, out in [
            ("8_x_5", (8,), "int32", [["x"]], 5, -1, f32), ("8x4_xy_8_0", (8, 4), "int32", _XY, 8, 0, f32),
            ("8x4_xy_3_1", (8, 4), "int32", _XY, 3, 1, "int32"), ("8_u8_4", (8,), "uint8", [["y"]], 4, -1, "bfloat16"),
            ("8_f32_4", (8,), f32, [["x"]], 4, -1, f32), ("8_i32_0", (8,), "int32", [["x"]], 0, -1, f32)]:
        k = np.arange(int(np.prod(shape))).reshape(shape)
        data = [(k * 0.5 - 1.0) if dtype == f32 else (k % 11 - (0 if dtype == "uint8" else 2))]
        case("one_hot_" + tag, "one_hot", {"num_classes": n, "axis": axis, "dtype": out},
             lambda u, n=n, axis=axis, out=out: jax.nn.one_hot(u, n, dtype=out, axis=axis),
             [(shape, dtype, spec)], data=data)
    # take: the embedding lookup and the notebook-sized cases of every
    # placement rule (the operand's dimensions claim their axes first).
    for tag, a_spec, i_spec, axis in [
            ("rows_y_x", __Y, [["x"]], 0), ("rows_x_y", _X_, [["y"]], 0), ("rows_xy_xy", _XY, [["x", "y"]], 0),
            ("cols_xy_x", _XY, [["x"]], 1), ("cols_y__x", [["y"], []], [["x"]], 1), ("rows__x_x", [[], ["x"]], [["x"]], 0),
            ("rows_rep_rep", _REP, _REP, 0)]:
        idx = np.array([7, -1, 0, 9, 3, -9, 2, 5])
        case("take_" + tag, "take", {"axis": axis}, lambda u, v, axis=axis: jnp.take(u, v, axis=axis),
             [((8, 8), f32, a_spec), ((8,), "int32", i_spec)], data=[None, idx])
    case("take_2d_indices", "take", {"axis": 0}, lambda u, v: jnp.take(u, v, axis=0),
         [((8, 8), f32, __Y), ((4, 4), "int32", _XY)], data=[None, (np.arange(16) * 3 % 8).reshape(4, 4)])
    case("take_i32_values", "take", {"axis": 1}, lambda u, v: jnp.take(u, v, axis=1),
         [((8, 8), "int32", _XY), ((8,), "int32", [["x"]])], data=[None, np.array([0, 9, -1, 3, 8, -8, 1, 2])])
    # scatter_add: layouts where jax.jit keeps the updates' index
    # dimensions whole, so it adds in update order and float sums that
    # round show (values of no common scale); repeated, wrapped and dropped
    # indices; x's split refined, kept, or cut by the updates'.
    rs = np.random.RandomState(7)
    sidx = np.array([7, -1, 0, 9, 3, -9, 7, 7, 0, -8, 2, 5])
    for tag, x_spec, u_spec, axis in [
            ("rows_rep_rep", _REP, _REP, 0), ("rows_y_x", __Y, __Y, 0), ("rows_xy_", _XY, __Y, 0),
            ("rows__x_xy", __X, [[], ["x", "y"]], 0), ("rows__x_y", __X, __Y, 0),
            ("cols_x_x", _X_, _X_, 1), ("cols_yx_", _YX, [["y"]], 1), ("cols__x", __X, _REP, 1)]:
        ushape = (12, 8) if axis == 0 else (8, 12)
        case("scatter_add_" + tag, "scatter_add", {"axis": axis},
             lambda u, v, w, axis=axis: jnp_scatter_add(u, v, w, axis),
             [((8, 8), f32, x_spec), ((12,), "int32", _REP), (ushape, f32, u_spec)],
             data=[rs.standard_normal(64).astype(np.float32),
                   sidx, (rs.standard_normal(96) * 10.0 ** rs.randint(-3, 4, 96)).astype(np.float32)])
    case("scatter_add_2d_indices", "scatter_add", {"axis": 1}, lambda u, v, w: jnp_scatter_add(u, v, w, 1),
         [((4, 8), f32, _X_), ((3, 4), "int32", _REP), ((4, 3, 4), f32, _X_)],
         data=[None, (np.arange(12) * 5 % 11 - 2).reshape(3, 4), rs.standard_normal(48).astype(np.float32)])
    case("scatter_add_out_sharding", "scatter_add", {"axis": 0}, lambda u, v, w: jnp_scatter_add(u, v, w, 0),
         [((8, 8), f32, _XY), ((12,), "int32", _REP), ((12, 8), f32, __Y)], out_spec=_YX,
         data=[None, sidx, rs.standard_normal(96).astype(np.float32)])
    for dtype in ["float16", "bfloat16", "int32", "uint8"]:
        case("scatter_add_" + dtype, "scatter_add", {"axis": 0}, lambda u, v, w: jnp_scatter_add(u, v, w, 0),
             [((8, 4), dtype, __Y), ((12,), "int32", _REP), ((12, 4), dtype, __Y)],
             data=[None, sidx, None if dtype in ("int32", "uint8")
                   else (rs.standard_normal(48) * 100).astype(np.float32)])
    case("scatter_add_i32_wraps", "scatter_add", {"axis": 0}, lambda u, v, w: jnp_scatter_add(u, v, w, 0),
         [((4,), "int32", [["x"]]), ((4,), "int32", _REP), ((4,), "int32", _REP)],
         data=[[2**31 - 2, -2**31, 5, 0], [0, 0, 1, 3], [1, 2, -1, 7]])
    case("scatter_add_i32_f32_updates", "scatter_add", {"axis": 0},
         lambda u, v, w: jnp_scatter_add(u, v, w, 0),
         [((8,), "int32", [["y"]]), ((8,), "int32", _REP), ((8,), f32, _REP)],
         data=[None, [0, 1, 2, 3, 4, 5, 6, 6], [2.7, -2.7, float("nan"), 3e10, -3e10, 0.5, 1.5, 1.5]])
    case("scatter_add_f16_f32_updates", "scatter_add", {"axis": 0},
         lambda u, v, w: jnp_scatter_add(u, v, w, 0),
         [((4, 4), "float16", _REP), ((8,), "int32", _REP), ((8, 4), f32, __Y)],
         data=[None, [0, 1, 0, 1, 2, 2, 3, 0], (rs.standard_normal(32) * 1000).astype(np.float32)])
    case("scatter_add_bool_i32_updates", "scatter_add", {"axis": 0},
         lambda u, v, w: jnp_scatter_add(u, v, w, 0),
         [((8,), "bool", [["x"]]), ((4,), "int32", _REP), ((4,), "int32", _REP)],
         data=[[0, 0, 1, 1, 0, 1, 0, 0], [0, 2, 3, 3], [1, -1, 1, -1]])
    case("scatter_add_f32_subnormals", "scatter_add", {"axis": 0},
         lambda u, v, w: jnp_scatter_add(u, v, w, 0),
         [((4,), f32, _REP), ((4,), "int32", _REP), ((4,), f32, _REP)],
         data=[[1e-39, 1e-39, 2e-38, 0.0], [0, 1, 2, 3], [0.0, 1e-39, -1.9e-38, float("nan")]])
    case("softmax1_xy", "softmax", {"axis": 1, "log": False}, lambda u: jax.nn.softmax(u, axis=1),
         [((8, 8), f32, _XY)], ulps=8)
    case("log_softmax1_x_", "softmax", {"axis": -1, "log": True},
         lambda u: jax.nn.log_softmax(u, axis=-1), [((8, 8), f32, _X_)], ulps=8)
    # Contractions: the notebook's layer, FSDP, tensor parallelism.
    for tag, a, b in [("x__y", _X_, __Y), ("_x_x_", __X, _X_), ("xy_y_", _XY, _Y_),
                      ("xy_yx", _XY, _YX), ("x__rep", _X_, _REP), ("rep__y", _REP, __Y),
                      ("x__x_", _X_, _X_), ("_x_rep", __X, _REP), ("yx_y_", _YX, _Y_)]:
        case(f"matmul_{tag}", "matmul", {}, jnp.matmul, [((8, 8), f32, a), ((8, 8), f32, b)], ulps=4)
    case("matmul__y_y__to_y", "matmul", {}, jnp.matmul, [((8, 8), f32, __Y), ((8, 8), f32, _Y_)],
         out_spec=[["y"], []], ulps=4)
    case("matmul_tp_column", "matmul", {}, jnp.matmul,
         [((4, 8), f32, [[], ["model"]]), ((8, 16), f32, [[], ["model"]])], mesh="2x2_data_model", ulps=4)
    case("matmul_tp_row", "matmul", {}, jnp.matmul,
         [((4, 16), f32, [[], ["model"]]), ((16, 8), f32, [["model"], []])], mesh="2x2_data_model",
         out_spec=[[], ["model"]], ulps=4)
    case("einsum_bhqd_bhkd", "einsum", {"subscripts": "bhqd,bhkd->bhqk"},
         lambda q, k: jnp.einsum("bhqd,bhkd->bhqk", q, k),
         [((2, 2, 4, 4), f32, [["x"], [], ["y"]]), ((2, 2, 4, 4), f32, [["x"]])], ulps=4)
    case("einsum_bhqk_bhkd", "einsum", {"subscripts": "bhqk,bhkd->bhqd"},
         lambda p, v: jnp.einsum("bhqk,bhkd->bhqd", p, v),
         [((2, 2, 4, 4), f32, [["x"], [], ["y"]]), ((2, 2, 4, 4), f32, [["x"]])], ulps=4)
    case("einsum_btd_df", "einsum", {"subscripts": "btd,df->btf"},
         lambda t, w: jnp.einsum("btd,df->btf", t, w),
         [((2, 4, 8), f32, [["x"]]), ((8, 8), f32, [[], ["y"]])], ulps=4)
    # Shape ops.
    case("transpose_xy", "transpose", {"perm": None}, jnp.transpose, [((8, 8), f32, _XY)])
    case("reshape_xy_64", "reshape", {"shape": [64]}, lambda u: u.reshape(64), [((8, 8), f32, _XY)])
    case("reshape_x__2_4_8", "reshape", {"shape": [2, 4, 8]}, lambda u: u.reshape(2, 4, 8),
         [((8, 8), f32, _X_)])
    case("reshape_xy_8_2_4", "reshape", {"shape": [8, 2, 4]}, lambda u: u.reshape(8, 2, 4),
         [((8, 8), f32, _XY)])
    case("slice_xy_2_6", "slice", {"start": [2, 0], "stop": [6, 8]}, lambda u: u[2:6],
         [((8, 8), f32, _XY)])
    case("slice_strided_xy_2", "slice_strided", {"start": [0, 0], "stop": [8, 8], "strides": [2, 1]},
         lambda u: u[::2], [((8, 8), f32, _XY)])
    case("slice_strided_xy_3_2", "slice_strided", {"start": [1, 0], "stop": [8, 8], "strides": [3, 2]},
         lambda u: u[1::3, ::2], [((8, 8), f32, _XY)])
    case("slice_strided_xy_8", "slice_strided", {"start": [0, 1], "stop": [8, 8], "strides": [8, 4]},
         lambda u: u[::8, 1::4], [((8, 8), f32, _XY)])
    case("slice_strided_x__to_y", "slice_strided", {"start": [0, 0], "stop": [8, 8], "strides": [2, 2]},
         lambda u: u[::2, ::2], [((8, 8), f32, _X_)], out_spec=__Y)
    case("dynamic_slice_xy_rows", "dynamic_slice", {"start": [3, 1], "sizes": [4, 8]},
         lambda u: jax.lax.dynamic_slice(u, (3, 1), (4, 8)), [((8, 8), f32, _XY)])
    case("dynamic_slice_xy_clamped", "dynamic_slice", {"start": [-1, 7], "sizes": [8, 2]},
         lambda u: jax.lax.dynamic_slice(u, (-1, 7), (8, 2)), [((8, 8), f32, _XY)])
    case("dynamic_slice_xy_to_x_", "dynamic_slice", {"start": [2, 0], "sizes": [4, 4]},
         lambda u: jax.lax.dynamic_slice(u, (2, 0), (4, 4)), [((8, 8), f32, _XY)], out_spec=_X_)
    case("concatenate0_xy_xy", "concatenate", {"axis": 0}, lambda u, v: jnp.concatenate([u, v], 0),
         [((8, 8), f32, _XY), ((8, 8), f32, _XY)])

    _random_concatenations(case)
    _random_elementwise(case)
    _random_matmuls(case)
    _random_reshapes(case)
    _random_reductions(case)
    _random_takes(case)
    _random_slices(case)
    _random_einsums(case)
    _random_scatter_adds(case)
    _random_wheres(case)
    # A shared axis at a tie: the dimension an earlier operand splits whole
    # takes it (the first operand's layout wins); a broadcast operand only
    # refines what the result-sized ones leave.
    a, b = [[], ["x"], ["z", "y"]], [["z"], ["x", "y"]]
    case("add_tie_first_whole", "binary", {"op": "add"}, jnp_add,
         [((8, 8, 8), f32, a), ((8, 8, 8), f32, b)], mesh="2x2x2")
    case("add_tie_first_whole_swapped", "binary", {"op": "add"}, jnp_add,
         [((8, 8, 8), f32, b), ((8, 8, 8), f32, a)], mesh="2x2x2")
    case("where_broadcast_refines", "where", {}, jnp_where,
         [((4, 4, 4), "bool", [["x"]]), ((4,), f32, [["y"]]), ((4,), f32, [["x"]])])
    case("where_all_broadcast_conflict", "where", {}, jnp_where,
         [((2,), "bool", [["x"]]), ((2, 1), f32, []), ((1, 2), f32, [[], ["y"]])], mesh="2x2x2")
    # Zeros of both signs and subnormals through max, min, sum and cumsum:
    # IEEE maximum / minimum under DAZ over two values or more (-0 below
    # +0), one value copied as it is, and across devices XLA's collective,
    # which keeps the first of equals.
    zeros = [[-0.0, 0.0], [0.0, -0.0], [1e-40, -1e-40], [-1e-40, -0.0], [1e-40, 1e-40],
             [-1e-40, -1e-40], [nan, -0.0], [-0.0, 2.5]]
    for op, fn in [("max", jnp.max), ("min", jnp.min)]:
        case(f"reduce_{op}1_signed_zeros", "reduce", {"op": op, "axes": [1], "keepdims": False},
             lambda u, fn=fn: fn(u, axis=1), [((8, 2), f32, _X_)], data=[zeros])
        case(f"reduce_{op}0_signed_zeros", "reduce", {"op": op, "axes": [0], "keepdims": False},
             lambda u, fn=fn: fn(u, axis=0), [((2, 8), f32, [[], ["y"]])],
             data=[np.array(zeros).T.tolist()])
        case(f"reduce_{op}1_signed_zeros_bf16", "reduce", {"op": op, "axes": [1], "keepdims": False},
             lambda u, fn=fn: fn(u, axis=1), [((8, 2), "bfloat16", _X_)],
             data=[[[v * 1e1 if abs(v) == 1e-40 else v for v in r] for r in zeros]])
        case(f"reduce_{op}_one_value", "reduce", {"op": op, "axes": [1], "keepdims": False},
             lambda u, fn=fn: fn(u, axis=1), [((8, 1), f32, _X_)], data=[[r[0] for r in zeros]])
        for tag, n, spec_data in [("8", 8, [-0.0, 0.0, -0.0, -0.0, -0.0, -0.0, -0.0, -0.0]),
                                  ("8_sub", 8, [1e-40, -0.0, -0.0, -0.0, -0.0, -0.0, -0.0, 1e-40]),
                                  ("16", 16, [-0.0, 0.0] * 8), ("16_pos", 16, [0.0, -0.0] * 8)]:
            case(f"reduce_{op}_signed_zeros_across_{tag}", "reduce",
                 {"op": op, "axes": [0], "keepdims": False}, lambda u, fn=fn: fn(u, axis=0),
                 [((n,), f32, [["x", "y"]])], data=[spec_data])
    case("reduce_sum_one_value", "reduce", {"op": "sum", "axes": [1], "keepdims": False},
         lambda u: jnp.sum(u, axis=1), [((8, 1), f32, _X_)], data=[[r[0] for r in zeros]])
    case("cumsum_one_value", "cumsum", {"axis": 1}, lambda u: jnp.cumsum(u, axis=1),
         [((8, 1), f32, _X_)], data=[[r[0] for r in zeros]])
    case("cumsum_signed_zeros", "cumsum", {"axis": 1}, lambda u: jnp.cumsum(u, axis=1),
         [((8, 2), f32, _X_)], data=[zeros])

    refio.write_json(out_dir / "cases.json",
                     {"meshes": refio.mesh_table(list(meshes)), "cases": cases})


if __name__ == "__main__":
    import sys
    generate(pathlib.Path(sys.argv[1]))
