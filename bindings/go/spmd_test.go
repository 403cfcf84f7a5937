package spmd_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	spmd "github.com/libspmd/libspmd/bindings/go"
)

// rt is the runtime every test shares: 8 virtual CPU devices.
var rt *spmd.Runtime

func TestMain(m *testing.M) {
	var err error
	rt, err = spmd.NewRuntime(&spmd.RuntimeOptions{Platform: spmd.PlatformCPU, DeviceCount: 8, WorkerThreads: 2})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	rt.Close()
	os.Exit(code)
}

// noLeaks fails the test unless every handle made during it is released by
// its end: LiveHandles comes back to its value at the start.
func noLeaks(t *testing.T) {
	t.Helper()
	before, err := spmd.LiveHandles()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		after, err := spmd.LiveHandles()
		if err != nil {
			t.Fatal(err)
		}
		if after != before {
			t.Errorf("live handles: %d before, %d after", before, after)
		}
	})
}

// must returns v, or panics with err: the test fails with its stack.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantErr checks err is an *spmd.Error matching sentinel whose message
// contains each of parts.
func wantErr(t *testing.T, err error, sentinel error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want %v", sentinel)
	}
	if !errors.Is(err, sentinel) {
		t.Fatalf("error %q is not %v", err, sentinel)
	}
	var e *spmd.Error
	if !errors.As(err, &e) || e.Message == "" {
		t.Fatalf("error %q carries no message", err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not contain %q", err, p)
		}
	}
}

func equal[T comparable](t *testing.T, what string, got, want []T) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: got %v, want %v", what, got, want)
		}
	}
}

func near(t *testing.T, what string, got []float32, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
	for i := range got {
		if math.Abs(float64(got[i])-want[i]) > tol {
			t.Fatalf("%s[%d]: got %v, want %v", what, i, got[i], want[i])
		}
	}
}

func mesh(t *testing.T, shape []int, axes ...string) *spmd.Mesh {
	t.Helper()
	m := must(spmd.NewMesh(rt, shape, axes))
	t.Cleanup(func() { m.Close() })
	return m
}

func named(t *testing.T, m *spmd.Mesh, spec string) *spmd.Sharding {
	t.Helper()
	s := must(spmd.NamedText(m, spec))
	t.Cleanup(func() { s.Close() })
	return s
}

func iota32(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i)
	}
	return v
}

func TestVersionAndDTypes(t *testing.T) {
	v := spmd.Version()
	if want := fmt.Sprintf("%d.%d.%d", v/10000, v/100%100, v%100); spmd.VersionString() != want {
		t.Errorf("version %q, number %d", spmd.VersionString(), v)
	}
	if spmd.F32.Size() != 4 || spmd.BF16.Size() != 2 || spmd.Bool.Size() != 1 || spmd.DTypeInvalid.Size() != 0 {
		t.Error("dtype sizes")
	}
	if spmd.F32.String() != "float32" || spmd.BF16.String() != "bfloat16" {
		t.Errorf("dtype names %q %q", spmd.F32, spmd.BF16)
	}
	if d := must(spmd.ParseDType("int64")); d != spmd.I64 {
		t.Errorf("ParseDType(int64) = %v", d)
	}
	_, err := spmd.ParseDType("float128")
	wantErr(t, err, spmd.ErrInvalidArgument, "float128")
	if spmd.StatusTimeout.String() != "timeout" && !strings.Contains(spmd.StatusTimeout.String(), "timeout") {
		t.Errorf("status name %q", spmd.StatusTimeout)
	}
}

