package spmd_test

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	spmd "github.com/libspmd/libspmd/bindings/go"
)

func TestOps(t *testing.T) {
	noLeaks(t)
	m := mesh(t, []int{2, 2}, "x", "y")
	s := named(t, m, "x, y")
	x := must(spmd.FromHost(s, []int{2, 4}, iota32(8)))
	defer x.Close()
	host := func(a *spmd.Array, err error) []float32 {
		t.Helper()
		a = must(a, err)
		defer a.Close()
		return must(spmd.ToHost[float32](a))
	}
	sin := make([]float64, 8)
	for i := range sin {
		sin[i] = math.Sin(float64(i))
	}
	near(t, "sin", host(spmd.Unary(spmd.Sin, x)), sin, 1e-6)
	equal(t, "neg", host(spmd.Unary(spmd.Neg, x)), []float32{0, -1, -2, -3, -4, -5, -6, -7})
	equal(t, "x*x", host(spmd.Binary(spmd.Mul, x, x)), []float32{0, 1, 4, 9, 16, 25, 36, 49})
	equal(t, "x-1", host(spmd.BinaryScalar(spmd.Sub, x, 1)), []float32{-1, 0, 1, 2, 3, 4, 5, 6})
	equal(t, "10-x", host(spmd.ScalarBinary(spmd.Sub, 10, x)), []float32{10, 9, 8, 7, 6, 5, 4, 3})
	equal(t, "sum(axis=1)", host(spmd.Sum(x, []int{1})), []float32{6, 22})
	equal(t, "sum", host(spmd.Sum(x, nil)), []float32{28})
	equal(t, "max(axis=0, keepdims)", host(spmd.Reduce(spmd.ReduceMax, x, []int{0}, spmd.KeepDims())), []float32{4, 5, 6, 7})
	equal(t, "transpose", host(spmd.Transpose(x, nil)), []float32{0, 4, 1, 5, 2, 6, 3, 7})
	equal(t, "reshape", host(spmd.Reshape(x, []int{4, -1})), iota32(8))
	equal(t, "slice", host(spmd.Slice(x, []int{1, 1}, []int{2, 3})), []float32{5, 6})
	equal(t, "strided slice", host(spmd.SliceStrided(x, []int{0, 0}, []int{2, 4}, []int{1, 2})), []float32{0, 2, 4, 6})
	equal(t, "dynamic slice", host(spmd.DynamicSlice(x, []int{-1, 9}, []int{1, 2})), []float32{6, 7})
	equal(t, "broadcast", host(spmd.BroadcastTo(x, []int{2, 2, 4})), append(iota32(8), iota32(8)...))
	equal(t, "concatenate", host(spmd.Concatenate([]*spmd.Array{x, x}, 0)), append(iota32(8), iota32(8)...))
	sm := host(spmd.Softmax(x, 1))
	if d := sm[0] + sm[1] + sm[2] + sm[3] - 1; math.Abs(float64(d)) > 1e-6 {
		t.Errorf("softmax row sums to %v", sm[0]+sm[1]+sm[2]+sm[3])
	}

	gt := must(spmd.BinaryScalar(spmd.Gt, x, 3.5))
	defer gt.Close()
	equal(t, "x > 3.5", must(spmd.ToHost[bool](gt)), []bool{false, false, false, false, true, true, true, true})
	equal(t, "where", host(spmd.Where(gt, x, x)), iota32(8))
	am := must(spmd.Argmax(x, 1))
	defer am.Close()
	equal(t, "argmax", must(spmd.ToHost[int32](am)), []int32{3, 3})
	an := must(spmd.Argmin(x, -1))
	defer an.Close()
	equal(t, "argmin", must(spmd.ToHost[int32](an)), []int32{0, 0})
	cs := must(spmd.Cumsum(x, 1))
	defer cs.Close()
	equal(t, "cumsum", must(spmd.ToHost[float32](cs)), []float32{0, 1, 3, 6, 4, 9, 15, 22})
	tk := must(spmd.Take(x, am, 1))
	defer tk.Close()
	equal(t, "take", must(spmd.ToHost[float32](tk)), []float32{3, 3, 7, 7})
	equal(t, "scatter_add", host(spmd.ScatterAdd(x, am, tk, 1)), []float32{0, 1, 2, 9, 4, 5, 6, 21})
	oh := must(spmd.OneHot(am, 4, -1, spmd.I32))
	defer oh.Close()
	equal(t, "one_hot", must(spmd.ToHost[int32](oh)), []int32{0, 0, 0, 1, 0, 0, 0, 1})
	if _, err := spmd.OneHot(am, -1, -1, spmd.F32); err == nil || !strings.Contains(err.Error(), "OneHot: num_classes") {
		t.Fatalf("OneHot(-1): %v", err)
	}
	i64 := must(spmd.Astype(x, spmd.I64))
	defer i64.Close()
	equal(t, "astype", must(spmd.ToHost[int64](i64)), []int64{0, 1, 2, 3, 4, 5, 6, 7})

	// (2, 4) @ (4, 2)
	w := must(spmd.FromHost(s, []int{4, 2}, []float32{1, 0, 0, 1, 1, 0, 0, 1}))
	defer w.Close()
	want := []float32{2, 4, 10, 12}
	equal(t, "matmul", host(spmd.Matmul(x, w)), want)
	equal(t, "einsum", host(spmd.Einsum("ij,jk->ik", x, w)), want)
	u := must(spmd.FromHost(s, []int{2, 2}, []float32{1, 1, 0, 1}))
	defer u.Close()
	equal(t, "einsum of three", host(spmd.EinsumN("ij,jk,kl->il", []*spmd.Array{x, w, u}, spmd.OutSharding(s))), []float32{2, 6, 10, 22})
	equal(t, "einsum of one", host(spmd.EinsumN("ij->j", []*spmd.Array{w})), []float32{2, 2})
	equal(t, "dot_general", host(spmd.DotGeneral(x, w, spmd.DotDims{LhsContract: []int{1}, RhsContract: []int{0}})), want)

	// An output sharding, as with_sharding_constraint.
	rep := must(spmd.Replicated(m))
	defer rep.Close()
	r := must(spmd.Mean(x, []int{0}, spmd.OutSharding(rep)))
	defer r.Close()
	rs := must(r.Sharding())
	if full := must(rs.IsFullyReplicated()); !full {
		t.Errorf("out sharding %v", rs)
	}
	equal(t, "mean", must(spmd.ToHost[float32](r)), []float32{2, 3, 4, 5})

	// Donation consumes the operand; its handle still needs Close.
	d := must(spmd.FromHost(s, []int{2, 4}, iota32(8)))
	defer d.Close()
	equal(t, "donated", host(spmd.BinaryScalar(spmd.Add, d, 1, spmd.Donate(0))), []float32{1, 2, 3, 4, 5, 6, 7, 8})
	_, err := d.Shape()
	wantErr(t, err, spmd.ErrInvalidArgument)

	_, err = spmd.Binary(spmd.Add, x, w)
	wantErr(t, err, spmd.ErrInvalidArgument, "(2, 4)", "(4, 2)")
	_, err = spmd.Slice(x, []int{0}, []int{1, 1})
	wantErr(t, err, spmd.ErrInvalidArgument)
	_, err = spmd.Concatenate(nil, 0)
	wantErr(t, err, spmd.ErrInvalidArgument)
}

