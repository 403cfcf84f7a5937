#!/usr/bin/env python3
"""Writes the conformance references: what JAX itself answers, on 8 CPU
devices, for every case of every family under conformance/families/.

    python conformance/generate.py            # regenerate tests/conformance/
    python conformance/generate.py --check    # regenerate into a temporary
                                              # directory, fail on any difference
    python conformance/generate.py --only metadata   # one family (development)

A family is a module conformance/families/<family>.py (names starting with
'_' are skipped) exposing generate(out_dir: pathlib.Path) -> None, which
writes its files under out_dir = tests/conformance/<family>/. See
conformance/README.md.
"""

from __future__ import annotations

import argparse
import filecmp
import importlib.util
import os
import pathlib
import shutil
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
REFERENCES = ROOT / "tests" / "conformance"
FAMILIES = HERE / "families"
DEVICE_COUNT = 8


def _configure_jax() -> None:
    # Must happen before jax is imported anywhere: 8 virtual CPU devices,
    # the same as libspmd's default CPU platform.
    flags = [f for f in os.environ.get("XLA_FLAGS", "").split()
             if not f.startswith("--xla_force_host_platform_device_count")]
    flags.append(f"--xla_force_host_platform_device_count={DEVICE_COUNT}")
    os.environ["XLA_FLAGS"] = " ".join(flags)
    os.environ["JAX_PLATFORMS"] = "cpu"
    os.environ.setdefault("JAX_ENABLE_X64", "0")


def family_names() -> list[str]:
    return sorted(p.stem for p in FAMILIES.glob("*.py")
                  if not p.stem.startswith("_"))


def load_family(name: str):
    path = FAMILIES / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"conformance_family_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not callable(getattr(module, "generate", None)):
        raise SystemExit(f"{path}: no generate(out_dir) function")
    return module


def write_versions(out: pathlib.Path) -> None:
    import jax
    import jaxlib
    import numpy
    import rich  # noqa: F401  (the picture family needs it)
    from importlib.metadata import version
    import refio
    refio.write_json(out / "versions.json", {
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "numpy": numpy.__version__,
        "rich": version("rich"),
        "devices": DEVICE_COUNT,
        "platform": "cpu",
    })


def generate(out: pathlib.Path, only: list[str] | None) -> list[str]:
    names = family_names()
    if only:
        unknown = sorted(set(only) - set(names))
        if unknown:
            raise SystemExit(f"unknown families: {', '.join(unknown)} "
                             f"(have: {', '.join(names)})")
        names = [n for n in names if n in only]
    out.mkdir(parents=True, exist_ok=True)
    write_versions(out)
    for name in names:
        family_dir = out / name
        if family_dir.exists():
            shutil.rmtree(family_dir)
        family_dir.mkdir(parents=True)
        print(f"generating {name} ...", file=sys.stderr)
        load_family(name).generate(family_dir)
    return names


def differences(a: pathlib.Path, b: pathlib.Path) -> list[str]:
    """Relative paths that differ between two trees, or exist in one only."""
    files_a = {p.relative_to(a) for p in a.rglob("*") if p.is_file()}
    files_b = {p.relative_to(b) for p in b.rglob("*") if p.is_file()}
    out = []
    for rel in sorted(files_a | files_b):
        if rel not in files_a:
            out.append(f"{rel} (committed, not regenerated)")
        elif rel not in files_b:
            out.append(f"{rel} (regenerated, not committed)")
        elif not filecmp.cmp(a / rel, b / rel, shallow=False):
            out.append(f"{rel} (differs)")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true",
                        help="regenerate into a temporary directory and fail "
                             "when anything differs from tests/conformance/")
    parser.add_argument("--only", action="append", metavar="FAMILY",
                        help="generate only this family (repeatable)")
    args = parser.parse_args()

    _configure_jax()
    sys.path.insert(0, str(HERE))

    if not args.check:
        names = generate(REFERENCES, args.only)
        print(f"wrote {REFERENCES.relative_to(ROOT)}/ for: {', '.join(names)}")
        return 0

    with tempfile.TemporaryDirectory(prefix="spmd-conformance-") as tmp:
        out = pathlib.Path(tmp) / "conformance"
        names = generate(out, args.only)
        if args.only:
            # Compare only what was regenerated.
            committed = pathlib.Path(tmp) / "committed"
            committed.mkdir()
            shutil.copy2(REFERENCES / "versions.json", committed / "versions.json")
            for n in names:
                if (REFERENCES / n).exists():
                    shutil.copytree(REFERENCES / n, committed / n)
        else:
            committed = REFERENCES
        diff = differences(committed, out)
    if diff:
        print("conformance references differ from what JAX generates now:")
        for line in diff:
            print(f"  tests/conformance/{line}")
        return 1
    print(f"conformance references reproduce exactly ({', '.join(names)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