func TestRuntime(t *testing.T) {
	noLeaks(t)
	if n := must(rt.DeviceCount()); n != 8 {
		t.Fatalf("device count %d", n)
	}
	if p := must(rt.Platform()); p != spmd.PlatformCPU {
		t.Errorf("platform %v", p)
	}
	devices := must(rt.Devices())
	d := devices[3]
	if d.ID != 3 || d.String() != "CpuDevice(id=3)" || d.PlatformName != "cpu" || d.Platform != spmd.PlatformCPU || d.LocalIndex != 3 {
		t.Errorf("device 3: %+v", d)
	}
	_, err := rt.Device(99)
	wantErr(t, err, spmd.ErrOutOfRange)
	// One process holds every device.
	if i, n, local := must(rt.ProcessIndex()), must(rt.ProcessCount()), must(rt.LocalDeviceCount()); i != 0 || n != 1 || local != 8 {
		t.Errorf("process %d of %d with %d local devices", i, n, local)
	}
	_, err = spmd.NewRuntime(&spmd.RuntimeOptions{Platform: spmd.PlatformCPU, DeviceCount: 5000})
	wantErr(t, err, spmd.ErrInvalidArgument)
	_, err = spmd.NewRuntime(&spmd.RuntimeOptions{Distributed: spmd.Distributed(9)})
	wantErr(t, err, spmd.ErrInvalidArgument, "NewRuntime: RuntimeOptions.Distributed: 9")
	// A runtime of its own, closed twice, then used.
	r2 := must(spmd.NewRuntime(&spmd.RuntimeOptions{Platform: spmd.PlatformCPU, DeviceCount: 2, WorkerThreads: 1}))
	if n := must(r2.DeviceCount()); n != 2 {
		t.Errorf("device count %d", n)
	}
	ok(t, r2.Close())
	ok(t, r2.Close())
	// Exact reductions change nothing in one process.
	r3 := must(spmd.NewRuntime(&spmd.RuntimeOptions{Platform: spmd.PlatformCPU, DeviceCount: 2, ExactReductions: true}))
	ok(t, r3.Close())
	_, err = r2.DeviceCount()
	wantErr(t, err, spmd.ErrInvalidArgument, "runtime")
	_, err = spmd.NewMesh(r2, []int{2}, []string{"x"})
	wantErr(t, err, spmd.ErrInvalidArgument)
}

func TestMesh(t *testing.T) {
	noLeaks(t)
	m := mesh(t, []int{2, 4}, "x", "y")
	if n := must(m.NDim()); n != 2 {
		t.Errorf("ndim %d", n)
	}
	if n := must(m.Size()); n != 8 {
		t.Errorf("size %d", n)
	}
	equal(t, "axes", must(m.AxisNames()), []string{"x", "y"})
	equal(t, "shape", must(m.Shape()), []int{2, 4})
	if i := must(m.AxisIndex("y")); i != 1 {
		t.Errorf("axis index %d", i)
	}
	if d := must(m.DeviceAt(1, 2)); d != 6 {
		t.Errorf("device at (1, 2): %d", d)
	}
	equal(t, "coords", must(m.DeviceCoords(6)), []int{1, 2})
	if s := m.String(); s != "Mesh('x': 2, 'y': 4)" {
		t.Errorf("mesh %q", s)
	}
	_, err := m.AxisIndex("z")
	wantErr(t, err, spmd.ErrInvalidArgument, "z")
	_, err = m.AxisName(5)
	wantErr(t, err, spmd.ErrOutOfRange)

	rev := must(spmd.NewMesh(rt, []int{4}, []string{"d"}, 3, 2, 1, 0))
	defer rev.Close()
	equal(t, "devices", must(rev.Devices()), []int{3, 2, 1, 0})
	if eq := must(m.Equal(rev)); eq {
		t.Error("different meshes equal")
	}
	same := mesh(t, []int{2, 4}, "x", "y")
	if eq := must(m.Equal(same)); !eq {
		t.Error("equal meshes differ")
	}
	_, err = spmd.NewMesh(rt, []int{2, 2}, []string{"x", "x"})
	wantErr(t, err, spmd.ErrInvalidArgument, "x")
	_, err = spmd.NewMesh(rt, []int{2}, []string{"x", "y"})
	wantErr(t, err, spmd.ErrInvalidArgument, "axis names")
	_, err = spmd.NewMesh(rt, []int{2}, []string{"x"}, 0)
	wantErr(t, err, spmd.ErrInvalidArgument, "device ids")
}