func TestCollective(t *testing.T) {
	noLeaks(t)
	m := mesh(t, []int{4}, "x")
	s := named(t, m, "x")
	x := must(spmd.FromHost(s, []int{8}, iota32(8)))
	defer x.Close()

	psum := must(spmd.NewCollective(s, spmd.CollectivePsum, "x", spmd.F32, []int{8}, nil))
	defer psum.Close()
	equal(t, "psum shape", must(psum.OutputShape()), []int{2})
	if n := must(psum.OutputNDim()); n != 1 {
		t.Errorf("psum ndim %d", n)
	}
	if d := must(psum.OutputDType()); d != spmd.F32 {
		t.Errorf("psum dtype %v", d)
	}
	os := must(psum.OutputSharding())
	if full := must(os.IsFullyReplicated()); !full {
		t.Errorf("psum sharding %v", os)
	}
	y := must(psum.Execute(x))
	defer y.Close()
	equal(t, "psum", must(spmd.ToHost[float32](y)), []float32{12, 16}) // 0+2+4+6, 1+3+5+7
	into := must(spmd.Zeros(os, spmd.F32, []int{2}))
	defer into.Close()
	ok(t, psum.ExecuteInto(x, into))
	equal(t, "psum into", must(spmd.ToHost[float32](into)), []float32{12, 16})

	gather := must(spmd.NewCollective(s, spmd.CollectiveAllGather, "x", spmd.F32, []int{8},
		&spmd.CollectiveOptions{Tiled: true, Timeout: 10 * time.Second}))
	defer gather.Close()
	g := must(gather.Execute(x))
	defer g.Close()
	equal(t, "all_gather", must(spmd.ToHost[float32](g)), iota32(8))

	perm := must(spmd.NewCollective(s, spmd.CollectivePpermute, "x", spmd.F32, []int{8},
		&spmd.CollectiveOptions{Pairs: [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 0}}}))
	defer perm.Close()
	p := must(perm.Execute(x))
	defer p.Close()
	equal(t, "ppermute", must(spmd.ToHost[float32](p)), []float32{6, 7, 0, 1, 2, 3, 4, 5})

	_, err := spmd.NewCollective(s, spmd.CollectivePsumScatter, "x", spmd.F32, []int{8}, nil)
	wantErr(t, err, spmd.ErrUnsupported)
	_, err = spmd.NewCollective(s, spmd.CollectivePsum, "z", spmd.F32, []int{8}, nil)
	wantErr(t, err, spmd.ErrInvalidArgument, "z")
	ok(t, gather.Close())
	_, err = gather.Execute(x)
	wantErr(t, err, spmd.ErrInvalidArgument)
}

