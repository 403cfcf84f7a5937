#!/usr/bin/env python3
"""Writes the seed corpus of every fuzz target into corpus/<target>/.

Each seed is a named, meaningful input: a spec, sharding, axes or shard_map
text for the text targets, and for fuzz_api_sequence the byte string of a
call sequence written with the choices fuzz_api_sequence.cpp decodes
(pick(n) reads one byte modulo n). Run it again after changing a decoder;
it rewrites only its own files, so regression inputs added by hand stay.

    python3 tests/fuzz/make-corpus.py
"""
import os

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
def write(target, items):
    d = os.path.join(root, target)
    os.makedirs(d, exist_ok=True)
    for name, data in items:
        if isinstance(data, str):
            data = data.encode()
        with open(os.path.join(d, name), 'wb') as f:
            f.write(data)

spec = [
 ("empty", ""), ("one_axis", "x"), ("two_axes", "data, model"), ("none_first", "None, x"),
 ("tuple", "(x, y), None"), ("tuple_tight", "(x,y),None"), ("trailing_comma", "x,"),
 ("p_empty", "P()"), ("p_one", "P('x')"), ("p_one_comma", "P('x',)"), ("p_two", "P('data', None)"),
 ("p_tuple", "PartitionSpec(('x', 'y'),)"), ("p_dquote", 'P("x", "y")'), ("p_space", "P ( 'x' , None )"),
 ("partitionspec_empty", "PartitionSpec()"), ("empty_tuple", "(), x"), ("single_tuple", "(x,)"),
 ("nested_none_in_tuple", "(x, None)"), ("dup_axis", "x, x"), ("dup_in_tuple", "(x, x)"),
 ("double_comma", "x,,y"), ("unclosed_tuple", "(x, y"), ("unclosed_p", "P('x'"), ("text_after_p", "P('x') y"),
 ("unterminated_quote", "P('x)"), ("bad_name_digit", "1x"), ("quoted_none", "P('None')"),
 ("quoted_digit", "P('0a')"), ("underscore", "_a, b_2"), ("eight_dims", "a, b, c, d, e, f, g, h"),
 ("nine_dims", "a, b, c, d, e, f, g, h, i"), ("eight_with_nones", "None, None, None, None, None, None, None, x"),
 ("bare_p", "P"), ("p_name_prefix", "Px, y"), ("tab_newline", "\tx,\n y "), ("unicode", "x, \u00e9"),
 ("lone_paren", ")"), ("only_comma", ","), ("only_space", "   "), ("mixed_quotes", "P('x\", y)"),
 ("three_in_tuple", "(a, b, c)"), ("long_name", "a_very_long_axis_name_0123456789, b"),
]
write("fuzz_spec", spec)

# fuzz_sharding: the first byte picks the mesh (byte % 5): '2' x:8, '3' x:2,y:4,
# '4' a,b,c (2 each), '0' data:4,model:2 (devices reversed), '1' one:1,x:8.
sharding = [
 ("x8_x", "2x"), ("x8_empty", "2"), ("x8_missing_y", "2x, y"), ("x8_p", "2P('x', None)"),
 ("xy_both", "3x, y"), ("xy_swapped", "3y, x"), ("xy_tuple", "3(x, y)"), ("xy_tuple_rev", "3(y, x), None"),
 ("xy_missing", "3x, z"), ("xy_dup", "3x, x"), ("xy_bad", "3x,,y"), ("xy_jax", "3PartitionSpec(('x', 'y'),)"),
 ("abc_all", "4a, b, c"), ("abc_tuples", "4(a, b), c"), ("abc_three", "4(c, b, a)"), ("abc_none", "4None, None, a"),
 ("abc_missing", "4a, x"), ("dm_data", "0data"), ("dm_both", "0data, model"), ("dm_model_first", "0model, data"),
 ("dm_tuple", "0(data, model)"), ("dm_wrong", "0data, modle"), ("one_one", "1one"), ("one_x", "1one, x"),
 ("one_tuple", "1(one, x)"), ("one_none", "1None, one"), ("p_empty", "3P()"), ("trailing_nones", "3x, None, None"),
 ("unclosed", "3P('x'"), ("quoted_ok", "4P('a', ('b', 'c'))"),
]
write("fuzz_sharding", sharding)