func TestSpec(t *testing.T) {
	noLeaks(t)
	s := must(spmd.ParseSpec("(x, y), None"))
	defer s.Close()
	if n := must(s.NDim()); n != 2 {
		t.Errorf("ndim %d", n)
	}
	dims := must(s.Dims())
	equal(t, "dim 0", dims[0], []string{"x", "y"})
	equal(t, "dim 1", dims[1], []string{})
	if got := s.String(); got != "PartitionSpec(('x', 'y'), None)" {
		t.Errorf("spec %q", got)
	}
	built := must(spmd.NewSpec([]string{"x", "y"}))
	defer built.Close()
	if eq := must(s.Equal(built)); !eq {
		t.Error("P(('x','y')) != P(('x','y'), None)")
	}
	ok(t, built.Append("z"))
	if got := built.String(); got != "PartitionSpec(('x', 'y'), 'z')" {
		t.Errorf("appended spec %q", got)
	}
	wantErr(t, built.Append("x"), spmd.ErrInvalidArgument, "x")
	_, err := spmd.ParseSpec("x,,y")
	wantErr(t, err, spmd.ErrInvalidArgument, "column 3")
	_, err = s.Dim(7)
	wantErr(t, err, spmd.ErrOutOfRange)
}

func TestSharding(t *testing.T) {
	noLeaks(t)
	m := mesh(t, []int{2, 4}, "x", "y")
	s := named(t, m, "P('x', 'y')")
	if k := must(s.Kind()); k != spmd.ShardingNamed {
		t.Errorf("kind %v", k)
	}
	if s.String() != "NamedSharding(mesh=Mesh('x': 2, 'y': 4), spec=PartitionSpec('x', 'y'), memory_kind=device)" {
		t.Errorf("sharding %q", s)
	}
	sm := must(s.Mesh())
	if eq := must(sm.Equal(m)); !eq {
		t.Error("sharding's mesh differs")
	}
	spec := must(s.Spec())
	want := must(spmd.NewSpec([]string{"x"}, []string{"y"}))
	defer want.Close()
	if eq := must(spec.Equal(want)); !eq {
		t.Errorf("spec %v", spec)
	}
	viaSpec := must(spmd.Named(m, want))
	defer viaSpec.Close()
	if eq := must(viaSpec.Equal(s)); !eq {
		t.Error("Named and NamedText differ")
	}
	if n := must(s.DeviceCount()); n != 8 {
		t.Errorf("device count %d", n)
	}
	if r := must(s.IsFullyReplicated()); r {
		t.Error("split sharding fully replicated")
	}
	rep := must(spmd.Replicated(m))
	defer rep.Close()
	if r := must(rep.IsFullyReplicated()); !r {
		t.Error("replicated sharding not fully replicated")
	}
	info := must(s.ShardInfo([]int{8, 12}, 6))
	if info.Device != 6 || info.ReplicaID != 0 {
		t.Errorf("shard 6: %+v", info)
	}
	equal(t, "start", info.Start, []int{4, 6})
	equal(t, "stop", info.Stop, []int{8, 9})
	equal(t, "local shape", info.LocalShape, []int{4, 3})
	info = must(rep.ShardInfoOfDevice([]int{8, 12}, 5))
	if info.Device != 5 || info.ReplicaID != 5 {
		t.Errorf("replicated shard on device 5: %+v", info)
	}
	pic := must(s.Visualize([]int{8, 12}, &spmd.VisualizeOptions{ASCII: true}))
	if !strings.Contains(pic, "CPU 6") || !strings.Contains(pic, "+") || !strings.HasSuffix(pic, "\n") {
		t.Errorf("picture:\n%s", pic)
	}
	single := must(spmd.SingleDevice(rt, 2))
	defer single.Close()
	if k := must(single.Kind()); k != spmd.ShardingSingleDevice {
		t.Errorf("kind %v", k)
	}
	_, err := spmd.NamedText(m, "x, modle")
	wantErr(t, err, spmd.ErrInvalidArgument, "modle")
	_, err = spmd.SingleDevice(rt, 8)
	wantErr(t, err, spmd.ErrOutOfRange)
	_, err = spmd.Named(nil, nil)
	wantErr(t, err, spmd.ErrInvalidArgument)
}

func roundTrip[T spmd.Element](t *testing.T, s *spmd.Sharding, data []T) {
	t.Helper()
	a := must(spmd.FromHost(s, []int{2, len(data) / 2}, data))
	defer a.Close()
	if d := must(a.DType()); d != spmd.DTypeOf[T]() {
		t.Errorf("dtype %v", d)
	}
	equal(t, fmt.Sprintf("%T round trip", data), must(spmd.ToHost[T](a)), data)
}