func TestShardMap(t *testing.T) {
	noLeaks(t)
	m := mesh(t, []int{2, 4}, "x", "y")
	x := must(spmd.FromHost(named(t, m, "x, y"), []int{4, 8}, iota32(32)))
	defer x.Close()
	var mu sync.Mutex
	var lines []string
	opts := &spmd.ShardMapOptions{Timeout: 20 * time.Second, Print: func(device int, text string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, text)
	}}
	var shapesOK atomic.Int32
	body := func(ctx *spmd.ShardContext) error {
		dev, err := ctx.DeviceID()
		if err != nil {
			return err
		}
		xi, err := ctx.AxisIndex("x")
		if err != nil {
			return err
		}
		yi, err := ctx.AxisIndex("y")
		if err != nil {
			return err
		}
		ysize, err := ctx.AxisSize("y")
		if err != nil {
			return err
		}
		cm, err := ctx.Mesh()
		if err != nil {
			return err
		}
		if cm != m || ysize != 4 || dev != xi*4+yi {
			return ctx.Error(spmd.StatusInternal, "bad context")
		}
		ins, err := ctx.Inputs()
		if err != nil {
			return err
		}
		in := ins[0]
		if s := in.Shape(); len(s) == 2 && s[0] == 2 && s[1] == 2 && in.DType() == spmd.F32 {
			shapesOK.Add(1)
		}
		if dev == 0 {
			if err := ctx.Printf("device %d block %v", dev, in.Shape()); err != nil {
				return err
			}
		}
		// out 0: 2*x; out 1: psum over y of the block sums; out 2: all_gather over x.
		double, err := ctx.Alloc(spmd.F32, in.Shape()...)
		if err != nil {
			return err
		}
		dd := spmd.BlockData[float32](double)
		var sum float32
		for i, v := range spmd.BlockData[float32](in) {
			dd[i] = 2 * v
			sum += v
		}
		local, err := ctx.Alloc(spmd.F32, 1)
		if err != nil {
			return err
		}
		spmd.BlockData[float32](local)[0] = sum
		total, err := ctx.Psum(local, "y")
		if err != nil {
			return err
		}
		gathered, err := ctx.AllGather(in, "x", 0, true)
		if err != nil {
			return err
		}
		for i, b := range []*spmd.Block{double, total, gathered} {
			if err := ctx.SetOutput(i, b); err != nil {
				return err
			}
		}
		return nil
	}
	outs := must(spmd.ShardMap(m, body, []*spmd.Array{x}, []string{"x, y"}, []string{"x, y", "x", "None, y"}, opts))
	defer func() {
		for _, o := range outs {
			o.Close()
		}
	}()
	if shapesOK.Load() != 8 {
		t.Errorf("%d devices saw (2, 2) float32 blocks", shapesOK.Load())
	}
	doubled := make([]float32, 32)
	for i := range doubled {
		doubled[i] = 2 * float32(i)
	}
	equal(t, "2x", must(spmd.ToHost[float32](outs[0])), doubled)
	// Rows 0-1 sum to 0+...+15 = 120, rows 2-3 to 16+...+31 = 376.
	equal(t, "psum", must(spmd.ToHost[float32](outs[1])), []float32{120, 376})
	equal(t, "all_gather", must(spmd.ToHost[float32](outs[2])), iota32(32))
	equal(t, "printed", lines, []string{"device 0 block [2 2]"})

	// The same with Spec values, and the other collectives on a 1-D block.
	line := mesh(t, []int{4}, "d")
	v := must(spmd.FromHost(named(t, line, "d"), []int{8}, iota32(8)))
	defer v.Close()
	specD := must(spmd.ParseSpec("d"))
	defer specD.Close()
	specNone := must(spmd.NewSpec())
	defer specNone.Close()
	collectives := func(ctx *spmd.ShardContext) error {
		n, err := ctx.InputCount()
		if err != nil || n != 1 {
			return ctx.Error(spmd.StatusInternal, "input count")
		}
		in, err := ctx.Input(0)
		if err != nil {
			return err
		}
		steps := []func(*spmd.Block) (*spmd.Block, error){
			func(b *spmd.Block) (*spmd.Block, error) { return ctx.Pmean(b, "d") },
			func(b *spmd.Block) (*spmd.Block, error) { return ctx.Pmax(b, "d") },
			func(b *spmd.Block) (*spmd.Block, error) { return ctx.Pmin(b, "d") },
			func(b *spmd.Block) (*spmd.Block, error) {
				return ctx.Ppermute(b, "d", [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 0}})
			},
			func(b *spmd.Block) (*spmd.Block, error) {
				g, err := ctx.AllGather(b, "d", 0, true) // (8,)
				if err != nil {
					return nil, err
				}
				return ctx.PsumScatter(g, "d", 0, true) // 4 * my chunk
			},
			func(b *spmd.Block) (*spmd.Block, error) {
				g, err := ctx.AllGather(b, "d", 0, true) // (8,)
				if err != nil {
					return nil, err
				}
				return ctx.AllToAll(g, "d", 0, 0, true) // (8,): chunk i of every peer
			},
		}
		for i, step := range steps {
			out, err := step(in)
			if err != nil {
				return err
			}
			if err := ctx.SetOutput(i, out); err != nil {
				return err
			}
		}
		return nil
	}
	outSpecs := []*spmd.Spec{specNone, specNone, specNone, specD, specD, specD}
	res := must(spmd.ShardMapSpecs(line, collectives, []*spmd.Array{v}, []*spmd.Spec{specD}, outSpecs, opts))
	defer func() {
		for _, o := range res {
			o.Close()
		}
	}()
	equal(t, "pmean", must(spmd.ToHost[float32](res[0])), []float32{3, 4})
	equal(t, "pmax", must(spmd.ToHost[float32](res[1])), []float32{6, 7})
	equal(t, "pmin", must(spmd.ToHost[float32](res[2])), []float32{0, 1})
	equal(t, "ppermute", must(spmd.ToHost[float32](res[3])), []float32{6, 7, 0, 1, 2, 3, 4, 5})
	equal(t, "psum_scatter", must(spmd.ToHost[float32](res[4])), []float32{0, 4, 8, 12, 16, 20, 24, 28})
	equal(t, "all_to_all", must(spmd.ToHost[float32](res[5])),
		[]float32{0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 4, 5, 4, 5, 4, 5, 4, 5, 6, 7, 6, 7, 6, 7, 6, 7})
}

