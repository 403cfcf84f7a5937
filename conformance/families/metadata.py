"""Family 1, shard metadata: for meshes, specs and global shapes, where each
device's block lies (JAX's devices_indices_map, as start/stop per
dimension) and its replica id (Shard.replica_id), or JAX's refusal of an
uneven shape. Also JAX's == between pairs of shardings.

Shapes with a dimension of size 0 are cases too (named ".../0x4" and so
on): every block along such a dimension is the same empty block, and JAX's
replica id counts the devices holding each distinct index, so the mesh axes
that split only such dimensions number replicas like unused axes do.

Writes metadata/cases.json:
  meshes:   name -> {shape, axis_names, devices (row-major)}
  cases:    [{name, mesh, spec (per dim, list of axes; [] is None), shape,
              fully_replicated, and either shards: [{device, start, stop,
              replica_id}] in mesh device order, or refused: "<JAX error>" and
              replica_ids: [[device, replica id]] (JAX's, from an even shape)}]
  equality: [{name, a: {mesh, spec}, b: {mesh, spec}, equal (JAX's ==),
              trailing_none_only (the specs differ only by trailing Nones)}]
"""

from __future__ import annotations

import itertools
import math

import refio


def _specs(axes: tuple[str, ...]) -> list[list[list[str]]]:
    """Specs over a mesh's axes: P(), P(None), each axis alone, leading or
    after None, pairs on two dims, tuples of axes on one dim in every order,
    partial replication and omitted trailing dims come with them."""
    out: list[list[list[str]]] = [[], [[]]]
    for a in axes:
        out += [[[a]], [[], [a]], [[a], []], [[], [], [a]]]
    for a, b in itertools.permutations(axes, 2):
        out += [[[a], [b]], [[a, b]], [[a, b], []], [[], [a, b]]]
    if len(axes) == 3:
        x, y, z = axes
        out += [[[x, y, z]], [[z, y, x]], [[x], [y, z]], [[y, x], [], [z]],
                [[z], [x], [y]], [[], [x, z], [y]]]
    seen, unique = set(), []
    for s in out:
        key = repr(s)
        if key not in seen:
            seen.add(key)
            unique.append(s)
    return unique


def _splits(mesh_shape, axes, spec, rank) -> list[int]:
    sizes = dict(zip(axes, mesh_shape))
    return [math.prod(sizes[a] for a in spec[d]) if d < len(spec) else 1
            for d in range(rank)]


def _shapes(splits: list[int]) -> list[tuple[int, ...]]:
    """An even shape and uneven ones (a remainder, fewer elements than
    shards) for the given per-dim split counts."""
    factors = [2, 3, 1]
    even = tuple(n * factors[d] for d, n in enumerate(splits))
    shapes = [even]
    if any(n > 1 for n in splits):
        shapes.append(tuple(n * factors[d] + (1 if n > 1 else 0)
                            for d, n in enumerate(splits)))
        if max(splits) > 2:
            shapes.append(tuple(n - 1 if n > 2 else n + 1 for n in splits))
    return shapes


def _record(mesh, spec_dims, shape) -> dict:
    import jax
    import numpy as np
    from jax.sharding import NamedSharding

    sharding = NamedSharding(mesh, refio.jax_spec(spec_dims))
    out = {"fully_replicated": bool(sharding.is_fully_replicated)}
    try:
        array = jax.device_put(np.zeros(shape, np.int8), sharding)
    except Exception as e:  # JAX's refusal is the reference
        out["refused"] = f"{type(e).__name__}: {str(e).split(' (full shape')[0]}"
        # Replica ids do not depend on the shape: JAX's, from an even one.
        even = tuple(_splits(mesh.devices.shape, mesh.axis_names, spec_dims, len(shape)))
        array = jax.device_put(np.zeros(even, np.int8), sharding)
        by_device = {s.device.id: s.replica_id for s in array.addressable_shards}
        out["replica_ids"] = [[int(d.id), int(by_device[d.id])] for d in mesh.devices.flat]
        return out
    indices = sharding.devices_indices_map(shape)
    by_device = {s.device.id: s for s in array.addressable_shards}
    shards = []
    for device in mesh.devices.flat:
        shard = by_device[device.id]
        index = tuple(shard.index)
        assert index == tuple(indices[device]), (index, indices[device])
        start, stop = [], []
        for d, sl in enumerate(index):
            lo, hi, step = sl.indices(shape[d])
            assert step == 1
            start.append(lo)
            stop.append(hi)
        shards.append({"device": int(device.id), "start": start, "stop": stop,
                       "replica_id": int(shard.replica_id)})
    out["shards"] = shards
    return out


