package spmd_test

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	spmd "github.com/libspmd/libspmd/bindings/go"
)

// wantGoErr is wantErr for a message that must also be in Go's terms: no C
// function or handle type (spmd_...) in it.
func wantGoErr(t *testing.T, err error, sentinel error, parts ...string) {
	t.Helper()
	wantErr(t, err, sentinel, parts...)
	if strings.Contains(err.Error(), "spmd_") {
		t.Errorf("error %q names C", err)
	}
}

// TestGettersLeakNothing: the objects getters return belong to their
// owner, so calling a getter in a chain, again and again, makes one
// handle per owner and getter, freed when the owner is closed.
func TestGettersLeakNothing(t *testing.T) {
	noLeaks(t)
	m := mesh(t, []int{2, 4}, "x", "y")
	s := named(t, m, "x, y")
	a := must(spmd.Zeros(s, spmd.F32, []int{4, 8}))
	before := must(spmd.LiveHandles())
	for i := 0; i < 100; i++ {
		if got := fmt.Sprint(must(a.Sharding())); !strings.Contains(got, "PartitionSpec('x', 'y')") {
			t.Fatalf("sharding %q", got)
		}
		if got := fmt.Sprint(must(must(a.Sharding()).Mesh())); got != "Mesh('x': 2, 'y': 4)" {
			t.Fatalf("mesh %q", got)
		}
		if got := fmt.Sprint(must(must(a.Sharding()).Spec())); got != "PartitionSpec('x', 'y')" {
			t.Fatalf("spec %q", got)
		}
	}
	// The array's sharding, its mesh and its spec: three handles, whatever
	// the number of calls.
	if n := must(spmd.LiveHandles()); n != before+3 {
		t.Errorf("live handles: %d after 300 getter chains, %d before", n, before)
	}
	// Their Close does nothing; the views stay usable while the array is
	// open.
	view := must(a.Sharding())
	spec := must(view.Spec())
	ok(t, view.Close())
	ok(t, must(view.Mesh()).Close())
	ok(t, spec.Close())
	if eq := must(view.Equal(s)); !eq {
		t.Errorf("the array's sharding %v differs from %v", view, s)
	}
	// A borrowed spec is read-only: copy it to change it.
	wantGoErr(t, spec.Append("z"), spmd.ErrInvalidArgument, "Spec.Append", "read-only")
	mine := must(spmd.NewSpec(must(spec.Dims())...))
	ok(t, mine.Append())
	ok(t, mine.Close())
	if n := must(spmd.LiveHandles()); n != before+3 {
		t.Errorf("live handles: %d, want %d", n, before+3)
	}

	// Closing the array frees them, and the views say so when used.
	ok(t, a.Close())
	if n := must(spmd.LiveHandles()); n != before-1 {
		t.Errorf("live handles after Close: %d, want %d", n, before-1)
	}
	_, err := view.Text()
	wantGoErr(t, err, spmd.ErrInvalidArgument, "Sharding.Text", "not a live Sharding")
	_, err = view.Mesh()
	wantGoErr(t, err, spmd.ErrInvalidArgument, "Sharding.Mesh")
	_, err = a.Sharding()
	wantGoErr(t, err, spmd.ErrInvalidArgument, "Array.Sharding", "not a live Array")
	_, err = (*spmd.Array)(nil).Sharding()
	wantGoErr(t, err, spmd.ErrInvalidArgument, "Array.Sharding")

	// A collective's output sharding, the same way.
	c := must(spmd.NewCollective(s, spmd.CollectivePsum, "x", spmd.F32, []int{4, 8}, nil))
	for i := 0; i < 10; i++ {
		if full := must(must(c.OutputSharding()).IsFullyReplicated()); full {
			t.Fatal("psum over x replicates over y too")
		}
	}
	// The array's handle is gone; the collective's and its output
	// sharding's are here.
	if n := must(spmd.LiveHandles()); n != before+1 {
		t.Errorf("live handles with a collective: %d, want %d", n, before+1)
	}
	ok(t, c.Close())
}