// TestShardMapRunsDevicesConcurrently: every callback waits until all eight
// are inside at once, then a psum that needs them all; under -race this
// also checks the binding's own state is shared safely between device
// threads.
func TestShardMapRunsDevicesConcurrently(t *testing.T) {
	noLeaks(t)
	m := mesh(t, []int{8}, "x")
	x := must(spmd.Full(named(t, m, "x"), spmd.I32, []int{8}, 1))
	defer x.Close()
	var inside atomic.Int32
	seen := make([]int, 8)
	body := func(ctx *spmd.ShardContext) error {
		dev, err := ctx.DeviceID()
		if err != nil {
			return err
		}
		seen[dev]++ // each device its own element: no race
		inside.Add(1)
		deadline := time.Now().Add(20 * time.Second)
		for inside.Load() < 8 {
			if time.Now().After(deadline) {
				return errors.New("the devices never ran at the same time")
			}
			runtime.Gosched()
		}
		in, err := ctx.Input(0)
		if err != nil {
			return err
		}
		total, err := ctx.Psum(in, "x")
		if err != nil {
			return err
		}
		return ctx.SetOutput(0, total)
	}
	for round := 0; round < 3; round++ {
		inside.Store(0)
		outs := must(spmd.ShardMap(m, body, []*spmd.Array{x}, []string{"x"}, []string{""}, nil))
		equal(t, "psum", must(spmd.ToHost[int32](outs[0])), []int32{8})
		outs[0].Close()
	}
	equal(t, "calls per device", seen, []int{3, 3, 3, 3, 3, 3, 3, 3})
}

