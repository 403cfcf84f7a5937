"""Family 6, random numbers: jax.random with the default implementation
(threefry2x32, jax_threefry_partitionable=True) on 8 CPU devices.

Writes random/manifest.txt and one raw little-endian file per array. The
manifest is plain text, one record per line, fields separated by single
spaces (no JSON reader needed); lines starting with '#' are comments:

  seed   <seed> <w0> <w1>
      np.asarray(jax.random.PRNGKey(seed)) == [w0, w1]; seed is a decimal
      integer taken modulo 2^64 (x64 semantics; seeds >= 2^32 or < 0 are
      generated with jax_enable_x64).
  split  <w0> <w1> <n> <k0w0> <k0w1> ... <k(n-1)w0> <k(n-1)w1>
      jax.random.split(key, n) of the key [w0, w1].
  fold   <w0> <w1> <data> <r0> <r1>
      jax.random.fold_in(key, data) == [r0, r1], data a uint32.
  array  <name> <op> <dtype> <shape> <w0> <w1> <minval> <maxval> <file>
      op is bits, uniform, normal or truncated_normal; dtype a numpy name
      (uint8, uint16, uint32, uint64, float16, bfloat16, float32, float64); shape
      comma-separated sizes, or '-' for a scalar; minval/maxval (uniform:
      the range; truncated_normal: lower and upper; else 0 and 1) in C99
      hex-float form ('inf' and '-inf' for infinite bounds); file holds the
      row-major values, the 16-bit floats as their bits.
  summary <name> <op> <dtype> <shape> <w0> <w1> <bitsum> <sum> <stride> <file>
      for an array too large to commit: bitsum is the sum of the elements'
      bit patterns (as unsigned integers of the dtype's width) modulo 2^64,
      sum the float64 sum of the values (numpy's, hex float), and
      file holds elements 0, stride, 2*stride, ... of the flattened array.

Run by conformance/generate.py, or alone (development):
    python conformance/families/random.py OUT_DIR
"""

from __future__ import annotations

import os
import pathlib
import sys

if __name__ == "__main__":
    # Run as a script, this file's folder heads sys.path, where the file's own
    # name would shadow the standard library's random module.
    _here = pathlib.Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if pathlib.Path(p or ".").resolve() != _here]

# Keys used by the array cases: name -> how the key is made.
_SEEDS = [0, 1, 42, 1234567, 2**31 - 1, 2**32 - 1, 2**32 + 5, 0x0123456789ABCDEF,
          2**64 - 1]
_SPLITS = [(0, 2), (0, 3), (42, 5), (1234567, 1)]
_FOLDS = [(0, 0), (0, 7), (42, 1), (42, 2**32 - 1), (1234567, 123456789)]

_SHAPES = [(), (1,), (7,), (1000,), (4, 10), (10, 10), (13, 17), (3, 5, 7), (2, 3, 4, 5),
           (0,), (3, 0)]


def _fmt_shape(shape) -> str:
    return ",".join(str(d) for d in shape) if len(shape) else "-"


def _shape_name(shape) -> str:
    return "x".join(str(d) for d in shape) if len(shape) else "scalar"


class _X64:
    """jax_enable_x64 on for the block (uint64 bits, float64 draws, seeds
    wider than 32 bits), restored afterwards."""

    def __enter__(self):
        import jax
        self._old = jax.config.jax_enable_x64
        jax.config.update("jax_enable_x64", True)

    def __exit__(self, *exc):
        import jax
        jax.config.update("jax_enable_x64", self._old)


def _needs_x64(dtype: str) -> bool:
    return dtype in ("uint64", "float64")


def _key_of(seed: int):
    import jax
    import numpy as np
    if 0 <= seed < 2**32:
        return jax.random.PRNGKey(seed)
    with _X64():
        return jax.numpy.asarray(np.asarray(jax.random.PRNGKey(np.uint64(seed % 2**64))))


def _words(key) -> tuple[int, int]:
    import numpy as np
    k = np.asarray(key, dtype=np.uint32)
    return int(k[0]), int(k[1])