def _strip(spec):
    spec = list(spec)
    while spec and not spec[-1]:
        spec.pop()
    return spec


def _equality_cases() -> list[dict]:
    from jax.sharding import NamedSharding

    pairs = [
        ("2x4", [["x"]], "2x4", [["x"], []]),
        ("2x4", [], "2x4", [[], []]),
        ("2x4", [["x"], ["y"]], "2x4", [["x", "y"]]),
        ("2x4", [["x", "y"]], "2x4", [["y", "x"]]),
        ("2x4", [["x"]], "2x4_perm", [["x"]]),
        ("2x4", [["x"]], "4x2", [["x"]]),
        ("2x4", [["y"], []], "2x4", [["y"]]),
        ("2x4", [[], ["y"]], "2x4", [["y"]]),
        ("8", [["x"]], "8", [["x"], [], []]),
        ("2x2_perm", [["x"]], "2x2_data_model", [["data"]]),
        ("2x2x2", [["x", "y", "z"]], "2x2x2", [["x", "y", "z"], []]),
        ("2x2x2", [["x"], ["y"]], "2x2x2", [["x"], ["y"], []]),
        ("3", [], "3", [[]]),
        ("2x4", [["x"], ["y"]], "2x4", [["x"], ["y"]]),
        ("2x4_perm", [["x", "y"]], "2x4_perm", [["x", "y"]]),
    ]
    out = []
    for ma, sa, mb, sb in pairs:
        a = NamedSharding(refio.jax_mesh(ma), refio.jax_spec(sa))
        b = NamedSharding(refio.jax_mesh(mb), refio.jax_spec(sb))
        out.append({
            "name": f"{ma}/{refio.spec_name(sa)}=={mb}/{refio.spec_name(sb)}",
            "a": {"mesh": ma, "spec": sa}, "b": {"mesh": mb, "spec": sb},
            "equal": bool(a == b),
            # JAX's == compares specs as written; libspmd's equality drops
            # trailing Nones first (docs/differences.md). The C test checks
            # libspmd's rule on these pairs.
            "trailing_none_only": ma == mb and sa != sb
                                  and _strip(sa) == _strip(sb),
        })
    return out


# Meshes whose specs are also tried on shapes with a dimension of size 0:
# devices in order and not, one, two and three axes.
ZERO_LENGTH_MESHES = ("3", "2x4", "2x2x2", "2x4_perm")


def _zero_length_shapes(splits: list[int]) -> list[tuple[int, ...]]:
    """The even shape with each dimension in turn set to 0, and with all of
    them 0: dimensions that are split and ones that are not."""
    even = _shapes(splits)[0]
    shapes = [even[:d] + (0,) + even[d + 1:] for d in range(len(even))]
    if len(even) > 1:
        shapes.append((0,) * len(even))
    return shapes


def generate(out_dir) -> None:
    cases = []
    for mesh_name, (mesh_shape, axes, _) in refio.MESHES.items():
        mesh = refio.jax_mesh(mesh_name)
        for spec in _specs(axes):
            rank_min = max(len(spec), 1)
            for rank in range(rank_min, min(rank_min + 1, 3) + 1):
                splits = _splits(mesh_shape, axes, spec, rank)
                shapes = _shapes(splits)
                if mesh_name in ZERO_LENGTH_MESHES:
                    shapes += _zero_length_shapes(splits)
                for shape in shapes:
                    case = {
                        "name": f"{mesh_name}/{refio.spec_name(spec)}/"
                                f"{refio.shape_name(shape)}",
                        "mesh": mesh_name, "spec": spec, "shape": list(shape),
                    }
                    case.update(_record(mesh, spec, shape))
                    cases.append(case)
    names = [c["name"] for c in cases]
    assert len(names) == len(set(names)), "case names must be unique"
    refio.write_json(out_dir / "cases.json", {
        "meshes": refio.mesh_table(),
        "cases": cases,
        "equality": _equality_cases(),
    })