// The ops apply to a body's blocks: psum(sum(2 * block)) per device.
func TestOpsOnBlocks(t *testing.T) {
	noLeaks(t)
	m := mesh(t, []int{4}, "x")
	x := must(spmd.FromHost(named(t, m, "x"), []int{8}, iota32(8)))
	defer x.Close()
	body := func(ctx *spmd.ShardContext) error {
		in, err := ctx.Input(0)
		if err != nil {
			return err
		}
		a, err := ctx.Array(in)
		if err != nil {
			return err
		}
		defer a.Close()
		twice, err := spmd.BinaryScalar(spmd.Mul, a, 2)
		if err != nil {
			return err
		}
		defer twice.Close()
		sum, err := spmd.Sum(twice, nil)
		if err != nil {
			return err
		}
		defer sum.Close()
		b, err := ctx.Block(sum)
		if err != nil {
			return err
		}
		total, err := ctx.Psum(b, "x")
		if err != nil {
			return err
		}
		return ctx.SetOutput(0, total)
	}
	outs := must(spmd.ShardMap(m, body, []*spmd.Array{x}, []string{"x"}, []string{""}, nil))
	defer outs[0].Close()
	equal(t, "psum of sums", must(spmd.ToHost[float32](outs[0])), []float32{56})
}

func TestShardMapFailures(t *testing.T) {
	noLeaks(t)
	m := mesh(t, []int{4}, "x")
	x := must(spmd.FromHost(named(t, m, "x"), []int{8}, iota32(8)))
	defer x.Close()
	opts := &spmd.ShardMapOptions{Timeout: 20 * time.Second}
	run := func(fn func(*spmd.ShardContext) error) error {
		outs, err := spmd.ShardMap(m, fn, []*spmd.Array{x}, []string{"x"}, []string{"x"}, opts)
		for _, o := range outs {
			o.Close()
		}
		return err
	}
	identity := func(ctx *spmd.ShardContext) error {
		in, err := ctx.Input(0)
		if err != nil {
			return err
		}
		return ctx.SetOutput(0, in)
	}
	ok(t, run(identity))

	// A returned error fails its device; ShardMap reports the message.
	err := run(func(ctx *spmd.ShardContext) error {
		if i, _ := ctx.AxisIndex("x"); i == 2 {
			return errors.New("device two refuses")
		}
		return identity(ctx)
	})
	wantErr(t, err, spmd.ErrCallback, "device two refuses")

	// ctx.Error records a status of the callback's choice.
	err = run(func(ctx *spmd.ShardContext) error {
		return ctx.Error(spmd.StatusOutOfRange, "out of my range")
	})
	wantErr(t, err, spmd.ErrOutOfRange, "out of my range")

	// A panic is recovered on the device thread and becomes an error.
	err = run(func(ctx *spmd.ShardContext) error {
		if i, _ := ctx.AxisIndex("x"); i == 1 {
			panic("boom in the callback")
		}
		return identity(ctx)
	})
	wantErr(t, err, spmd.ErrCallback, "panic: boom in the callback")

	// Reading a block as the wrong type panics, which becomes an error too.
	err = run(func(ctx *spmd.ShardContext) error {
		in, err := ctx.Input(0)
		if err != nil {
			return err
		}
		_ = spmd.BlockData[int64](in)
		return nil
	})
	wantErr(t, err, spmd.ErrCallback, "float32")

	// A library error inside the callback, passed on, keeps its status.
	err = run(func(ctx *spmd.ShardContext) error {
		_, err := ctx.AxisIndex("nope")
		return err
	})
	wantErr(t, err, spmd.ErrInvalidArgument, "nope")

	// ... also when the callback wraps it.
	err = run(func(ctx *spmd.ShardContext) error {
		_, err := ctx.AxisSize("nope")
		return fmt.Errorf("sizing: %w", err)
	})
	wantErr(t, err, spmd.ErrInvalidArgument, "sizing: ", "nope")

	// A missing output, a bad spec, mismatched counts.
	err = run(func(ctx *spmd.ShardContext) error { return nil })
	wantErr(t, err, spmd.ErrInvalidArgument)
	_, err = spmd.ShardMap(m, identity, []*spmd.Array{x}, []string{"x,,y"}, []string{"x"}, nil)
	wantErr(t, err, spmd.ErrInvalidArgument, "column 3")
	_, err = spmd.ShardMap(m, identity, []*spmd.Array{x}, nil, []string{"x"}, nil)
	wantErr(t, err, spmd.ErrInvalidArgument, "in specs")

	// A context kept past its callback refuses every use.
	var kept *spmd.ShardContext
	var keptBlock *spmd.Block
	ok(t, run(func(ctx *spmd.ShardContext) error {
		in, err := ctx.Input(0)
		if err != nil {
			return err
		}
		if i, _ := ctx.AxisIndex("x"); i == 0 {
			kept, keptBlock = ctx, in
		}
		return ctx.SetOutput(0, in)
	}))
	_, err = kept.DeviceID()
	wantErr(t, err, spmd.ErrInvalidArgument)
	wantErr(t, kept.SetOutput(0, keptBlock), spmd.ErrInvalidArgument, "returned")
	_, err = kept.Input(0)
	wantErr(t, err, spmd.ErrInvalidArgument, "Input", "returned")
	_, err = kept.Mesh()
	wantErr(t, err, spmd.ErrInvalidArgument)
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(r.(error).Error(), "returned") {
				t.Errorf("BlockData after the callback: %v", r)
			}
		}()
		spmd.BlockData[float32](keptBlock)
	}()
}