func TestArrayHostData(t *testing.T) {
	noLeaks(t)
	m := mesh(t, []int{2}, "x")
	s := named(t, m, "x")
	roundTrip(t, s, []float32{1.5, -2, 3, 4})
	roundTrip(t, s, []float64{1e300, -2, 3, 4})
	roundTrip(t, s, []int32{1, -2, 1 << 30, 4})
	roundTrip(t, s, []int64{1 << 40, -2, 3, 4})
	roundTrip(t, s, []uint8{1, 2, 255, 4})
	roundTrip(t, s, []bool{true, false, false, true})
	roundTrip(t, s, []int8{1, -2, 127, -128})
	roundTrip(t, s, []int16{1, -2, 32767, -32768})
	roundTrip(t, s, []uint16{1, 2, 65535, 4})
	roundTrip(t, s, []uint32{1, 2, 4294967295, 1 << 31})

	bits := []uint16{0x3c00, 0x4000, 0xc000, 0x0000} // 1, 2, -2, 0 as float16
	h := must(spmd.FromHostAs(s, spmd.F16, []int{4}, bits))
	defer h.Close()
	equal(t, "f16 bits", must(spmd.ToHostAs[uint16](h)), bits)
	if r := must(h.Repr()); r != "Array([ 1.,  2., -2.,  0.], dtype=float16)" {
		t.Errorf("f16 repr %q", r)
	}

	a := must(spmd.FromHost(s, []int{2, 3}, iota32(6)))
	defer a.Close()
	equal(t, "shape", must(a.Shape()), []int{2, 3})
	if n := must(a.NDim()); n != 2 {
		t.Errorf("ndim %d", n)
	}
	if n := must(a.Size()); n != 6 {
		t.Errorf("size %d", n)
	}
	if n := must(a.NBytes()); n != 24 {
		t.Errorf("nbytes %d", n)
	}
	if got := must(a.Str()); got != "[[0. 1. 2.]\n [3. 4. 5.]]" {
		t.Errorf("str %q", got)
	}
	_, err := spmd.ToHost[int32](a)
	wantErr(t, err, spmd.ErrInvalidArgument, "float32")

	// One process holds every shard: process_allgather is to_host.
	if full := must(a.IsFullyAddressable()); !full {
		t.Errorf("an array of one process is not fully addressable")
	}
	equal(t, "process allgather", must(spmd.ProcessAllgather[float32](a)), must(spmd.ToHost[float32](a)))
	equal(t, "process allgather f16 bits", must(spmd.ProcessAllgatherAs[uint16](h)), bits)
	_, err = spmd.ProcessAllgather[int32](a)
	wantErr(t, err, spmd.ErrInvalidArgument, "float32")
	_, err = (*spmd.Array)(nil).IsFullyAddressable()
	wantErr(t, err, spmd.ErrInvalidArgument)
	// This process's part of the array is all of it.
	equal(t, "process local shape", must(s.ProcessLocalShape([]int{2, 3})), []int{2, 3})
	local := must(spmd.FromProcessLocalData(s, []int{2, 3}, iota32(6)))
	defer local.Close()
	equal(t, "from process local data", must(spmd.ToHost[float32](local)), iota32(6))
	_, err = spmd.FromProcessLocalData(s, []int{2, 3}, iota32(5))
	wantErr(t, err, spmd.ErrInvalidArgument)
	_, err = s.ProcessLocalShape([]int{2, -3})
	wantErr(t, err, spmd.ErrInvalidArgument)

	// A host slice of the wrong length: libspmd's message names it.
	_, err = spmd.FromHost(s, []int{2, 3}, iota32(5))
	wantErr(t, err, spmd.ErrInvalidArgument, "FromHost: data: 20 bytes")
	_, err = spmd.FromHost(s, []int{-1}, iota32(0))
	wantErr(t, err, spmd.ErrInvalidArgument)
}

