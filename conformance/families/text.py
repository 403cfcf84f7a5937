"""Family 2, text: str() of meshes, PartitionSpecs, NamedSharding and
SingleDeviceSharding, and repr() / str() of arrays of every dtype libspmd
supports (float32, float64, float16, bfloat16, int8, int16, int32, int64,
uint8, uint16, uint32, bool).

Each case keeps what the installed JAX printed ("jax") and what libspmd
must print ("expected"): the same text passed through refio.seed_form, the
one place where this JAX's newer print forms are mapped to the seeds'.

Writes text/cases.json:
  meshes: name -> {shape, axis_names, devices}
  cases:  [{name, kind, ..., jax, expected}] with kind
    mesh                    mesh
    spec                    spec (per dim, list of axes)
    named_sharding          mesh, spec
    single_device_sharding  device
    array                   dtype, shape, hex (row-major little-endian
                            bytes), placed on mesh + spec or single_device;
                            jax and expected are {repr, str}
"""

from __future__ import annotations

import math

import refio

SPECS = [
    [], [[]], [[], []], [["x"]], [["x"], []], [[], ["x"]], [["x", "y"]],
    [["x", "y"], []], [["x"], ["y"]], [["y"], ["x"]], [[], ["x", "y"]],
    [["y", "x"], [], ["z"]], [["x", "y", "z"]], [["data"], []], [[], ["model"]],
    [["data"], ["model"]], [[], [], ["x"]],
]


def _text_cases() -> list[dict]:
    import jax
    from jax.sharding import NamedSharding, SingleDeviceSharding

    cases = []
    for name in refio.MESHES:
        text = str(refio.jax_mesh(name))
        cases.append({"name": f"mesh/{name}", "kind": "mesh", "mesh": name,
                      "jax": text, "expected": refio.seed_form(text)})
    # jax.make_mesh, as the seeds call it (Explicit axes in this JAX).
    text = str(jax.make_mesh((3,), ("x",)))
    cases.append({"name": "mesh/make_mesh_3", "kind": "mesh", "mesh": "3",
                  "jax": text, "expected": refio.seed_form(text)})

    for spec in SPECS:
        text = str(refio.jax_spec(spec))
        cases.append({"name": f"spec/{refio.spec_name(spec)}", "kind": "spec",
                      "spec": spec, "jax": text, "expected": refio.seed_form(text)})

    for mesh_name in ["3", "8", "2x4", "2x2x2", "2x2_data_model", "2x4_perm", "1"]:
        mesh = refio.jax_mesh(mesh_name)
        for spec in SPECS:
            axes = {a for dim in spec for a in dim}
            if not axes <= set(mesh.axis_names):
                continue
            text = str(NamedSharding(mesh, refio.jax_spec(spec)))
            cases.append({"name": f"named/{mesh_name}/{refio.spec_name(spec)}",
                          "kind": "named_sharding", "mesh": mesh_name, "spec": spec,
                          "jax": text, "expected": refio.seed_form(text)})

    for device in (0, 1, 7):
        text = str(SingleDeviceSharding(jax.devices()[device]))
        cases.append({"name": f"single_device/{device}", "kind": "single_device_sharding",
                      "device": device, "jax": text, "expected": refio.seed_form(text)})
    return cases