func TestUseAfterClose(t *testing.T) {
	noLeaks(t)
	m := mesh(t, []int{2}, "x")
	s := must(spmd.NamedText(m, "x"))
	a := must(spmd.Zeros(s, spmd.F32, []int{4}))
	ok(t, a.Close())
	ok(t, a.Close())
	_, err := a.Shape()
	wantErr(t, err, spmd.ErrInvalidArgument, "array")
	_, err = spmd.ToHost[float32](a)
	wantErr(t, err, spmd.ErrInvalidArgument)
	_, err = spmd.Unary(spmd.Exp, a)
	wantErr(t, err, spmd.ErrInvalidArgument)
	ok(t, s.Close())
	_, err = spmd.Zeros(s, spmd.F32, []int{4})
	wantErr(t, err, spmd.ErrInvalidArgument, "sharding")
	spec := must(spmd.ParseSpec("x"))
	ok(t, spec.Close())
	_, err = spec.NDim()
	wantErr(t, err, spmd.ErrInvalidArgument)
	wantErr(t, spec.Append("y"), spmd.ErrInvalidArgument)
	var nilArray *spmd.Array
	_, err = nilArray.Size()
	wantErr(t, err, spmd.ErrInvalidArgument)
	ok(t, nilArray.Close())
}

// TestFinalizers: handles a program forgets are released once Go collects
// their objects.
func TestFinalizers(t *testing.T) {
	noLeaks(t)
	before := must(spmd.LiveHandles())
	func() {
		m := must(spmd.NewMesh(rt, []int{2}, []string{"x"}))
		s := must(spmd.Replicated(m))
		_ = must(spmd.Zeros(s, spmd.F32, []int{4}))
	}()
	deadline := time.Now().Add(10 * time.Second)
	for must(spmd.LiveHandles()) != before {
		if time.Now().After(deadline) {
			t.Fatalf("live handles %d, %d before", must(spmd.LiveHandles()), before)
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}
