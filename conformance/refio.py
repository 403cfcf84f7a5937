"""Shared helpers of the case families: deterministic JSON output, the
meshes and specs several families use, and the one function that maps the
installed JAX's printed forms to the seeds' forms.

Families import this module as `refio` (generate.py puts conformance/ on
sys.path before loading them). Nothing here imports jax at module level, so
generate.py can set XLA_FLAGS first.
"""

from __future__ import annotations

import json
import pathlib
import re
from typing import Any


def _compact(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, allow_nan=False,
                      separators=(", ", ": "))


def write_json(path: pathlib.Path, obj: Any) -> None:
    """Writes `obj` as JSON, the same object always giving the same bytes:
    sorted keys, UTF-8 kept as is (box-drawing characters stay readable), a
    final newline. The top-level object has one key per line and each
    element of a top-level list or object is written on one line, so a
    changed case shows as a changed line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["{"]
    keys = sorted(obj)
    for i, key in enumerate(keys):
        value = obj[key]
        comma = "," if i + 1 < len(keys) else ""
        if isinstance(value, list) and value:
            lines.append(f" {_compact(key)}: [")
            for j, item in enumerate(value):
                lines.append("  " + _compact(item) + ("," if j + 1 < len(value) else ""))
            lines.append(" ]" + comma)
        elif isinstance(value, dict) and value:
            lines.append(f" {_compact(key)}: {{")
            sub = sorted(value)
            for j, k in enumerate(sub):
                lines.append(f"  {_compact(k)}: {_compact(value[k])}"
                             + ("," if j + 1 < len(sub) else ""))
            lines.append(" }" + comma)
        else:
            lines.append(f" {_compact(key)}: {_compact(value)}{comma}")
    lines.append("}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def spec_name(spec_dims: list[list[str]]) -> str:
    """A case-name form of a spec: P('x',None) / P(('x','y')) / P()."""
    parts = []
    for axes in spec_dims:
        if not axes:
            parts.append("None")
        elif len(axes) == 1:
            parts.append(f"'{axes[0]}'")
        else:
            parts.append("(" + ",".join(f"'{a}'" for a in axes) + ")")
    return "P(" + ",".join(parts) + ")"


def shape_name(shape) -> str:
    return "x".join(str(d) for d in shape) if len(shape) else "scalar"


def jax_spec(spec_dims: list[list[str]]):
    """The jax PartitionSpec of a list of dims (each a list of axis names,
    [] for None, one name for a plain entry, several for a tuple)."""
    from jax.sharding import PartitionSpec as P
    entries = []
    for axes in spec_dims:
        if not axes:
            entries.append(None)
        elif len(axes) == 1:
            entries.append(axes[0])
        else:
            entries.append(tuple(axes))
    return P(*entries)


def spec_dims(spec, ndim: int) -> list[list[str]]:
    """A jax PartitionSpec as a list of dims (the inverse of jax_spec), for
    an array of ndim dimensions, trailing whole dimensions dropped."""
    dims = []
    for entry in tuple(spec) + (None,) * (ndim - len(tuple(spec))):
        if entry is None:
            dims.append([])
        elif isinstance(entry, str):
            dims.append([entry])
        else:
            dims.append(list(entry))
    while dims and not dims[-1]:
        dims.pop()
    return dims


# The meshes of the shard-metadata and picture families: name -> (shape,
# axis names, device order). Device orders other than 0..n-1 are built as
# Mesh(np.array(devices)[perm].reshape(shape), names).
MESHES: dict[str, tuple[tuple[int, ...], tuple[str, ...], list[int]]] = {
    "1": ((1,), ("x",), [0]),
    "3": ((3,), ("x",), [0, 1, 2]),
    "8": ((8,), ("x",), list(range(8))),
    "2x4": ((2, 4), ("x", "y"), list(range(8))),
    "4x2": ((4, 2), ("x", "y"), list(range(8))),
    "2x2x2": ((2, 2, 2), ("x", "y", "z"), list(range(8))),
    "2x2_data_model": ((2, 2), ("data", "model"), [0, 1, 2, 3]),
    "4_data": ((4,), ("data",), [0, 1, 2, 3]),
    "2x2_perm": ((2, 2), ("x", "y"), [2, 0, 3, 1]),
    "2x4_perm": ((2, 4), ("x", "y"), [0, 2, 4, 6, 1, 3, 5, 7]),
    "2x4_perm2": ((2, 4), ("x", "y"), [7, 3, 5, 1, 6, 0, 4, 2]),
}


def mesh_table(names=None) -> dict:
    """The JSON form of the meshes: shape, axis_names, devices (row-major)."""
    out = {}
    for name, (shape, axes, devices) in MESHES.items():
        if names is None or name in names:
            out[name] = {"shape": list(shape), "axis_names": list(axes),
                         "devices": list(devices)}
    return out


def jax_mesh(name: str):
    """The jax Mesh of MESHES[name], with the default (Auto) axis types:
    jax.make_mesh would make Explicit axes in this JAX."""
    import jax
    import numpy as np
    from jax.sharding import Mesh
    shape, axes, devices = MESHES[name]
    all_devices = np.array(jax.devices())
    return Mesh(all_devices[np.array(devices)].reshape(shape), axes)


def array_hex(a) -> dict:
    """An array in full: dtype, shape and its raw little-endian bytes in hex."""
    import numpy as np
    a = np.asarray(a)
    return {"dtype": str(a.dtype), "shape": list(a.shape),
            "hex": np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes().hex()}


def array_from_hex(array: dict):
    """The NumPy array array_hex wrote."""
    import numpy as np
    dtype = np.dtype(array["dtype"]).newbyteorder("<")
    return np.frombuffer(bytes.fromhex(array["hex"]), dtype).reshape(array["shape"])


def array_summary(a, samples: int = 16) -> dict:
    """A big array in brief: its sum and sum of magnitudes (float64 over
    the stored values) and `samples` elements at evenly spaced flat
    indices, as [index, value] pairs."""
    import numpy as np
    a = np.asarray(a)
    flat = a.reshape(-1)
    idx = np.linspace(0, flat.size - 1, samples).astype(np.int64)
    return {"dtype": str(a.dtype), "shape": list(a.shape),
            "sum": float(flat.astype(np.float64).sum()),
            "abs_sum": float(np.abs(flat.astype(np.float64)).sum()),
            "samples": [[int(i), float(flat[i])] for i in idx]}


def picture(x) -> str:
    """jax.debug.visualize_array_sharding(x) without colour, as text."""
    import contextlib
    import io
    import jax
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        jax.debug.visualize_array_sharding(x, use_color=False)
    return buf.getvalue()


def seed_form(text: str) -> str:
    """Maps the installed JAX's printed forms to the seeds' forms, which
    libspmd prints. This is the one place such differences are stated:

    - Mesh: JAX >= 0.5 appends the axis types, "Mesh('x': 3,
      axis_types=(Auto,))"; the seeds print "Mesh('x': 3)". The
      axis_types field is dropped.
    - PartitionSpec: JAX >= 0.6 prints the short alias, "P('x',)"; the
      seeds print "PartitionSpec('x',)". "P(" is spelled out.

    Everything else (SingleDeviceSharding, NamedSharding's other fields,
    array reprs) is printed the same by the seeds and this JAX.
    """
    text = re.sub(r", axis_types=\((?:[A-Za-z]+,? ?)*\)", "", text)
    text = re.sub(r"(?<![A-Za-z0-9_])P\(", "PartitionSpec(", text)
    return text


def random_spec(rng, shape, axes: dict) -> list[list[str]]:
    """A spec drawn from `rng` naming each of the mesh's axes (name -> size)
    at most once, every split dividing its dimension: the random families'
    layouts."""
    free = list(axes)
    rng.shuffle(free)
    spec = []
    for size in shape:
        r = rng.random()
        take = 0 if r < 0.4 or not free else (1 if r < 0.8 else min(2, len(free)))
        dim = [free.pop() for _ in range(take)]
        product = 1
        for a in dim:
            product *= axes[a]
        if size % product:
            free.extend(dim)
            dim = []
        spec.append(dim)
    while spec and not spec[-1]:
        spec.pop()
    return spec