def _values():
    """(name, numpy array) pairs: small arrays of every dtype, the seeds'
    printed values, and the numbers that exercise each formatting rule."""
    import jax
    import jax.numpy as jnp
    import ml_dtypes
    import numpy as np

    rng = np.random.default_rng(0)
    float_types = {"float32": np.float32, "float64": np.float64,
                   "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
    int_types = {"int32": np.int32, "int64": np.int64, "uint8": np.uint8, "int8": np.int8,
                 "int16": np.int16, "uint16": np.uint16, "uint32": np.uint32}
    out = []

    # The seeds: 2 sin(x) + 1 over arange(24) on 3 devices, the psum result
    # 276, arange(24.).reshape(3, 8) and its row sums.
    seed = np.asarray(jax.jit(lambda x: 2 * jnp.sin(x) + 1)(jnp.arange(24.0, dtype=jnp.float32)))
    out += [("seed0/f_elementwise_sharded", seed, ("3", [["x"]])),
            ("seed0/psum_276", np.array(276.0, np.float32), ("3", [])),
            ("seed0/arange24_3x8", np.arange(24.0, dtype=np.float32).reshape(3, 8), ("3", [["x"]])),
            ("seed0/sum_axis1", np.array([28.0, 92.0, 156.0], np.float32), None),
            ("seed1/arange32_4x8", np.arange(32.0, dtype=np.float32).reshape(4, 8), ("2x4", [["x"], ["y"]]))]

    mixed = [0.0, 1.5, -2.25, 1000.125, 3.14159]
    for tname, t in {**float_types, **int_types}.items():
        out += [
            (f"{tname}/scalar", np.array(276).astype(t), None),
            (f"{tname}/arange5", np.arange(5).astype(t), None),
            (f"{tname}/arange_4x3", np.arange(12).reshape(4, 3).astype(t), ("2x2_data_model", [["data"]])),
            (f"{tname}/arange_2x3x4", np.arange(24).reshape(2, 3, 4).astype(t), None),
            (f"{tname}/mixed", np.array(mixed).astype(t), None),
            (f"{tname}/empty", np.zeros((0,), t), None),
            (f"{tname}/empty_2x0", np.zeros((2, 0), t), None),
        ]
    for tname, t in float_types.items():
        out += [
            (f"{tname}/normal_4x10", rng.normal(size=(4, 10)).astype(t), ("2x2_data_model", [["data"], []])),
            (f"{tname}/normal_32", rng.normal(size=32).astype(t), ("2x4", [["x", "y"]])),
            (f"{tname}/thirds", (np.arange(1, 7) / 3.0).astype(t), None),
            (f"{tname}/small", np.array([1e-5, 2.5e-3, 0.5]).astype(t), None),
            (f"{tname}/large", np.array([1.0, 12345.0, 60000.0]).astype(t), None),
            (f"{tname}/ratio", np.array([0.01, 10.0, 20.0]).astype(t), None),
            (f"{tname}/nonfinite", np.array([np.nan, 1.0, -np.inf, np.inf, -0.0]).astype(t), None),
            (f"{tname}/only_nan", np.array([np.nan, np.nan]).astype(t), None),
            (f"{tname}/neg_inf_only", np.array([-np.inf, 2.0]).astype(t), None),
            (f"{tname}/zeros", np.zeros(4).astype(t), None),
            (f"{tname}/negative_zero", np.array(-0.0).astype(t), None),
            (f"{tname}/scalar_small", np.array(1.5e-5).astype(t), None),
            (f"{tname}/scalar_third", np.array(1 / 3).astype(t), None),
            (f"{tname}/scalar_nan", np.array(np.nan).astype(t), None),
            (f"{tname}/summarised_1001", np.arange(1001).astype(t), ("8", [])),
            (f"{tname}/summarised_40x40", (np.arange(1600).reshape(40, 40) / 7).astype(t), None),
            (f"{tname}/wide_rows_3x30", rng.normal(size=(3, 30)).astype(t) * 100, None),
        ]
    out += [
        ("float64/exp3_digits", np.array([1e-300, 1.0, 1e300]), None),
        ("float64/eight_digit_cut", np.array([1 / 512, 0.123456785, 2 / 3]), None),
        ("float64/scalar_1e16", np.array(1e16), None),
        ("float64/scalar_123456789", np.array(123456789.0), None),
        ("float32/scalar_1e16", np.array(1e16, np.float32), None),
        ("float32/exp_many_digits", np.array([1.2345678e-7, 9.876543e8], np.float32), None),
        ("float32/ties", np.array([0.001953125, 0.5, 1.25], np.float32), None),
        ("float16/subnormal", np.array([6e-8, 1.0], np.float16), None),
        # Shortest digits where the rounding interval's edge decides
        # (numpy's Dragon4 takes the digits above, or the edge itself when
        # the value's last bit is even).
        ("float16/shortest_edges", np.array([0.015625, 13216, -6408, 2.0**-24, 65504], np.float16), None),
        ("float16/nonfinite_exp", np.array([5912, -np.inf, np.inf], np.float16), None),
        ("float16/scalar_-1573", np.array(-1573.0, np.float16), None),
        ("float16/scalar_999", np.array(999.0, np.float16), None),
        ("float32/scalar_2440761.8", np.array(2440761.8, np.float32), None),
        ("float32/scalar_999999", np.array(999999.0, np.float32), None),
        ("float32/scalar_1e-4", np.array(1e-4, np.float32), None),
        ("float64/scalar_1e-4", np.array(1e-4), None),
        ("float64/scalar_9.9e15", np.array(9.9e15), None),
        ("float16/max", np.array([65504.0, -65504.0], np.float16), None),
        ("bfloat16/big_small", np.array([1e10, 1e-5, 3.3e38], ml_dtypes.bfloat16), None),
        ("int64/extremes", np.array([-(2**63), 2**63 - 1, 0], np.int64), None),
        ("int32/extremes", np.array([-(2**31), 2**31 - 1], np.int32), None),
        ("int32/negative_2x3", np.array([[-5, 10, 200], [3, -4000, 7]], np.int32), None),
        ("uint8/all_ends", np.array([0, 255, 7, 128], np.uint8), None),
        ("int8/extremes", np.array([-128, 127, 0, -1], np.int8), None),
        ("int16/extremes_2x2", np.array([[-32768, 32767], [5, -40]], np.int16), None),
        ("uint16/all_ends", np.array([0, 65535, 7, 256], np.uint16), None),
        ("uint32/extremes", np.array([0, 4294967295, 2147483648], np.uint32), None),
        ("int32/summarised_12x12x12", np.arange(1728).reshape(12, 12, 12).astype(np.int32), None),
        ("int64/wrapped_100", np.arange(100).astype(np.int64) * 1234567, None),
        ("bool/mixed", np.array([True, False, True]), None),
        ("bool/2x3", np.array([[True, False, False], [False, True, True]]), ("2x4", [[], []])),
        ("bool/scalar_false", np.array(False), None),
        ("bool/summarised_2000", (np.arange(2000) % 3 == 0), None),
    ]
    return out


def _array_case(name, value, placement) -> dict:
    import jax
    import numpy as np
    from jax.sharding import NamedSharding

    dtype = value.dtype.name
    case = {"name": f"array/{name}", "kind": "array", "dtype": dtype,
            "shape": list(value.shape),
            "hex": np.ascontiguousarray(value).tobytes().hex()}
    if placement is None:
        sharding = jax.sharding.SingleDeviceSharding(jax.devices()[0])
        case["single_device"] = 0
    else:
        mesh_name, spec = placement
        sharding = NamedSharding(refio.jax_mesh(mesh_name), refio.jax_spec(spec))
        case["mesh"], case["spec"] = mesh_name, spec
    array = jax.device_put(value, sharding)
    assert array.dtype == value.dtype, (name, array.dtype, value.dtype)
    printed = {"repr": repr(array), "str": str(array)}
    case["jax"] = printed
    case["expected"] = {k: refio.seed_form(v) for k, v in printed.items()}
    return case


def generate(out_dir) -> None:
    import jax

    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)  # float64 and int64 arrays
    try:
        cases = _text_cases()
        cases += [_array_case(n, v, p) for n, v, p in _values()]
    finally:
        jax.config.update("jax_enable_x64", previous)
    names = [c["name"] for c in cases]
    assert len(names) == len(set(names)), "case names must be unique"
    refio.write_json(out_dir / "cases.json", {"meshes": refio.mesh_table(), "cases": cases})