# fuzz_axes: the first byte picks the mesh (byte % 3): '0' x:2,y:4, '1' a,b,c, '2' x:8.
axes = [
 ("xy_x", "0x"), ("xy_y", "0y"), ("xy_tuple", "0(x, y)"), ("xy_tuple_rev", "0(y, x)"), ("xy_comma", "0x,y"),
 ("xy_quoted", "0('x', 'y')"), ("xy_dquoted", '0("y","x")'), ("xy_missing", "0z"), ("xy_dup", "0x, x"),
 ("xy_empty", "0"), ("xy_empty_tuple", "0()"), ("xy_bad_char", "0x;y"), ("xy_spaces", "0  x  "),
 ("xy_one_tuple", "0(x,)"), ("xy_none", "0None"), ("abc_a", "1a"), ("abc_two", "1(a, c)"), ("abc_three", "1(c, b, a)"),
 ("abc_comma", "1b,a"), ("abc_missing", "1a, x"), ("abc_dup", "1(a, b, a)"), ("x8_x", "2x"), ("x8_y", "2y"),
 ("x8_tuple", "2(x)"), ("x8_dup", "2x,x"), ("odd_parens", "0)x("), ("digit", "01x"), ("tab", "0\tx\ty"),
 ("dash", "0x-y"), ("long", "1(a, b, c, a_longer_name)"),
]
write("fuzz_axes", axes)

# fuzz_shard_map: head byte: bit0 mesh (0: x:2,y:4; 1: a,b,c), n_in = 1 + (head>>1)%3,
# n_out = (head>>3)%4, bit6 device 0 sets no output, bit7 check_rep; then one spec per line.
def head(mesh, n_in, n_out, skip=0, check=0):
    # n_in-1 in bits 1-2 (0..2), n_out in bits 3-4 (0..3)
    return bytes([mesh | ((n_in - 1) << 1) | (n_out << 3) | (skip << 6) | (check << 7)])
def sm(mesh, ins, outs, skip=0, check=0):
    return head(mesh, len(ins), len(outs), skip, check) + "\n".join(ins + outs).encode()
shard_map = [
 ("identity_xy", sm(0, ["x, y"], ["x, y"])),
 ("identity_yx", sm(0, ["y, x"], ["y, x"])),
 ("identity_tuple", sm(0, ["(x, y)"], ["(x, y)"])),
 ("identity_replicated", sm(0, [""], [""])),
 ("identity_jax", sm(0, ["P('x', 'y')"], ["PartitionSpec('x', 'y')"])),
 ("gather_rows", sm(0, ["x"], ["x, y"])),
 ("replicated_out", sm(0, ["x, y"], [""])),
 ("replicated_out_check", sm(0, ["x, y"], [""], check=1)),
 ("replicated_in_check", sm(0, [""], ["None"], check=1)),
 ("two_inputs", sm(0, ["x, y", "y"], ["x, y", "y"])),
 ("two_inputs_swap", sm(0, ["x, y", "x"], ["y, x", "x"])),
 ("three_inputs", sm(0, ["x", "", ""], ["x", "", ""])),
 ("scalar_input", sm(0, ["", "", ""], ["", "", ""])),
 ("scalar_with_spec", sm(0, ["", "", "x"], ["", "", "x"])),
 ("uneven_i32", sm(0, ["x", "y"], ["x", "y"])),
 ("missing_axis", sm(0, ["x, z"], ["x, y"])),
 ("bad_out", sm(0, ["x, y"], ["x,,y"])),
 ("bad_in", sm(0, ["(x"], ["x"])),
 ("dup_axis", sm(0, ["x, x"], ["x"])),
 ("no_outputs", sm(0, ["x, y"], [])),
 ("skip_device0", sm(0, ["x, y"], ["x, y"], skip=1)),
 ("rank_too_high", sm(0, ["x, y, None"], ["x, y"])),
 ("abc_identity", sm(1, ["a, (b, c)"], ["a, (b, c)"])),
 ("abc_regroup", sm(1, ["a, (b, c)"], ["(a, b), c"])),
 ("abc_tuple_all", sm(1, ["(a, b, c)"], ["(a, b, c)"])),
 ("abc_missing", sm(1, ["x, y"], ["x, y"])),
 ("abc_check", sm(1, ["a"], ["a"], check=1)),
 ("abc_check_fails", sm(1, ["a, b"], ["a"], check=1)),
 ("abc_two", sm(1, ["a, b", "c"], ["a, b", "c"])),
 ("abc_none_trailing", sm(1, ["a, None"], ["a"])),
]
write("fuzz_shard_map", shard_map)