def _draw(op: str, key, shape, dtype: str, minval: float, maxval: float):
    """The array JAX draws, as numpy, with the output sharded over 8
    devices when the shape allows it; also checks that JAX itself gives the
    same values unsharded (the property per-shard generation rests on).

    truncated_normal's bounds are passed to the jitted function as arguments,
    so its erf runs in XLA's compiled code as in an eager call; as constants,
    XLA would fold erf(bound / sqrt2) at compile time with another erf
    (docs/random.md)."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    dt = jnp.dtype(dtype)

    def f(k, *bounds):
        if op == "bits":
            return jax.random.bits(k, shape, dt)
        if op == "uniform":
            return jax.random.uniform(k, shape, dt, minval, maxval)
        if op == "truncated_normal":
            return jax.random.truncated_normal(k, bounds[0], bounds[1], shape, dt)
        return jax.random.normal(k, shape, dt)

    args = (key, minval, maxval) if op == "truncated_normal" else (key,)
    plain = np.asarray(jax.jit(f)(*args))
    if len(shape) and shape[0] % 8 == 0 and shape[0] > 0:
        mesh = Mesh(np.array(jax.devices()[:8]), ("x",))
        sharded = jax.jit(f, out_shardings=NamedSharding(mesh, P("x")))(*args)
        if not np.array_equal(np.asarray(sharded).view(np.uint8), plain.view(np.uint8)):
            raise SystemExit(f"JAX's {op} {dtype}{shape} differs when sharded")
    if op == "truncated_normal":
        eager = np.asarray(jax.random.truncated_normal(key, minval, maxval, shape, dt))
        if not np.array_equal(_bits_view(eager.reshape(-1)), _bits_view(plain.reshape(-1))):
            raise SystemExit(f"JAX's {op} {dtype}{shape} differs when called eagerly")
    return plain


def _bits_view(a):
    """The elements' bit patterns as unsigned integers of the same width."""
    import numpy as np
    width = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]
    return np.ascontiguousarray(a).view(width)


def _raw(a) -> bytes:
    """Row-major little-endian bytes (16-bit floats as their bits)."""
    b = _bits_view(a)
    return b.astype(b.dtype.newbyteorder("<"), copy=False).tobytes()


def _cases():
    """(name, op, dtype, shape, seed-or-key-name, minval, maxval)."""
    out = []
    keys = ["seed0", "seed42", "split0_3_1", "fold42_7"]
    for key in keys:
        for shape in _SHAPES:
            sn = _shape_name(shape)
            out.append((f"bits_u32_{key}_{sn}", "bits", "uint32", shape, key, 0.0, 1.0))
            out.append((f"uniform_f32_{key}_{sn}", "uniform", "float32", shape, key, 0.0, 1.0))
            out.append((f"normal_f32_{key}_{sn}", "normal", "float32", shape, key, 0.0, 1.0))
    for shape in [(7,), (10, 10), (3, 5, 7), (1000,)]:
        sn = _shape_name(shape)
        for key in ("seed0", "fold42_7"):
            out.append((f"bits_u8_{key}_{sn}", "bits", "uint8", shape, key, 0.0, 1.0))
            out.append((f"bits_u16_{key}_{sn}", "bits", "uint16", shape, key, 0.0, 1.0))
            out.append((f"bits_u64_{key}_{sn}", "bits", "uint64", shape, key, 0.0, 1.0))
            for dt, tag in (("float64", "f64"), ("float16", "f16"), ("bfloat16", "bf16")):
                out.append((f"uniform_{tag}_{key}_{sn}", "uniform", dt, shape, key, 0.0, 1.0))
                out.append((f"normal_{tag}_{key}_{sn}", "normal", dt, shape, key, 0.0, 1.0))
    for dt, tag in (("float32", "f32"), ("float64", "f64"), ("float16", "f16"),
                    ("bfloat16", "bf16")):
        for lo, hi in ((-2.5, 7.0), (-1.0, 1.0), (3.0, 3.125), (1e-3, 0.1)):
            out.append((f"uniform_{tag}_seed1_range{lo:g}_{hi:g}_13x17", "uniform", dt, (13, 17),
                        "seed1", lo, hi))
    # truncated_normal(key, lower, upper, shape, dtype): symmetric, asymmetric,
    # half-infinite, far-tail and unbounded intervals.
    bounds = [(-2.0, 2.0), (-1.0, 3.5), (0.0, _INF), (-_INF, -1.5), (2.5, 4.0), (-_INF, _INF)]
    for key in ("seed0", "seed42", "fold42_7"):
        for lo, hi in bounds:
            for shape in [(10, 10), (1000,)]:
                out.append((_trunc_name("f32", key, lo, hi, shape), "truncated_normal", "float32",
                            shape, key, lo, hi))
    for shape in [(), (7,), (3, 0), (3, 5, 7)]:
        out.append((_trunc_name("f32", "split0_3_1", -2.0, 2.0, shape), "truncated_normal",
                    "float32", shape, "split0_3_1", -2.0, 2.0))
    for dt, tag, shapes in (("float64", "f64", [(13, 17), (1000,)]),
                            ("float16", "f16", [(3, 5, 7), (1000,)]),
                            ("bfloat16", "bf16", [(3, 5, 7), (1000,)])):
        for key in ("seed0", "fold42_7"):
            for lo, hi in bounds[:5]:
                for shape in shapes:
                    out.append((_trunc_name(tag, key, lo, hi, shape), "truncated_normal", dt,
                                shape, key, lo, hi))
    # A zero bound: its clip bound nextafter(0, -inf) is subnormal.
    for dt, tag in (("float32", "f32"), ("bfloat16", "bf16"), ("float16", "f16")):
        out.append((_trunc_name(tag, "seed0", -1.0, 0.0, (1000,)), "truncated_normal", dt,
                    (1000,), "seed0", -1.0, 0.0))
    out.append((_trunc_name("f32", "seed1", -2.0, 2.0, (1024, 64)), "truncated_normal",
                "float32", (1024, 64), "seed1", -2.0, 2.0))
    out.append((_trunc_name("f64", "seed1", -1.0, 3.5, (256, 64)), "truncated_normal",
                "float64", (256, 64), "seed1", -1.0, 3.5))
    # The seeds' inputs: jax.random.normal(jax.random.PRNGKey(0), shape).
    for shape in [(4, 10), (10, 10), (10, 40), (40, 10)]:
        out.append((f"seeds_normal_{_shape_name(shape)}", "normal", "float32", shape, "seed0",
                    0.0, 1.0))
    # Larger arrays with many draws far into the tails.
    out.append(("normal_f32_seed1_1024x64", "normal", "float32", (1024, 64), "seed1", 0.0, 1.0))
    out.append(("normal_f64_seed1_256x64", "normal", "float64", (256, 64), "seed1", 0.0, 1.0))
    return out