func TestArrayCreatorsAndShards(t *testing.T) {
	noLeaks(t)
	m := mesh(t, []int{4}, "x")
	s := named(t, m, "x")
	z := must(spmd.Zeros(s, spmd.I32, []int{8}))
	defer z.Close()
	equal(t, "zeros", must(spmd.ToHost[int32](z)), make([]int32, 8))
	f := must(spmd.Full(s, spmd.I64, []int{4}, 2.9))
	defer f.Close()
	equal(t, "full", must(spmd.ToHost[int64](f)), []int64{2, 2, 2, 2})
	a := must(spmd.Arange(s, spmd.F32, []int{8}, 1, 0.5))
	defer a.Close()
	ok(t, a.BlockUntilReady())
	equal(t, "arange", must(spmd.ToHost[float32](a)), []float32{1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5})
	if r := must(a.Repr()); r != "Array([1. , 1.5, 2. , 2.5, 3. , 3.5, 4. , 4.5], dtype=float32)" {
		t.Errorf("repr %q", r)
	}

	shards := must(a.Shards())
	if len(shards) != 4 || shards[2].Device != 2 {
		t.Fatalf("shards %+v", shards)
	}
	equal(t, "shard 2 start", shards[2].Start, []int{4})
	equal(t, "shard 2", must(spmd.ShardRead[float32](a, 2)), []float32{3, 3.5})
	ok(t, spmd.ShardWrite(a, 2, []float32{-1, -2}))
	equal(t, "after write", must(spmd.ToHost[float32](a)), []float32{1, 1.5, 2, 2.5, -1, -2, 4, 4.5})
	info := must(a.ShardInfoOfDevice(3))
	equal(t, "shard on device 3", info.LocalShape, []int{2})
	wantErr(t, spmd.ShardWrite(a, 2, []float32{1}), spmd.ErrInvalidArgument)
	_, err := a.ShardInfo(4)
	wantErr(t, err, spmd.ErrOutOfRange)
	_, err = a.Device()
	wantErr(t, err, spmd.ErrInvalidArgument)

	single := must(spmd.SingleDevice(rt, 5))
	defer single.Close()
	b := must(a.Reshard(single))
	defer b.Close()
	if d := must(b.Device()); d != 5 {
		t.Errorf("device %d", d)
	}
	bs := must(b.Sharding())
	if eq := must(bs.Equal(single)); !eq {
		t.Errorf("resharded onto %v", bs)
	}
	equal(t, "resharded", must(spmd.ToHost[float32](b)), must(spmd.ToHost[float32](a)))
	pic := must(a.Visualize(nil))
	if !strings.Contains(pic, "CPU 3") {
		t.Errorf("picture:\n%s", pic)
	}
}

func TestFromSingleDeviceArrays(t *testing.T) {
	noLeaks(t)
	s := named(t, mesh(t, []int{2, 2}, "x", "y"), "x, y")
	shape := []int{4, 6}
	whole := iota32(24)
	n := must(s.DeviceCount())
	// One single-device array per device holding its block, given in
	// reverse order: any order will do.
	blocks := make([]*spmd.Array, n)
	for i := 0; i < n; i++ {
		info := must(s.ShardInfo(shape, i))
		var block []float32
		for r := info.Start[0]; r < info.Stop[0]; r++ {
			block = append(block, whole[r*shape[1]+info.Start[1]:r*shape[1]+info.Stop[1]]...)
		}
		single := must(spmd.SingleDevice(rt, info.Device))
		blocks[n-1-i] = must(spmd.FromHost(single, info.LocalShape, block))
		single.Close()
	}
	defer func() {
		for _, b := range blocks {
			b.Close()
		}
	}()
	a := must(spmd.FromSingleDeviceArrays(s, spmd.F32, shape, blocks))
	defer a.Close()
	as := must(a.Sharding())
	if eq := must(as.Equal(s)); !eq {
		t.Errorf("sharding %v", as)
	}
	equal(t, "from single device arrays", must(spmd.ToHost[float32](a)), whole)
	// The blocks were copied: they stay the caller's and usable.
	equal(t, "block kept", must(spmd.ToHost[float32](blocks[0])), must(spmd.ShardRead[float32](a, n-1)))

	_, err := spmd.FromSingleDeviceArrays(s, spmd.F32, shape, blocks[:n-1])
	wantErr(t, err, spmd.ErrInvalidArgument, "count")
}