# ---- fuzz_api_sequence ----
# The tables are fuzz_api_sequence.cpp's (kSpecTexts, kAxesTexts, kAxisNames,
# the sizes and dtypes it picks from); each Seq method writes the bytes of
# one call the way that call's op_* function reads them.
d = os.path.join(root, "fuzz_api_sequence")
os.makedirs(d, exist_ok=True)

SPEC = ["", "x", "y", "x, y", "y, x", "(x, y)", "None, x", "P('x', None)", "(y, z), x", "x, x",
        "x,,y", "z, None, y", "P(", "PartitionSpec((), 'y')"]
AXES = ["x", "y", "z", "(x, y)", "y,x", "('x', 'z')", "x, x", "", "q"]
NAMES = ["x", "y", "z", "x", "None", "1a", ""]
SIZES = [1, 2, 2, 4, 3, 0, -2]
DTYPES = {"f32": 0, "f64": 1, "f16": 2, "bf16": 3, "i32": 4, "i64": 5, "u8": 6, "bool": 7, "bad0": 10, "bad9": 11}
DIMS = {1: 0, 2: 1, 3: 2, 4: 3, 5: 4, 0: 5, -1: 8}

class Seq:
    def __init__(self): self.b = []
    def v(self, x): self.b.append(x & 0xff); return self
    def spec(self, text):
        if text in SPEC: return self.v(SPEC.index(text))
        assert len(text) < 16
        self.v(len(SPEC)).v(len(text))
        for c in text.encode(): self.v(c)
        return self
    def axes(self, text):
        if text in AXES: return self.v(AXES.index(text))
        assert len(text) < 16
        self.v(len(AXES)).v(len(text))
        for c in text.encode(): self.v(c)
        return self
    def shape(self, dims):
        self.v(len(dims))
        for n in dims: self.v(DIMS[n])
        return self
    def runtime(self, slot, sim=False, devices=4, workers=1):
        return self.v(0).v(1 if sim else 0).v([1, 2, 3, 4].index(devices)).v(workers).v(slot)
    def mesh(self, rt, shape, names, slot, ids=None):
        self.v(1).v(rt).v(len(shape))
        for n, a in zip(shape, names): self.v(SIZES.index(n)).v(NAMES.index(a))
        if ids is None: self.v(0)
        else:
            self.v(1)
            for i in ids: self.v(i + 1)
        return self.v(slot)
    def spec_parse(self, slot, text): return self.v(2).v(slot).v(1).spec(text)
    def spec_build(self, slot, dims):
        self.v(2).v(slot).v(0).v(len(dims))
        for axes in dims:
            a = (axes + ["x", "x"])[:2]
            self.v(NAMES.index(a[0])).v(NAMES.index(a[1])).v(len(axes))
        return self
    def named(self, slot, mesh, spec): return self.v(3).v(slot).v(0).v(mesh).v(spec)
    def named_text(self, slot, mesh, text): return self.v(3).v(slot).v(1).v(mesh).spec(text)
    def replicated(self, slot, mesh): return self.v(3).v(slot).v(2).v(mesh)
    def single(self, slot, rt, dev): return self.v(3).v(slot).v(3).v(rt).v(dev + 1)
    def _array(self, sh, dt, dims, slot, kind):
        return self.v(4).v(sh).v(DTYPES[dt]).shape(dims).v(slot).v(kind)
    def from_host(self, sh, dt, dims, slot, values, wrong=False):
        self._array(sh, dt, dims, slot, 0)
        for x in values: self.v(x)
        return self.v(0 if wrong else 1)
    def zeros(self, sh, dt, dims, slot): return self._array(sh, dt, dims, slot, 1)
    def full(self, sh, dt, dims, slot, value_index): return self._array(sh, dt, dims, slot, 2).v(value_index)
    def arange(self, sh, dt, dims, slot, start_i, step_i): return self._array(sh, dt, dims, slot, 3).v(start_i).v(step_i)
    def random(self, sh, dt, dims, slot, other, seed, uniform):
        return self._array(sh, dt, dims, slot, 4).v(other).v(seed).v(1 if uniform else 0)
    def to_host(self, arr, wrong=False): return self.v(6).v(arr).v(0).v(0 if wrong else 1)
    def query(self, arr): return self.v(6).v(arr).v(1)
    def ready(self, arr): return self.v(6).v(arr).v(2)
    def array_sharding(self, arr, slot): return self.v(6).v(arr).v(3).v(slot)
    def shard_rw(self, arr, index, write): return self.v(6).v(arr).v(4).v(index).v(1 if write else 0)
    def repr(self, arr, str_=False): return self.v(6).v(arr).v(5).v(0 if str_ else 1)
    def reshard(self, arr, sh, slot): return self.v(7).v(arr).v(sh).v(slot)
    def coll_create(self, sh, kind, axes, dt, dims, slot, axis=0, concat=0, tiled=False, pairs=()):
        self.v(8).v(0).v(sh).v(kind).axes(axes).v(DTYPES[dt]).shape(dims)
        self.v(axis + 2).v(concat + 2).v(1 if tiled else 0).v(len(pairs))
        for p in pairs: self.v(p + 1)
        return self.v(slot)
    def coll_exec(self, c, arr, slot): return self.v(8).v(1).v(c).v(arr).v(slot)
    def coll_into(self, c, arr, into): return self.v(8).v(2).v(c).v(arr).v(into)
    def shard_map(self, mesh, inputs, outs, ops, fail=None, check=False, timeout_i=0, out_slots=()):
        self.v(9).v(mesh).v(len(inputs))
        for arr, spec in inputs: self.v(arr).spec(spec)
        self.v(len(outs))
        for spec in outs: self.spec(spec)
        self.v(len(ops))
        for op in ops:
            kind, operand, axes = op["kind"], op.get("operand", 0), op.get("axes", "x")
            self.v(kind).v(operand).axes(axes).v(op.get("a", 0) + 2).v(op.get("b", 0) + 2)
            self.v(1 if op.get("tiled") else 0)
            pairs = op.get("pairs", [])
            self.v(len(pairs))
            for p in pairs: self.v(p + 1)
            if op.get("skip") is None: self.v(1)
            else: self.v(0).v(op["skip"])
        if fail is None: self.v(1)
        else: self.v(0).v(fail)
        self.v(1 if check else 0).v(timeout_i)
        for s in out_slots: self.v(s)
        return self
    def mesh_str(self, mesh, index=0): return self.v(10).v(0).v(mesh).v(index)
    def sharding_str(self, sh, slot): return self.v(10).v(1).v(sh).v(slot)
    def visualize_sharding(self, sh, dims, ascii=True):
        return self.v(10).v(2).v(1 if ascii else 0).v(0).v(0).v(0).v(1).v(sh).shape(dims)
    def visualize_array(self, arr, ascii=False):
        return self.v(10).v(2).v(1 if ascii else 0).v(0).v(0).v(0).v(0).v(arr).v(1)
    def equal(self, a, b): return self.v(10).v(3).v(a).v(b)
    def device_info(self, rt, dev): return self.v(10).v(4).v(rt).v(dev + 1).v(dev + 1)
    def destroy(self, kind, slot): return self.v(11).v(["runtime", "mesh", "spec", "sharding", "array", "collective"].index(kind)).v(slot)
    def end(self): return bytes(self.b)

