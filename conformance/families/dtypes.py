"""JAX's element types under the global ops: every pair of the twelve
dtypes libspmd has (float32, float64, float16, bfloat16, int32, int64, uint8,
bool, int8, int16, uint16, uint32) through add and mul, jnp.astype between
every pair, and the ops of one operand on the narrow integers.

Writes tests/conformance/dtypes/cases.json in the propagation family's form
(conformance/families/propagation.py: op, params, inputs, JAX's output
sharding and values), read by the same C runner.

libspmd's types are JAX's with two rules of its own (docs/differences.md):
two arrays promote as jnp.promote_types does with jax_enable_x64 on (uint32
with int32 is int64), while what JAX derives from its default types (a sum's
type, a Python float scalar's, argmax's int32) is what it gives with x64
off, as for the first eight types. So the cases of two typed operands and
of conversions run under jax.enable_x64(True), and the cases of sums,
scalars and indices with x64 off (no 64-bit operand among them).
"""

from __future__ import annotations

import pathlib

import refio

_XY = [["x"], ["y"]]
_X_ = [["x"], []]
__Y = [[], ["y"]]
_REP = []

_ALL = ["float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8", "bool",
        "int8", "int16", "uint16", "uint32"]
_NEW = ["int8", "int16", "uint16", "uint32"]
_SHORT = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16",
          "int32": "i32", "int64": "i64", "uint8": "u8", "bool": "bool", "int8": "i8",
          "int16": "i16", "uint16": "u16", "uint32": "u32"}


# Integer ranges: (lowest, count of values).
_RANGE = {"int8": (-2**7, 2**8), "uint8": (0, 2**8), "int16": (-2**15, 2**16),
          "uint16": (0, 2**16), "int32": (-2**31, 2**32), "uint32": (0, 2**32),
          "int64": (-2**40, 2**41)}  # int64: values a double holds exactly


def _values(n, dtype, salt):
    """n values of dtype spread over its range, its extremes first: integer
    sums and products wrap, conversions saturate and round."""
    import numpy as np
    k = np.arange(n, dtype=np.int64)
    if dtype == "bool":
        return ((k * 7 + salt) % 3 == 0)
    if dtype in _RANGE:
        lo, count = _RANGE[dtype]
        v = (k * 2654435761 + salt * 40503) % count + lo
        edges = [lo, lo + count - 1, 0, 1 if lo == 0 else -1]
        v[:min(n, 4)] = edges[:min(n, 4)]
        return v.astype(dtype)
    v = ((k * 37 + salt * 11) % 97 - 48) / 16.0 * (1.0 + salt)
    return v.astype(np.float64)


# Values that test conversions: fractions either side of zero, each
# integer type's bounds and past them, NaN and infinities, and integers
# that round differently through float32 (2^24 + 1, 2^24 + 2^15 + 1).
_FLOAT_SOURCES = [300.7, -300.7, 127.9, -128.9, 1e10, -1e10, float("nan"), float("inf"),
                  float("-inf"), -1.0, 65535.9, 70000.0, 4294967295.0, 5e9, -0.5, 0.0,
                  32767.5, -32768.9, 255.5, 2.5, -2.5, 16777217.0, 16809985.0, 2147483648.0,
                  -2147483649.0, 1.5, 65504.0, -65519.0, 3.0, 100.25, -7.75, 1e-3]
_INT_SOURCES = [0, 1, -1, 127, 128, -128, -129, 255, 256, 300, 32767, 32768, -32769, 65535,
                65536, 70000, 2147483647, -2147483648, 4294967295, 16777217, 16809985, 2049,
                257, -300, 65521, 123456789, -123456789, 3000000000, 44, 1000, -1000, 7]


def _source(dtype):
    """The 32 values a conversion converts, as `dtype` holds them (integers
    wrapped into its range, floats rounded to it)."""
    import numpy as np
    import jax.numpy as jnp
    if dtype == "bool":
        return np.array([i % 3 == 0 for i in range(32)])
    if dtype in _RANGE:
        lo, count = (_RANGE[dtype] if dtype != "int64" else (-2**63, 2**64))
        return np.array([(v - lo) % count + lo for v in _INT_SOURCES], dtype=dtype)
    return np.asarray(jnp.asarray(np.array(_FLOAT_SOURCES, dtype=np.float64)).astype(dtype))