func TestCheckpoint(t *testing.T) {
	noLeaks(t)
	dir := filepath.Join(t.TempDir(), "checkpoint") // made by Save
	grid := mesh(t, []int{2, 2}, "x", "y")
	a := must(spmd.Arange(named(t, grid, "x, y"), spmd.F32, []int{2, 4}, 0, 1))
	defer a.Close()
	ok(t, a.Save(dir))

	// Restored under another sharding, on another mesh: the saved dtype,
	// shape and values.
	cols := named(t, mesh(t, []int{4}, "d"), "None, d")
	b := must(spmd.Load(cols, dir))
	defer b.Close()
	if d := must(b.DType()); d != spmd.F32 {
		t.Errorf("dtype %v", d)
	}
	equal(t, "loaded shape", must(b.Shape()), []int{2, 4})
	bs := must(b.Sharding())
	if eq := must(bs.Equal(cols)); !eq {
		t.Errorf("loaded onto %v", bs)
	}
	equal(t, "loaded", must(spmd.ToHost[float32](b)), must(spmd.ToHost[float32](a)))

	// A directory holds one checkpoint.
	wantErr(t, b.Save(dir), spmd.ErrInvalidArgument, "already holds a checkpoint")
	// Nothing to load, or a path C would cut short.
	_, err := spmd.Load(cols, filepath.Join(dir, "missing"))
	wantErr(t, err, spmd.ErrInvalidArgument)
	_, err = spmd.Load(cols, dir+"\x00")
	wantErr(t, err, spmd.ErrInvalidArgument, "NUL")
	wantErr(t, (*spmd.Array)(nil).Save(dir), spmd.ErrInvalidArgument)
}

func TestRandom(t *testing.T) {
	noLeaks(t)
	k := must(spmd.Key(1<<32 + 5))
	if k != (spmd.PRNGKey{1, 5}) {
		t.Errorf("key %v", k)
	}
	k0 := must(spmd.Key(0))
	keys3 := must(k0.Split(3))
	keys2 := must(k0.Split(2))
	if keys3[0] != keys2[0] || keys3[1] != keys2[1] || keys3[0] == keys3[1] {
		t.Errorf("split %v %v", keys3, keys2)
	}
	f1 := must(k0.FoldIn(7))
	f2 := must(k0.FoldIn(7))
	if f1 != f2 || f1 == k0 {
		t.Errorf("fold_in %v", f1)
	}
	m := mesh(t, []int{4}, "x")
	split := named(t, m, "x")
	rep := must(spmd.Replicated(m))
	defer rep.Close()
	u := must(spmd.Uniform(split, k0, spmd.F32, []int{64}, -2, 3))
	defer u.Close()
	for _, v := range must(spmd.ToHost[float32](u)) {
		if v < -2 || v >= 3 {
			t.Fatalf("uniform value %v", v)
		}
	}
	n1 := must(spmd.Normal(split, k0, spmd.F32, []int{64}))
	defer n1.Close()
	n2 := must(spmd.Normal(rep, k0, spmd.F32, []int{64}))
	defer n2.Close()
	equal(t, "normal across shardings", must(spmd.ToHost[float32](n1)), must(spmd.ToHost[float32](n2)))
	tn := must(spmd.TruncatedNormal(split, k0, spmd.F64, []int{64}, -0.5, 0.5))
	defer tn.Close()
	for _, v := range must(spmd.ToHost[float64](tn)) {
		if v <= -0.5 || v >= 0.5 {
			t.Fatalf("truncated normal value %v", v)
		}
	}
	bits := must(spmd.Bits(split, k0, spmd.U8, []int{16}))
	defer bits.Close()
	if d := must(bits.DType()); d != spmd.U8 {
		t.Errorf("bits dtype %v", d)
	}
	_, err := spmd.TruncatedNormal(split, k0, spmd.F32, []int{4}, 1, -1)
	wantErr(t, err, spmd.ErrInvalidArgument)
	_, err = spmd.Uniform(split, k0, spmd.I32, []int{4}, 0, 1)
	wantErr(t, err, spmd.ErrInvalidArgument)
}