def base(sim=False, devices=4, shape=(2, 2), names=("x", "y")):
    s = Seq().runtime(0, sim=sim, devices=devices)
    s.mesh(0, list(shape), list(names), 0)
    return s

seeds = {}
# The README's first program: a 2x2 mesh, P('x', 'y'), arange, picture.
s = base(); s.named_text(0, 0, "x, y").arange(0, "f32", [4, 4], 0, 0, 1).visualize_array(0).to_host(0)
seeds["first_program"] = s.end()
s = base(sim=True); s.named_text(0, 0, "x, y").arange(0, "f32", [4, 4], 0, 0, 1).visualize_array(0, True).to_host(0)
seeds["first_program_sim"] = s.end()
# device_put and back, every dtype.
for dt in ["f32", "f64", "i32", "i64", "u8", "bool"]:
    s = base(); s.named_text(0, 0, "x").from_host(0, dt, [4, 2], 0, [0, 1, 2, 3, 1, 2, 3, 0]).to_host(0).query(0)
    seeds["from_host_" + dt] = s.end()
s = base(); s.named_text(0, 0, "y").from_host(0, "f32", [3], 0, [1, 2, 3], wrong=True)
seeds["from_host_wrong_nbytes"] = s.end()
s = base(); s.named_text(0, 0, "x").full(0, "bf16", [2, 3], 0, 2).repr(0).repr(0, True).to_host(0)
seeds["full_bf16_repr"] = s.end()
s = base(); s.named_text(0, 0, "x").full(0, "i32", [2, 2], 0, 6).full(0, "u8", [3], 1, 7).to_host(0).to_host(1)
seeds["full_out_of_range"] = s.end()
# Reshard between layouts, uneven too, and onto another mesh.
s = base(); s.named_text(0, 0, "x, y").named_text(1, 0, "y, x").arange(0, "i32", [5, 3], 0, 1, 1)
s.reshard(0, 1, 1).to_host(1).reshard(1, 0, 2).to_host(2)
seeds["reshard_uneven"] = s.end()
s = base(devices=4); s.mesh(0, [4], ["x"], 1).named_text(0, 0, "x").named_text(1, 1, "x")
s.arange(0, "f64", [4, 3], 0, 0, 1).reshard(0, 1, 1).to_host(1).query(1)
seeds["reshard_other_mesh"] = s.end()
s = base(); s.single(0, 0, 2).replicated(1, 0).arange(0, "f32", [5], 0, 1, 2).reshard(0, 1, 1).to_host(1).query(0)
seeds["single_device_to_replicated"] = s.end()
# Handles destroyed, twice, and used after.
s = base(); s.named_text(0, 0, "x").zeros(0, "f32", [2], 0).destroy("array", 0).destroy("array", 0).to_host(0).query(0)
seeds["array_double_destroy_use"] = s.end()
s = base(); s.named_text(0, 0, "x").destroy("mesh", 0).named_text(1, 0, "y").zeros(0, "f32", [2], 0).to_host(0)
seeds["mesh_destroyed_sharding_lives"] = s.end()
s = base(); s.named_text(0, 0, "x").zeros(0, "f32", [2], 0).destroy("runtime", 0).to_host(0).reshard(0, 0, 1).to_host(1)
seeds["runtime_destroyed_first"] = s.end()
s = base(); s.destroy("runtime", 0).mesh(0, [2], ["x"], 1).single(0, 0, 0).destroy("runtime", 0)
seeds["runtime_use_after_destroy"] = s.end()
s = Seq(); s.named_text(0, 0, "x").zeros(0, "f32", [2], 0).to_host(0).reshard(0, 0, 0)
seeds["all_null_handles"] = s.end()
# Specs, structured and parsed, and shardings from them.
s = base(); s.spec_build(0, [["x"], [], ["y"]]).spec_parse(1, "x, None, y").named(0, 0, 0).named(1, 0, 1).equal(0, 1).sharding_str(0, 2)
seeds["spec_structured_vs_parsed"] = s.end()
s = base(); s.spec_build(0, [["x", "x"]]).spec_parse(1, "x,,y").spec_parse(2, "(y, z), x").named(0, 0, 2)
seeds["spec_errors"] = s.end()
s = base(); s.mesh(0, [2, 2], ["x", "x"], 1).mesh(0, [2, 0], ["x", "y"], 1).mesh(0, [4, 2], ["x", "y"], 1)
s.mesh(0, [2], ["None"], 1).mesh(0, [2, 2], ["x", "y"], 1, ids=[3, 2, 1, 0]).mesh(0, [2, 2], ["x", "y"], 2, ids=[0, 0, 1, 2])
s.mesh_str(1, 3).mesh_str(1, 4)
seeds["mesh_errors"] = s.end()
s = base(); s.device_info(0, 0).device_info(0, 3).device_info(0, 4).device_info(0, -1)
seeds["device_info"] = s.end()
# Pictures.
s = base(); s.named_text(0, 0, "x, y").visualize_sharding(0, [4, 5]).visualize_sharding(0, [3]).visualize_sharding(0, [2, 2, 2]).visualize_sharding(0, [])
seeds["visualize_shapes"] = s.end()
# Random numbers under two shardings.
s = base(); s.named_text(0, 0, "x, y").named_text(1, 0, "y").random(0, "f32", [4, 4], 0, 1, 7, True).random(1, "i32", [5], 1, 0, 3, False).to_host(0)
seeds["random_two_shardings"] = s.end()
s = base(); s.named_text(0, 0, "x").random(0, "u8", [4, 2], 0, 0, 1, False).random(0, "bool", [2], 1, 0, 1, False)
seeds["random_dtypes"] = s.end()
# Shard reads and writes.
s = base(); s.replicated(0, 0).arange(0, "f32", [2, 2], 0, 0, 1).shard_rw(0, 1, True).shard_rw(0, 4, False).to_host(0)
seeds["shard_read_write"] = s.end()
# Planned collectives.
for name, kind, axes, tiled in [("psum", 1, "x", False), ("pmean", 2, "(x, y)", False), ("pmax", 3, "y", False),
                                ("all_gather", 5, "x", True), ("psum_scatter", 6, "y", True), ("all_to_all", 7, "x", True)]:
    s = base(); s.named_text(0, 0, "x, y").arange(0, "f32", [4, 4], 0, 1, 1)
    s.coll_create(0, kind, axes, "f32", [4, 4], 0, tiled=tiled).coll_exec(0, 0, 1).to_host(1).coll_into(0, 0, 1).to_host(1)
    seeds["collective_" + name] = s.end()