def generate(out_dir: pathlib.Path) -> None:
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import NamedSharding

    meshes = {name: refio.jax_mesh(name) for name in ("2x4",)}
    cases = []

    def case(name, op, params, fn, inputs, mesh="2x4", ulps=0):
        """inputs: (spec, numpy array of the dtype) each."""
        m = meshes[mesh]
        args, records = [], []
        for spec, v in inputs:
            a = jax.device_put(jnp.asarray(v), NamedSharding(m, refio.jax_spec(spec)))
            assert str(a.dtype) == str(np.asarray(v).dtype), (name, a.dtype, v.dtype)
            args.append(a)
            records.append({"spec": spec, "array": refio.array_hex(a)})
        out = jax.jit(fn)(*args)
        cases.append({"name": name, "mesh": mesh, "op": op, "params": params, "inputs": records,
                      "result": {"spec": refio.spec_dims(out.sharding.spec, out.ndim),
                                 "array": refio.array_hex(out)},
                      "ulps": ulps})

    def arr(dtype, shape, salt):
        n = int(np.prod(shape))
        v = _values(n, dtype, salt)
        return np.asarray(jnp.asarray(v).astype(dtype)).reshape(shape)

    with jax.enable_x64(True):
        # Every pair, both ways: the promoted type and its values (wrapping
        # integer arithmetic, integers meeting 16-bit floats).
        for a in _ALL:
            for b in _ALL:
                x, y = arr(a, (4, 8), 0), arr(b, (4, 8), 1)
                case(f"add_{_SHORT[a]}_{_SHORT[b]}", "binary", {"op": "add"}, jnp.add,
                     [(_XY, x), (_X_, y)])
                if a in _NEW or b in _NEW:
                    case(f"mul_{_SHORT[a]}_{_SHORT[b]}", "binary", {"op": "mul"}, jnp.multiply,
                         [(_XY, x), (_XY, y)])
        # Comparisons and max across signedness: uint32 against int32 meet in int64.
        for a, b in [("uint32", "int32"), ("uint32", "int8"), ("uint16", "int16"), ("int8", "uint8")]:
            x, y = arr(a, (4, 8), 2), arr(b, (4, 8), 3)
            for op, fn in [("lt", jnp.less), ("eq", jnp.equal), ("max", jnp.maximum), ("min", jnp.minimum)]:
                case(f"{op}_{_SHORT[a]}_{_SHORT[b]}", "binary", {"op": op}, fn, [(_XY, x), (__Y, y)])
        # jnp.astype between every pair.
        for a in _ALL:
            x = _source(a).reshape(4, 8)
            for b in _ALL:
                if a == b:
                    continue
                case(f"astype_{_SHORT[a]}_{_SHORT[b]}", "astype", {"dtype": b},
                     lambda u, b=b: u.astype(b), [(_XY, x)])
        # Integer products: the promoted type, wrapped (int8 @ int8 is int8).
        for a, b in [("int8", "int8"), ("int16", "int16"), ("uint16", "uint16"), ("uint32", "uint32"),
                     ("int8", "uint8"), ("uint32", "int32"), ("uint16", "int8"), ("int8", "float16")]:
            x, y = arr(a, (4, 8), 4), arr(b, (8, 4), 5)
            case(f"matmul_{_SHORT[a]}_{_SHORT[b]}", "matmul", {}, jnp.matmul, [(_X_, x), (__Y, y)])

    # x64 off: the types JAX derives from its defaults.
    for t in _NEW + ["uint8", "bool"]:
        x = arr(t, (4, 8), 6)
        s = _SHORT[t]
        for op, fn in [("sum", jnp.sum), ("max", jnp.max), ("min", jnp.min), ("mean", jnp.mean)]:
            if t == "bool" and op != "sum":
                continue
            case(f"reduce_{op}_all_{s}", "reduce", {"op": op, "axes": None, "keepdims": False},
                 fn, [(_XY, x)])
            case(f"reduce_{op}0_{s}", "reduce", {"op": op, "axes": [0], "keepdims": False},
                 lambda u, fn=fn: fn(u, axis=0), [(_XY, x)])
        if t == "bool":
            continue
        for axis in (0, 1):
            case(f"argmax{axis}_{s}", "argmax", {"axis": axis},
                 lambda u, axis=axis: jnp.argmax(u, axis=axis), [(_XY, x)])
            case(f"argmin{axis}_{s}", "argmin", {"axis": axis},
                 lambda u, axis=axis: jnp.argmin(u, axis=axis), [(_XY, x)])
            case(f"cumsum{axis}_{s}", "cumsum", {"axis": axis},
                 lambda u, axis=axis: jnp.cumsum(u, axis=axis), [(_XY, x)])
        for op, fn in [("neg", jnp.negative), ("abs", jnp.abs), ("sin", jnp.sin)]:
            case(f"unary_{op}_{s}", "unary", {"op": op}, fn, [(_XY, x)], ulps=1 if op == "sin" else 0)
        case(f"div_{s}", "binary", {"op": "div"}, jnp.divide, [(_XY, x), (_XY, arr(t, (4, 8), 7))])
        # Python scalars: integral ones keep the type, converted to it
        # wrapping (int8 and 300 meet as 44) and the op wrapping too;
        # fractional ones give float32.
        lo, count = _RANGE[t]
        for tag, op, scalar, first in [("plus_hi", "add", lo + count - 1, False),
                                       ("times_3", "mul", 3, False),
                                       ("minus_from_5", "sub", 5, True),
                                       ("plus_1_5", "add", 1.5, False),
                                       ("gt_7", "gt", 7, False),
                                       ("max_lo", "max", lo, False),
                                       ("plus_300", "add", 300, False),
                                       ("plus_minus_1", "add", -1, False),
                                       ("gt_300", "gt", 300, False),
                                       ("times_70000", "mul", 70000, False),
                                       ("minus_129_from", "sub", -129, True)]:
            if scalar > 2**31 - 1:  # JAX (x64 off) parses a scalar as int32 first
                scalar = 2**31 - 1
            fn = {"add": jnp.add, "mul": jnp.multiply, "sub": jnp.subtract, "gt": jnp.greater,
                  "max": jnp.maximum}[op]
            f = (lambda u, fn=fn, c=scalar: fn(c, u)) if first else (lambda u, fn=fn, c=scalar: fn(u, c))
            case(f"scalar_{s}_{tag}", "binary_scalar",
                 {"op": op, "scalar": scalar, "scalar_first": first}, f, [(_XY, x)])
        # The type as indices (take, one_hot) and as values taken.
        idx = np.array([7, 0, 3, 9, 1, 5, 2, 6] if t.startswith("u") else [7, -1, 0, 9, 3, -9, 2, 5])
        i = idx.astype(t)
        case(f"take_index_{s}", "take", {"axis": 0}, lambda u, v: jnp.take(u, v, axis=0),
             [(__Y, arr("float32", (8, 4), 8)), ([["x"]], i)])
        case(f"take_values_{s}", "take", {"axis": 1}, lambda u, v: jnp.take(u, v, axis=1),
             [(_XY, x), ([["x"]], np.array([0, 9, -1, 3, 8, -8, 1, 2], dtype="int32"))])
        case(f"one_hot_{s}", "one_hot", {"num_classes": 10, "axis": -1, "dtype": t},
             lambda u, t=t: jax.nn.one_hot(u, 10, dtype=t), [([["x"]], i)])

    refio.write_json(out_dir / "cases.json", {"meshes": refio.mesh_table(list(meshes)), "cases": cases})


if __name__ == "__main__":
    import sys
    generate(pathlib.Path(sys.argv[1]))
