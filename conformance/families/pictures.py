"""Family 3, pictures: jax.debug.visualize_sharding(shape, sharding,
use_color=False) as printed to a console 80 columns wide (stdout captured;
a few cases at other widths),
for 1-D and 2-D shapes over the shared meshes and specs, the seeds' own
pictures, and tables wider than 80 columns, which rich narrows by shrinking
columns and wrapping (or hiding) the labels.

Writes pictures/cases.json:
  meshes: name -> {shape, axis_names, devices}
  cases:  [{name, shape, and either mesh + spec or single_device, picture,
            and max_width where it is not 80}]
Shapes JAX refuses for a sharding (uneven) are not drawn by JAX and are
left out.
"""

from __future__ import annotations

import contextlib
import io

import refio


def _capture(shape, sharding, max_width: int = 80) -> str | None:
    import jax
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            jax.debug.visualize_sharding(tuple(shape), sharding, use_color=False,
                                         max_width=max_width)
    except Exception:  # JAX refuses the shape for this sharding
        return None
    return buf.getvalue()


def _grid_specs(axes):
    """Specs of rank <= 2 over a mesh's axes."""
    out = [[], [[]], [[], []]]
    for a in axes:
        out += [[[a]], [[], [a]], [[a], []]]
    for a in axes:
        for b in axes:
            if a != b:
                out += [[[a], [b]], [[a, b]], [[], [a, b]]]
    if len(axes) == 3:
        x, y, z = axes
        out += [[[x, y, z]], [[], [z, y, x]], [[x], [y, z]], [[z, x], [y]]]
    seen, unique = set(), []
    for s in out:
        if repr(s) not in seen:
            seen.add(repr(s))
            unique.append(s)
    return unique


# 1-D and 2-D shapes: square and wide and tall blocks, sizes divisible by 8
# (so every mesh above can split them), and wide ones that overflow 80
# columns once split into several columns.
SHAPES = [(8,), (2,), (8, 8), (16, 8), (8, 32), (4, 64), (24, 48), (8, 800)]
GRID_MESHES = ["3", "8", "2x4", "4x2", "2x2x2", "2x2_perm", "2x4_perm"]