s = base(); s.named_text(0, 0, "x").arange(0, "i32", [4], 0, 0, 1)
s.coll_create(0, 8, "x", "i32", [4], 0, pairs=[0, 1, 1, 0]).coll_exec(0, 0, 1).to_host(1).coll_exec(0, 0, 1)
seeds["collective_ppermute"] = s.end()
s = base(); s.named_text(0, 0, "x").arange(0, "i32", [4], 0, 0, 1)
s.coll_create(0, 0, "x", "i32", [4], 0).coll_create(0, 9, "x", "i32", [4], 0).coll_create(0, 1, "q", "i32", [4], 0)
s.coll_create(0, 6, "x", "i32", [4], 0, tiled=False).coll_create(0, 1, "x", "bad9", [4], 0)
seeds["collective_errors"] = s.end()
s = base(); s.named_text(0, 0, "x").arange(0, "f32", [4], 0, 0, 1).coll_create(0, 1, "x", "f32", [4], 0).destroy("collective", 0).coll_exec(0, 0, 1).destroy("collective", 0)
seeds["collective_destroyed"] = s.end()
# shard_map: identity, collectives, a device that skips, one that fails.
s = base(); s.named_text(0, 0, "x, y").arange(0, "f32", [4, 4], 0, 0, 1)
s.shard_map(0, [(0, "x, y")], ["x, y"], [], out_slots=[1]).to_host(1)
seeds["shard_map_identity"] = s.end()
s = base(); s.named_text(0, 0, "x, y").arange(0, "f32", [4, 4], 0, 0, 1)
s.shard_map(0, [(0, "x, y")], ["y"], [{"kind": 0, "axes": "x"}], out_slots=[1]).to_host(1)
seeds["shard_map_psum"] = s.end()
s = base(sim=True); s.named_text(0, 0, "x, y").arange(0, "f32", [4, 4], 0, 0, 1)
s.shard_map(0, [(0, "x, y")], ["x, y"], [{"kind": 4, "axes": "(x, y)", "a": 0, "tiled": True}, {"kind": 5, "operand": 1, "axes": "(x, y)", "tiled": True}], out_slots=[1]).to_host(1)
seeds["shard_map_gather_scatter_sim"] = s.end()
s = base(); s.named_text(0, 0, "x, y").arange(0, "i32", [4, 4], 0, 0, 1)
s.shard_map(0, [(0, "x, y")], ["x, y"], [{"kind": 6, "axes": "y", "a": 1, "b": 0, "tiled": True}], out_slots=[1]).to_host(1)
seeds["shard_map_all_to_all"] = s.end()
s = base(); s.named_text(0, 0, "x, y").arange(0, "i32", [4, 4], 0, 0, 1)
s.shard_map(0, [(0, "x, y")], ["x, y"], [{"kind": 7, "axes": "x", "pairs": [0, 1, 1, 0]}, {"kind": 8, "axes": "(x, y)"}, {"kind": 9, "axes": "y"}], out_slots=[1]).to_host(1)
seeds["shard_map_ppermute_index_print"] = s.end()
s = base(); s.named_text(0, 0, "x, y").arange(0, "f32", [4, 4], 0, 0, 1)
s.shard_map(0, [(0, "x, y")], ["x, y"], [{"kind": 0, "axes": "x", "skip": 1}], timeout_i=0)
seeds["shard_map_device_skips"] = s.end()
s = base(); s.named_text(0, 0, "x, y").arange(0, "f32", [4, 4], 0, 0, 1)
s.shard_map(0, [(0, "x, y")], ["x, y"], [{"kind": 1, "axes": "y"}], fail=2)
seeds["shard_map_device_fails"] = s.end()
s = base(); s.named_text(0, 0, "x, y").arange(0, "f32", [4, 4], 0, 0, 1)
s.shard_map(0, [(0, "x, y")], [""], [], check=True).shard_map(0, [(0, "x, y")], ["x, y"], [{"kind": 2, "axes": "q"}], timeout_i=4)
seeds["shard_map_check_rep_and_errors"] = s.end()
s = base(); s.shard_map(0, [], ["x"], [{"kind": 10, "a": 2, "b": 1}, {"kind": 0, "axes": "(x, y)"}], out_slots=[0]).to_host(0)
seeds["shard_map_alloc_psum"] = s.end()
s = base(); s.named_text(0, 0, "x").zeros(0, "f32", [4], 0).destroy("array", 0).shard_map(0, [(0, "x")], ["x"], [])
seeds["shard_map_destroyed_input"] = s.end()
s = base(devices=3); s.destroy("mesh", 0).mesh(0, [3], ["x"], 0).named_text(0, 0, "x").arange(0, "f32", [5], 0, 0, 1)
s.shard_map(0, [(0, "x")], ["x"], [{"kind": 4, "axes": "x", "tiled": True}], out_slots=[1]).to_host(1)
seeds["shard_map_uneven_three"] = s.end()
s = Seq().runtime(0, devices=1).mesh(0, [1], ["x"], 0).replicated(0, 0).zeros(0, "f64", [], 0).query(0).to_host(0).repr(0)
seeds["one_device_scalar"] = s.end()
s = Seq().v(0).v(5).v(0).v(1).v(0).v(0).v(6).v(0).v(1).v(0).v(0).v(4).v(6).v(1).v(0)
seeds["runtime_errors"] = s.end()

for name, data in seeds.items():
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)