func TestDLPack(t *testing.T) {
	noLeaks(t)
	s := named(t, mesh(t, []int{4}, "x"), "x")
	shape := []int{8}
	a := must(spmd.Arange(s, spmd.F32, shape, 0, 1))
	n := must(a.ShardCount())
	tensors := make([]unsafe.Pointer, n)
	devices := make([]int, n)
	for i := 0; i < n; i++ {
		tensors[i] = must(a.ShardToDLPack(i))
		devices[i] = must(a.ShardInfo(i)).Device
	}
	// The exports outlive the array: they hold its memory.
	a.Close()

	// Refused: the caller keeps the tensors.
	_, err := spmd.FromDLPack(s, spmd.F32, shape, devices[:1], tensors)
	wantErr(t, err, spmd.ErrInvalidArgument, "devices for")
	_, err = spmd.FromDLPack(s, spmd.I32, shape, devices, tensors)
	wantErr(t, err, spmd.ErrInvalidArgument, "tensors[0]: of float32")
	_, err = a.ShardToDLPack(0)
	wantErr(t, err, spmd.ErrInvalidArgument, "array")

	// Adopted back without a copy: the same values; the array calls the
	// deleters when closed.
	b := must(spmd.FromDLPack(s, spmd.F32, shape, devices, tensors))
	equal(t, "adopted", must(spmd.ToHost[float32](b)), []float32{0, 1, 2, 3, 4, 5, 6, 7})
	b.Close()

	// A tensor not handed on is deleted by the caller.
	c := must(spmd.Zeros(s, spmd.F32, shape))
	defer c.Close()
	spmd.DeleteDLPack(must(c.ShardToDLPack(1)))
	spmd.DeleteDLPack(nil)
}

// The narrow integer types promote, wrap and sum as JAX's: int8 with uint8
// meets in int16, int8 sums wrap, uint8 sums give uint32, and a scalar
// past int8 is refused naming it.
func TestNarrowIntegersFollowJAX(t *testing.T) {
	noLeaks(t)
	m := mesh(t, []int{2}, "x")
	s := named(t, m, "x")
	i8 := must(spmd.FromHost(s, []int{4}, []int8{100, -2, 127, -128}))
	defer i8.Close()
	u8 := must(spmd.FromHost(s, []int{4}, []uint8{200, 2, 255, 0}))
	defer u8.Close()
	if r := must(i8.Repr()); r != "Array([ 100,   -2,  127, -128], dtype=int8)" {
		t.Errorf("int8 repr %q", r)
	}
	wrapped := must(spmd.Binary(spmd.Add, i8, i8))
	defer wrapped.Close()
	equal(t, "int8 + int8", must(spmd.ToHost[int8](wrapped)), []int8{-56, -4, -2, 0})
	mixed := must(spmd.Binary(spmd.Add, i8, u8))
	defer mixed.Close()
	equal(t, "int8 + uint8", must(spmd.ToHost[int16](mixed)), []int16{300, 0, 382, -128})
	sum := must(spmd.Sum(u8, nil))
	defer sum.Close()
	equal(t, "sum of uint8", must(spmd.ToHost[uint32](sum)), []uint32{457})
	big := must(spmd.Astype(u8, spmd.U32))
	defer big.Close()
	neg := must(spmd.ScalarBinary(spmd.Sub, 0, big))
	defer neg.Close()
	equal(t, "0 - uint32", must(spmd.ToHost[uint32](neg)), []uint32{4294967096, 4294967294, 4294967041, 0})
	// A Python-style scalar becomes int8 as JAX converts it: 300 adds 44.
	plus := must(spmd.BinaryScalar(spmd.Add, i8, 300))
	defer plus.Close()
	equal(t, "int8 + 300", must(spmd.ToHost[int8](plus)), []int8{-112, 42, -85, -84})
	_, err := spmd.BinaryScalar(spmd.Add, i8, 1<<31)
	wantErr(t, err, spmd.ErrInvalidArgument, "is outside int32")
	_, err = spmd.ToHost[uint8](i8)
	wantErr(t, err, spmd.ErrInvalidArgument, "int8")
}