_INF = float("inf")


def _trunc_name(tag: str, key: str, lo: float, hi: float, shape) -> str:
    return f"truncated_normal_{tag}_{key}_{lo:g}_{hi:g}_{_shape_name(shape)}"


def _named_key(name: str):
    import jax
    if name.startswith("seed"):
        return _key_of(int(name[4:]))
    if name == "split0_3_1":
        return jax.random.split(jax.random.PRNGKey(0), 3)[1]
    if name == "fold42_7":
        return jax.random.fold_in(jax.random.PRNGKey(42), 7)
    raise KeyError(name)


def generate(out_dir: pathlib.Path) -> None:
    import jax
    import numpy as np

    out_dir.mkdir(parents=True, exist_ok=True)
    if not jax.config.jax_threefry_partitionable:
        raise SystemExit("jax_threefry_partitionable is off: these references need the "
                         "default partitionable threefry")
    lines = ["# jax.random references (see conformance/families/random.py for the format)",
             f"# jax {jax.__version__}, default_prng_impl "
             f"{jax.config.jax_default_prng_impl}, threefry_partitionable True"]

    for seed in _SEEDS:
        w0, w1 = _words(_key_of(seed))
        lines.append(f"seed {seed} {w0} {w1}")
    for seed, n in _SPLITS:
        key = _key_of(seed)
        ks = np.asarray(jax.random.split(key, n), dtype=np.uint32).reshape(-1)
        w0, w1 = _words(key)
        lines.append(f"split {w0} {w1} {n} " + " ".join(str(int(v)) for v in ks))
    for seed, data in _FOLDS:
        key = _key_of(seed)
        r0, r1 = _words(jax.random.fold_in(key, np.uint32(data)))
        w0, w1 = _words(key)
        lines.append(f"fold {w0} {w1} {data} {r0} {r1}")

    for name, op, dtype, shape, keyname, lo, hi in _cases():
        key = _named_key(keyname)
        w0, w1 = _words(key)
        if _needs_x64(dtype):
            with _X64():
                a = _draw(op, jax.numpy.asarray(np.array([w0, w1], np.uint32)), shape, dtype,
                          lo, hi)
        else:
            a = _draw(op, key, shape, dtype, lo, hi)
        if tuple(a.shape) != tuple(shape) or str(a.dtype) != dtype:
            raise SystemExit(f"{name}: JAX gave {a.dtype}{a.shape}")
        fname = f"{name}.bin"
        (out_dir / fname).write_bytes(_raw(a))
        lines.append(f"array {name} {op} {dtype} {_fmt_shape(shape)} {w0} {w1} "
                     f"{float(lo).hex()} {float(hi).hex()} {fname}")

    # The seeds' 1000x1000 input: a summary and every 997th element.
    key = jax.random.PRNGKey(0)
    big = np.asarray(jax.jit(lambda k: jax.random.normal(k, (1000, 1000)))(key))
    flat = big.reshape(-1)
    bitsum = int(_bits_view(flat).astype(np.uint64).sum(dtype=np.uint64))
    total = float(np.sum(flat.astype(np.float64)))
    stride = 997
    fname = "seeds_normal_1000x1000_samples.bin"
    (out_dir / fname).write_bytes(_raw(flat[::stride]))
    w0, w1 = _words(key)
    lines.append(f"summary seeds_normal_1000x1000 normal float32 1000,1000 {w0} {w1} "
                 f"{bitsum} {total.hex()} {stride} {fname}")

    (out_dir / "manifest.txt").write_text("\n".join(lines) + "\n", encoding="ascii")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(f"usage: {sys.argv[0]} OUT_DIR")
    flags = [f for f in os.environ.get("XLA_FLAGS", "").split()
             if not f.startswith("--xla_force_host_platform_device_count")]
    os.environ["XLA_FLAGS"] = " ".join(flags + ["--xla_force_host_platform_device_count=8"])
    os.environ["JAX_PLATFORMS"] = "cpu"
    generate(pathlib.Path(sys.argv[1]))