def _seed_cases() -> list[dict]:
    """The seeds' pictures: the same shapes and shardings as the seed
    notebooks (results of jit taken from what JAX produced here)."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding

    cases = []

    def named(name, mesh_name, spec, shape):
        mesh = refio.jax_mesh(mesh_name)
        cases.append({"name": name, "mesh": mesh_name, "spec": spec,
                      "shape": list(shape),
                      "picture": _capture(shape, NamedSharding(mesh, refio.jax_spec(spec)))})

    def from_array(name, mesh_name, array):
        sharding = array.sharding
        assert isinstance(sharding, NamedSharding), sharding
        spec = [[] if p is None else ([p] if isinstance(p, str) else list(p))
                for p in sharding.spec]
        cases.append({"name": name, "mesh": mesh_name, "spec": spec,
                      "shape": list(array.shape),
                      "picture": _capture(array.shape, sharding)})

    # Seed 0: a single-device array, one on device 1, (3, 8) over 3 devices.
    for device in (0, 1):
        sharding = jax.sharding.SingleDeviceSharding(jax.devices()[device])
        cases.append({"name": f"seed0/single_device_{device}/5",
                      "single_device": device, "shape": [5],
                      "picture": _capture((5,), sharding)})
    m3 = refio.jax_mesh("3")
    arr = jax.device_put(jnp.arange(24.0).reshape(3, 8),
                         NamedSharding(m3, refio.jax_spec([["x"]])))
    from_array("seed0/arange24_3x8_P('x')", "3", arr)
    from_array("seed0/elementwise_3x8", "3", jax.jit(lambda x: 2 * jnp.sin(x) + 1)(arr))
    from_array("seed0/sum_axis0_8", "3", jax.jit(lambda x: x.sum(axis=0))(arr))
    from_array("seed0/sum_axis1_3", "3", jax.jit(lambda x: x.sum(axis=1))(arr))

    # Seed 1: (4, 8) on one device, then on 2x4 P('x','y'), its sum over
    # axis 0 (partially replicated: 'CPU 0,4' ...), and that sum constrained
    # to P('x') on 8 devices.
    cases.append({"name": "seed1/single_device_4x8", "single_device": 0,
                  "shape": [4, 8],
                  "picture": _capture((4, 8), jax.sharding.SingleDeviceSharding(jax.devices()[0]))})
    m24 = refio.jax_mesh("2x4")
    arr = jax.device_put(jnp.arange(32.0).reshape(4, 8),
                         NamedSharding(m24, refio.jax_spec([["x"], ["y"]])))
    from_array("seed1/arange32_4x8_P('x','y')", "2x4", arr)
    from_array("seed1/f_contract_8", "2x4", jax.jit(lambda x: x.sum(axis=0))(arr))
    named("seed1/f_contract_2_8_P('x')", "8", [["x"]], (8,))

    # Seed 2: the 2x2 ('data', 'model') mesh: FSDP output (4, 10)
    # P('data', None), TP output P(None, 'model'), FSDP+TP P('data', 'model'),
    # the 1000x1000 all_to_all on 4 devices before and after, the Layer
    # output (2, 128, 1024) reshaped to (2, 128*1024).
    named("seed2/fsdp_4x10_P('data',None)", "2x2_data_model", [["data"], []], (4, 10))
    named("seed2/tp_4x10_P(None,'model')", "2x2_data_model", [[], ["model"]], (4, 10))
    named("seed2/fsdp_tp_4x10_P('data','model')", "2x2_data_model",
          [["data"], ["model"]], (4, 10))
    named("seed2/all_to_all_in_1000x1000_P('data',None)", "4_data", [["data"], []],
          (1000, 1000))
    named("seed2/all_to_all_out_1000x1000_P(None,'data')", "4_data", [[], ["data"]],
          (1000, 1000))
    named("seed2/layer_out_2x131072_P('data',None)", "2x2_data_model", [["data"], []],
          (2, 128 * 1024))

    # Seed 3: the data-parallel batch (16, 4) split over 8 devices, and the
    # replicated parameters.
    named("seed3/batch_16x4_P('x')", "8", [["x"]], (16, 4))
    named("seed3/replicated_16x4", "8", [], (16, 4))
    return cases


def generate(out_dir) -> None:
    from jax.sharding import NamedSharding

    cases = _seed_cases()
    seen = set()  # (mesh, shape, picture): specs drawing the same are kept once
    used = {c["mesh"] for c in cases if "mesh" in c}
    for mesh_name in GRID_MESHES:
        axes = refio.MESHES[mesh_name][1]
        mesh = refio.jax_mesh(mesh_name)
        for spec in _grid_specs(axes):
            for shape in SHAPES:
                if len(spec) > len(shape):
                    continue
                picture = _capture(shape, NamedSharding(mesh, refio.jax_spec(spec)))
                if picture is None or (mesh_name, shape, picture) in seen:
                    continue
                seen.add((mesh_name, shape, picture))
                used.add(mesh_name)
                cases.append({
                    "name": f"{mesh_name}/{refio.spec_name(spec)}/{refio.shape_name(shape)}",
                    "mesh": mesh_name, "spec": spec, "shape": list(shape),
                    "picture": picture,
                })
    # Other console widths (max_width is both the console's width and the
    # widest block).
    for width in (40, 60, 100, 120):
        for mesh_name, spec, shape in [("2x4", [["x"], ["y"]], (8, 32)),
                                       ("2x4", [[], ["x"]], (8, 32)),
                                       ("8", [["x"]], (8,)),
                                       ("2x2_data_model", [["data"], []], (4, 10)),
                                       ("2x2x2", [[], ["z", "y", "x"]], (8, 800))]:
            mesh = refio.jax_mesh(mesh_name)
            used.add(mesh_name)
            cases.append({
                "name": f"width{width}/{mesh_name}/{refio.spec_name(spec)}/{refio.shape_name(shape)}",
                "mesh": mesh_name, "spec": spec, "shape": list(shape), "max_width": width,
                "picture": _capture(shape, NamedSharding(mesh, refio.jax_spec(spec)), width),
            })
    missing = [c["name"] for c in cases if c["picture"] is None]
    assert not missing, f"JAX drew no picture for seed cases: {missing}"
    names = [c["name"] for c in cases]
    assert len(names) == len(set(names)), "case names must be unique"
    refio.write_json(out_dir / "cases.json", {
        "meshes": refio.mesh_table(used),
        "cases": cases,
    })