// TestGettersConcurrently: goroutines asking the same array for its
// sharding and mesh at once share one handle of each (run under -race).
func TestGettersConcurrently(t *testing.T) {
	noLeaks(t)
	s := named(t, mesh(t, []int{4}, "x"), "x")
	a := must(spmd.Zeros(s, spmd.F32, []int{8}))
	defer a.Close()
	before := must(spmd.LiveHandles())
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if _, err := must(a.Sharding()).Mesh(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := must(spmd.LiveHandles()); n != before+2 {
		t.Errorf("live handles %d, want %d", n, before+2)
	}
}

// TestViewsKeepTheirOwner: a view in use keeps the array it came from
// from being collected (and its finalizer from freeing the view's
// handle); once both are unreachable the finalizer frees both.
func TestViewsKeepTheirOwner(t *testing.T) {
	noLeaks(t)
	before := must(spmd.LiveHandles())
	s := named(t, mesh(t, []int{2}, "x"), "x")
	view := func() *spmd.Sharding {
		a := must(spmd.Zeros(s, spmd.F32, []int{4}))
		return must(a.Sharding())
	}()
	for i := 0; i < 5; i++ {
		runtime.GC()
	}
	if eq := must(view.Equal(s)); !eq {
		t.Errorf("view %v", view)
	}
	runtime.KeepAlive(view)
	view = nil
	deadline := time.Now().Add(10 * time.Second)
	for must(spmd.LiveHandles()) != before+2 { // the mesh and sharding of this test
		if time.Now().After(deadline) {
			t.Fatalf("live handles %d, want %d", must(spmd.LiveHandles()), before+2)
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

func TestIntsAtTheBoundary(t *testing.T) {
	noLeaks(t)
	m := mesh(t, []int{2, 2}, "x", "y")
	equal(t, "mesh shape", must(m.Shape()), []int{2, 2})
	equal(t, "coords", must(m.DeviceCoords(3)), []int{1, 1})
	if size := must(m.AxisSize(1)); size != 2 {
		t.Errorf("axis size %d", size)
	}
	a := must(spmd.Arange(named(t, m, "x"), spmd.I32, []int{4, 2}, 0, 1))
	defer a.Close()
	if n, b := must(a.Size()), must(a.NBytes()); n != 8 || b != 32 {
		t.Errorf("size %d, nbytes %d", n, b)
	}
	info := must(a.ShardInfo(2))
	equal(t, "start", info.Start, []int{2, 0})
	equal(t, "local shape", info.LocalShape, []int{2, 2})
	if strconv.IntSize == 64 {
		// Device ids are C ints: a larger id is refused, not wrapped to 0.
		_, err := spmd.SingleDevice(rt, 1<<32)
		wantGoErr(t, err, spmd.ErrInvalidArgument, "SingleDevice: device: 4294967296 does not fit")
		_, err = spmd.NewMesh(rt, []int{2}, []string{"x"}, 0, 1<<32+1)
		wantGoErr(t, err, spmd.ErrInvalidArgument, "NewMesh: devices[1]")
		_, err = rt.Device(1 << 32)
		wantGoErr(t, err, spmd.ErrInvalidArgument, "Runtime.Device: id")
	}
}

func TestOpOptions(t *testing.T) {
	noLeaks(t)
	m := mesh(t, []int{2, 2}, "x", "y")
	s := named(t, m, "x, y")
	x := must(spmd.FromHost(s, []int{2, 4}, iota32(8)))
	defer x.Close()
	rep := must(spmd.Replicated(m))
	defer rep.Close()

	y := must(spmd.Sum(x, []int{1}, spmd.KeepDims(), spmd.OutSharding(rep)))
	defer y.Close()
	equal(t, "keepdims shape", must(y.Shape()), []int{2, 1})
	equal(t, "sum", must(spmd.ToHost[float32](y)), []float32{6, 22})
	if full := must(must(y.Sharding()).IsFullyReplicated()); !full {
		t.Errorf("out sharding %v", must(y.Sharding()))
	}
	all := must(spmd.Mean(x, nil, nil)) // a nil option is no option
	defer all.Close()
	equal(t, "mean", must(spmd.ToHost[float32](all)), []float32{3.5})
	ls := must(spmd.LogSoftmax(x, 1))
	defer ls.Close()
	if v := must(spmd.ToHost[float32](ls)); v[3] >= 0 || v[3] < -1 {
		t.Errorf("log_softmax %v", v)
	}

	_, err := spmd.Unary(spmd.Exp, x, spmd.KeepDims())
	wantGoErr(t, err, spmd.ErrInvalidArgument, "Unary: KeepDims applies to reductions only")
	_, err = spmd.Binary(spmd.Add, x, x, spmd.Donate(0, 40))
	wantGoErr(t, err, spmd.ErrInvalidArgument, "Binary: Donate: operand 40")
	// Refused: x is not donated and stays usable.
	equal(t, "x", must(spmd.ToHost[float32](x)), iota32(8))
}

// TestErrorsNameGoCalls: libspmd's messages name the C function and
// argument; the binding's name the Go ones.
func TestErrorsNameGoCalls(t *testing.T) {
	noLeaks(t)
	m := mesh(t, []int{2, 2}, "x", "y")
	x := must(spmd.Arange(named(t, m, "x, y"), spmd.F32, []int{4, 4}, 0, 1))
	defer x.Close()

	_, err := spmd.ParseSpec("x,,y")
	wantGoErr(t, err, spmd.ErrInvalidArgument, "ParseSpec: spec 'x,,y': column 3")
	_, err = spmd.Sum(x, []int{5})
	wantGoErr(t, err, spmd.ErrInvalidArgument, "Sum: axes[0]: 5 is out of range for an array of 2 dimensions")
	_, err = spmd.Reduce(spmd.ReduceMax, x, []int{0, -3})
	wantGoErr(t, err, spmd.ErrInvalidArgument, "Reduce: axes[1]")
	_, err = spmd.Argmax(x, 7)
	wantGoErr(t, err, spmd.ErrInvalidArgument, "Argmax: axis: 7")
	_, err = spmd.Transpose(x, []int{0, 0})
	wantGoErr(t, err, spmd.ErrInvalidArgument, "Transpose: perm:")
	_, err = spmd.NewMesh(rt, []int{2, 2}, []string{"x", "x"})
	wantGoErr(t, err, spmd.ErrInvalidArgument, "NewMesh: axes:")
	_, err = m.AxisSize(9)
	wantGoErr(t, err, spmd.ErrOutOfRange, "Mesh.AxisSize: axis: 9")
	_, err = spmd.FromHost(must(x.Sharding()), []int{4, 4}, iota32(3))
	wantGoErr(t, err, spmd.ErrInvalidArgument, "FromHost: data: 12 bytes given")
	_, err = x.Visualize(&spmd.VisualizeOptions{MaxWidth: 5000})
	wantGoErr(t, err, spmd.ErrInvalidArgument, "Array.Visualize: VisualizeOptions.MaxWidth")
	_, err = spmd.ToHost[int32](x)
	wantGoErr(t, err, spmd.ErrInvalidArgument, "ToHost: T: the array holds float32")

	// Inside a ShardMap: the failing device's call, by its Go name.
	run := func(fn func(*spmd.ShardContext) error) error {
		outs, err := spmd.ShardMap(m, fn, []*spmd.Array{x}, []string{"x, y"}, []string{"x, y"}, nil)
		for _, o := range outs {
			o.Close()
		}
		return err
	}
	err = run(func(ctx *spmd.ShardContext) error {
		in, err := ctx.Input(0)
		if err != nil {
			return err
		}
		return ctx.SetOutput(3, in)
	})
	wantGoErr(t, err, spmd.ErrOutOfRange, "ShardMap: device ", ": ShardContext.SetOutput: index: output 3 does not exist")
	if strings.Count(err.Error(), "spmd: ") != 1 {
		t.Errorf("error %q repeats its prefix", err)
	}
	err = run(func(ctx *spmd.ShardContext) error { return nil })
	wantGoErr(t, err, spmd.ErrInvalidArgument, "output 0 was never set (call ShardContext.SetOutput)")
	err = run(func(ctx *spmd.ShardContext) error {
		_, err := ctx.AxisIndex("z")
		return err
	})
	wantGoErr(t, err, spmd.ErrInvalidArgument, "ShardContext.AxisIndex: axes 'z'")
}
