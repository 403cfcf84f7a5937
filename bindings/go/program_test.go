package spmd_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	spmd "github.com/libspmd/libspmd/bindings/go"
)

// sinChain is the tour's f, 2*sin(x) + 1, by the global ops; it appends
// the arrays it makes to *made, so an eager caller can close them.
func sinChain(x *spmd.Array, made *[]*spmd.Array) (*spmd.Array, error) {
	s, err := spmd.Unary(spmd.Sin, x)
	if err != nil {
		return nil, err
	}
	*made = append(*made, s)
	m, err := spmd.BinaryScalar(spmd.Mul, s, 2)
	if err != nil {
		return nil, err
	}
	*made = append(*made, m)
	y, err := spmd.BinaryScalar(spmd.Add, m, 1)
	if err != nil {
		return nil, err
	}
	*made = append(*made, y)
	return y, nil
}

// recordSinChain records sinChain over one float32 input of shape laid
// out by s.
func recordSinChain(t *testing.T, s *spmd.Sharding, shape []int) *spmd.Program {
	t.Helper()
	p, err := spmd.Record(rt, []spmd.InputSpec{{Sharding: s, DType: spmd.F32, Shape: shape}},
		func(in []*spmd.Array) ([]*spmd.Array, error) {
			var made []*spmd.Array
			y, err := sinChain(in[0], &made)
			return []*spmd.Array{y}, err
		})
	ok(t, err)
	t.Cleanup(func() { p.Close() })
	return p
}

// sameArray fails unless got and want agree in dtype, shape, sharding and
// every value, bit for bit.
func sameArray(t *testing.T, what string, got, want *spmd.Array) {
	t.Helper()
	equal(t, what+": shape", must(got.Shape()), must(want.Shape()))
	if g, w := must(got.DType()), must(want.DType()); g != w {
		t.Fatalf("%s: dtype %v, eagerly %v", what, g, w)
	}
	if g, w := must(got.Sharding()).String(), must(want.Sharding()).String(); g != w {
		t.Fatalf("%s: sharding %s, eagerly %s", what, g, w)
	}
	g, w := must(spmd.ToHost[float32](got)), must(spmd.ToHost[float32](want))
	for i := range g {
		if math.Float32bits(g[i]) != math.Float32bits(w[i]) {
			t.Fatalf("%s[%d]: %v, eagerly %v", what, i, g[i], w[i])
		}
	}
}

func TestProgramRunsAsTheOpsDo(t *testing.T) {
	noLeaks(t)
	m := mesh(t, []int{2, 4}, "x", "y")
	s := named(t, m, "x, y")
	shape := []int{8, 16}
	p := recordSinChain(t, s, shape)
	if n := must(p.InputCount()); n != 1 {
		t.Errorf("InputCount: %d, want 1", n)
	}
	if n := must(p.OutputCount()); n != 1 {
		t.Errorf("OutputCount: %d, want 1", n)
	}

	for run := 1; run <= 2; run++ {
		data := make([]float32, 8*16)
		for i := range data {
			data[i] = float32(math.Sin(float64(i*7+run*13)) * 3)
		}
		x := must(spmd.FromHost(s, shape, data))
		defer x.Close()
		got := must(p.Run(x))
		if len(got) != 1 {
			t.Fatalf("run %d: %d outputs, want 1", run, len(got))
		}
		defer got[0].Close()
		var made []*spmd.Array
		want := must(sinChain(x, &made))
		for _, a := range made {
			defer a.Close()
		}
		sameArray(t, "run", got[0], want)
		// And the values are 2*sin(x)+1 (to float32's precision).
		vals := must(spmd.ToHost[float32](got[0]))
		for i, v := range data {
			if w := 2*math.Sin(float64(v)) + 1; math.Abs(float64(vals[i])-w) > 1e-5 {
				t.Fatalf("run %d: y[%d] = %v, want %v", run, i, vals[i], w)
			}
		}
	}

	text := p.String()
	for _, part := range []string{"program: 1 input", "fused into 1 pass", "sin, mul, add in one pass per shard"} {
		if !strings.Contains(text, part) {
			t.Errorf("program text lacks %q:\n%s", part, text)
		}
	}
	if t2 := must(p.Text()); t2 != text {
		t.Errorf("Text and String differ:\n%s\n%s", t2, text)
	}
}

func TestProgramValuesLiveDuringRecordOnly(t *testing.T) {
	noLeaks(t)
	m := mesh(t, []int{8}, "x")
	s := named(t, m, "x")
	var kept []*spmd.Array
	p, err := spmd.Record(rt, []spmd.InputSpec{{Sharding: s, DType: spmd.F32, Shape: []int{16}}},
		func(in []*spmd.Array) ([]*spmd.Array, error) {
			x := in[0]
			// Abstract: a shape, dtype and sharding, but no values.
			equal(t, "input shape", must(x.Shape()), []int{16})
			if _, err := spmd.ToHost[float32](x); err == nil {
				t.Errorf("ToHost of an abstract array succeeded")
			}
			e := must(spmd.Unary(spmd.Exp, x))
			r := must(e.Reshard(named(t, m, "")))
			kept = append(kept, x, e, r)
			return []*spmd.Array{r}, nil
		})
	ok(t, err)
	defer p.Close()
	for i, a := range kept {
		if _, err := a.Shape(); err == nil {
			t.Errorf("value %d is still open after Record", i)
		}
	}
	// The constraint is the output's layout.
	x := must(spmd.FromHost(s, []int{16}, iota32(16)))
	defer x.Close()
	out := must(p.Run(x))
	defer out[0].Close()
	if got := must(out[0].Sharding()).String(); !strings.Contains(got, "PartitionSpec()") {
		t.Errorf("output laid out as %s, want replicated (the recorded Reshard)", got)
	}
	if !strings.Contains(p.String(), "exp") {
		t.Errorf("program text lacks exp:\n%s", p)
	}
}

// A shard_map of a value would record a step whose function the library
// calls at every run, after ShardMap has returned: refused from Go.
func TestProgramRefusesShardMapOfValues(t *testing.T) {
	noLeaks(t)
	m := mesh(t, []int{8}, "x")
	s := named(t, m, "x")
	_, err := spmd.Record(rt, []spmd.InputSpec{{Sharding: s, DType: spmd.F32, Shape: []int{16}}},
		func(in []*spmd.Array) ([]*spmd.Array, error) {
			_, err := spmd.ShardMap(m, func(c *spmd.ShardContext) error { return nil }, in, []string{"x"}, []string{"x"}, nil)
			return nil, err
		})
	if !errors.Is(err, spmd.ErrInvalidArgument) || !strings.Contains(err.Error(), "inputs[0]: a value of a program being recorded") {
		t.Errorf("ShardMap of a value: %v, want ErrInvalidArgument naming inputs[0]", err)
	}
}

func TestProgramOutShardings(t *testing.T) {
	noLeaks(t)
	m := mesh(t, []int{2, 4}, "x", "y")
	s := named(t, m, "x, y")
	cols := named(t, m, "None, y")
	p, err := spmd.RecordWith(rt, []spmd.InputSpec{{Sharding: s, DType: spmd.F32, Shape: []int{8, 16}}},
		&spmd.RecordOptions{OutShardings: []*spmd.Sharding{cols, nil}},
		func(in []*spmd.Array) ([]*spmd.Array, error) {
			y, err := spmd.Unary(spmd.Tanh, in[0])
			return []*spmd.Array{y, y}, err
		})
	ok(t, err)
	defer p.Close()
	x := must(spmd.FromHost(s, []int{8, 16}, iota32(128)))
	defer x.Close()
	out := must(p.Run(x))
	for _, a := range out {
		defer a.Close()
	}
	if g, w := must(out[0].Sharding()).String(), cols.String(); g != w {
		t.Errorf("output 0 laid out as %s, want %s", g, w)
	}
	if g, w := must(out[1].Sharding()).String(), s.String(); g != w {
		t.Errorf("output 1 laid out as %s, want %s", g, w)
	}
	equal(t, "outputs' values", must(spmd.ToHost[float32](out[0])), must(spmd.ToHost[float32](out[1])))

	_, err = spmd.RecordWith(rt, []spmd.InputSpec{{Sharding: s, DType: spmd.F32, Shape: []int{8, 16}}},
		&spmd.RecordOptions{OutShardings: []*spmd.Sharding{cols}},
		func(in []*spmd.Array) ([]*spmd.Array, error) { return []*spmd.Array{in[0], in[0]}, nil })
	wantErr(t, err, spmd.ErrInvalidArgument, "RecordWith: OutShardings: 1 shardings for 2 outputs")
}

func TestProgramRunsConcurrently(t *testing.T) {
	noLeaks(t)
	m := mesh(t, []int{8}, "x")
	s := named(t, m, "x")
	p := recordSinChain(t, s, []int{64})
	x := must(spmd.FromHost(s, []int{64}, iota32(64)))
	defer x.Close()
	want := must(p.Run(x))
	defer want[0].Close()
	wantVals := must(spmd.ToHost[float32](want[0]))
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				out, err := p.Run(x)
				if err != nil {
					t.Error(err)
					return
				}
				vals, err := spmd.ToHost[float32](out[0])
				out[0].Close()
				if err != nil {
					t.Error(err)
					return
				}
				for k := range vals {
					if vals[k] != wantVals[k] {
						t.Errorf("concurrent run: y[%d] = %v, want %v", k, vals[k], wantVals[k])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

func TestProgramErrors(t *testing.T) {
	noLeaks(t)
	m := mesh(t, []int{2, 4}, "x", "y")
	s := named(t, m, "x, y")
	p := recordSinChain(t, s, []int{8, 16})

	// An input of the wrong shape is named, and nothing is made.
	wrong := must(spmd.FromHost(s, []int{8, 8}, iota32(64)))
	defer wrong.Close()
	_, err := p.Run(wrong)
	wantErr(t, err, spmd.ErrInvalidArgument, "Program.Run: inputs[0]: float32[8,8]", "float32[8,16]")
	_, err = p.Run()
	wantErr(t, err, spmd.ErrInvalidArgument, "Program.Run: inputs: 0 inputs")

	// Errors while recording: a bad input spec, an op's own check, an
	// output that is not a value of the program, no output.
	_, err = spmd.Record(rt, []spmd.InputSpec{{Sharding: s, DType: spmd.F32, Shape: []int{8, -1}}},
		func(in []*spmd.Array) ([]*spmd.Array, error) { return in, nil })
	wantErr(t, err, spmd.ErrInvalidArgument, "Record: inputs[0]: shape")
	called := false
	_, err = spmd.Record(rt, []spmd.InputSpec{
		{Sharding: s, DType: spmd.F32, Shape: []int{8, 16}},
		{Sharding: s, DType: spmd.F32, Shape: []int{8, 8}},
	}, func(in []*spmd.Array) ([]*spmd.Array, error) {
		called = true
		y, err := spmd.Binary(spmd.Add, in[0], in[1])
		return []*spmd.Array{y}, err
	})
	if !called {
		t.Errorf("fn was not called")
	}
	wantErr(t, err, spmd.ErrInvalidArgument, "Binary:")
	_, err = spmd.Record(rt, []spmd.InputSpec{{Sharding: s, DType: spmd.F32, Shape: []int{8, 16}}},
		func(in []*spmd.Array) ([]*spmd.Array, error) { return []*spmd.Array{wrong}, nil })
	wantErr(t, err, spmd.ErrInvalidArgument, "Record: outputs[0]:")
	_, err = spmd.Record(rt, nil, func(in []*spmd.Array) ([]*spmd.Array, error) { return nil, nil })
	wantErr(t, err, spmd.ErrInvalidArgument, "Record: fn returned no arrays")

	// A panic in fn reaches the caller, and what Record made is released
	// (noLeaks).
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want the panic of fn", r)
			}
		}()
		spmd.Record(rt, []spmd.InputSpec{{Sharding: s, DType: spmd.F32, Shape: []int{8, 16}}},
			func(in []*spmd.Array) ([]*spmd.Array, error) {
				must(spmd.Unary(spmd.Sin, in[0]))
				panic("boom")
			})
	}()

	// Closed: idempotent, and later calls name the program.
	x := must(spmd.FromHost(s, []int{8, 16}, iota32(128)))
	defer x.Close()
	ok(t, p.Close())
	ok(t, p.Close())
	_, err = p.Run(x)
	wantErr(t, err, spmd.ErrInvalidArgument, "Program.Run: program: not a live Program")
	var nilProgram *spmd.Program
	_, err = nilProgram.Run(x)
	wantErr(t, err, spmd.ErrInvalidArgument, "Program.Run")
}

// A donated input is consumed by Run; the result is what it would be.
func TestProgramDonatedInputIsConsumed(t *testing.T) {
	noLeaks(t)
	m := mesh(t, []int{2, 4}, "x", "y")
	s := named(t, m, "x, y")
	shape := []int{8, 16}
	var made []*spmd.Array
	p, err := spmd.RecordWith(rt, []spmd.InputSpec{{Sharding: s, DType: spmd.F32, Shape: shape}},
		&spmd.RecordOptions{Donate: []int{0}},
		func(in []*spmd.Array) ([]*spmd.Array, error) {
			y, err := sinChain(in[0], &made)
			return []*spmd.Array{y}, err
		})
	ok(t, err)
	defer p.Close()
	data := make([]float32, 8*16)
	for i := range data {
		data[i] = float32(i%13) / 4
	}
	x := must(spmd.FromHost(s, shape, data))
	defer x.Close()
	got := must(p.Run(x))
	defer got[0].Close()
	vals := must(spmd.ToHost[float32](got[0]))
	for i, v := range data {
		if w := 2*math.Sin(float64(v)) + 1; math.Abs(float64(vals[i])-w) > 1e-5 {
			t.Fatalf("y[%d] = %v, want %v", i, vals[i], w)
		}
	}
	if _, err := spmd.ToHost[float32](x); !errors.Is(err, spmd.ErrInvalidArgument) || !strings.Contains(err.Error(), "donated") {
		t.Errorf("ToHost of the donated input: %v, want ErrInvalidArgument naming the donation", err)
	}
	_, err = spmd.RecordWith(rt, []spmd.InputSpec{{Sharding: s, DType: spmd.F32, Shape: shape}},
		&spmd.RecordOptions{Donate: []int{1}},
		func(in []*spmd.Array) ([]*spmd.Array, error) { return in, nil })
	if !errors.Is(err, spmd.ErrInvalidArgument) || !strings.Contains(err.Error(), "input: 1 for a program of 1 input") {
		t.Errorf("Donate of a missing input: %v", err)
	}
}

// Draws from key data (KeyData) are the draws from the key, bit for bit.
func TestKeyDataDrawsAsTheKey(t *testing.T) {
	noLeaks(t)
	m := mesh(t, []int{2, 4}, "x", "y")
	s := named(t, m, "x, y")
	rep := named(t, m, "")
	shape := []int{8, 4}
	key := must(must(spmd.Key(42)).FoldIn(7))
	data := must(spmd.KeyData(rep, key))
	defer data.Close()
	equal(t, "key data", must(spmd.ToHost[uint32](data)), key[:])

	want := must(spmd.Normal(s, key, spmd.F32, shape))
	defer want.Close()
	got := must(spmd.NormalFrom(s, data, spmd.F32, shape))
	defer got.Close()
	sameArray(t, "NormalFrom", got, want)
	want = must(spmd.Uniform(s, key, spmd.F32, shape, -1, 2))
	defer want.Close()
	got = must(spmd.UniformFrom(s, data, spmd.F32, shape, -1, 2))
	defer got.Close()
	sameArray(t, "UniformFrom", got, want)
	want = must(spmd.TruncatedNormal(s, key, spmd.F32, shape, -0.5, 1))
	defer want.Close()
	got = must(spmd.TruncatedNormalFrom(s, data, spmd.F32, shape, -0.5, 1))
	defer got.Close()
	sameArray(t, "TruncatedNormalFrom", got, want)
	wantBits := must(spmd.Bits(s, key, spmd.U32, shape))
	defer wantBits.Close()
	gotBits := must(spmd.BitsFrom(s, data, spmd.U32, shape))
	defer gotBits.Close()
	equal(t, "BitsFrom", must(spmd.ToHost[uint32](gotBits)), must(spmd.ToHost[uint32](wantBits)))

	// A key that is not uint32[2] is named.
	floats := must(spmd.FromHost(rep, []int{2}, []float32{0, 42}))
	defer floats.Close()
	_, err := spmd.NormalFrom(s, floats, spmd.F32, shape)
	wantErr(t, err, spmd.ErrInvalidArgument, "NormalFrom: key: float32[2]", "uint32[2] (KeyData)")
	three := must(spmd.FromHost(rep, []int{3}, []uint32{0, 42, 7}))
	defer three.Close()
	_, err = spmd.BitsFrom(s, three, spmd.U32, shape)
	wantErr(t, err, spmd.ErrInvalidArgument, "BitsFrom: key: uint32[3]")
	_, err = spmd.NormalFrom(s, nil, spmd.F32, shape)
	wantErr(t, err, spmd.ErrInvalidArgument, "NormalFrom: key")
}

// A program whose input is key data draws from the key each run is given,
// as jax.jit(lambda k: jax.random.normal(k, shape)) does.
func TestProgramDrawsFromItsKeyInput(t *testing.T) {
	noLeaks(t)
	m := mesh(t, []int{2, 4}, "x", "y")
	s := named(t, m, "x, y")
	rep := named(t, m, "")
	shape := []int{8, 4}
	p, err := spmd.Record(rt, []spmd.InputSpec{{Sharding: rep, DType: spmd.U32, Shape: []int{2}}},
		func(in []*spmd.Array) ([]*spmd.Array, error) {
			y, err := spmd.NormalFrom(s, in[0], spmd.F32, shape)
			return []*spmd.Array{y}, err
		})
	ok(t, err)
	defer p.Close()

	base := must(spmd.Key(0))
	var runs []*spmd.Array
	for step := uint32(1); step <= 2; step++ {
		key := must(base.FoldIn(step))
		data := must(spmd.KeyData(rep, key))
		defer data.Close()
		out := must(p.Run(data))
		defer out[0].Close()
		want := must(spmd.Normal(s, key, spmd.F32, shape))
		defer want.Close()
		sameArray(t, fmt.Sprintf("run %d", step), out[0], want)
		runs = append(runs, out[0])
	}
	a, b := must(spmd.ToHost[float32](runs[0])), must(spmd.ToHost[float32](runs[1]))
	same := true
	for i := range a {
		same = same && a[i] == b[i]
	}
	if same {
		t.Errorf("two runs with two keys drew the same numbers: %v", a)
	}

	// A key input that is not uint32[2] fails the draw that reads it.
	_, err = spmd.Record(rt, []spmd.InputSpec{{Sharding: rep, DType: spmd.F32, Shape: []int{2}}},
		func(in []*spmd.Array) ([]*spmd.Array, error) {
			y, err := spmd.NormalFrom(s, in[0], spmd.F32, shape)
			return []*spmd.Array{y}, err
		})
	wantErr(t, err, spmd.ErrInvalidArgument, "NormalFrom: key: float32[2]")
}

// Key data derives key data as the key derives keys: SplitFrom and
// FoldInFrom give the words of Split's and FoldIn's keys, laid out as the
// key data they read.
func TestKeyDataSplitsAndFoldsAsTheKey(t *testing.T) {
	noLeaks(t)
	m := mesh(t, []int{2, 4}, "x", "y")
	rep := named(t, m, "")
	byX := named(t, m, "x")
	key := must(must(spmd.Key(42)).FoldIn(7))
	for _, layout := range []*spmd.Sharding{rep, byX} {
		data := must(spmd.KeyData(layout, key))
		defer data.Close()
		keys := must(spmd.SplitFrom(data, 3))
		want := must(key.Split(3))
		if len(keys) != len(want) {
			t.Fatalf("SplitFrom(data, 3): %d arrays", len(keys))
		}
		for i, k := range keys {
			defer k.Close()
			what := fmt.Sprintf("SplitFrom %v [%d]", layout, i)
			equal(t, what, must(spmd.ToHost[uint32](k)), want[i][:])
			if g, w := must(k.Sharding()).String(), layout.String(); g != w {
				t.Errorf("%s: laid out as %s, not as the key (%s)", what, g, w)
			}
		}
		folded := must(spmd.FoldInFrom(data, 3))
		defer folded.Close()
		wantKey := must(key.FoldIn(3))
		equal(t, fmt.Sprintf("FoldInFrom %v", layout), must(spmd.ToHost[uint32](folded)), wantKey[:])
		if g, w := must(folded.Sharding()).String(), layout.String(); g != w {
			t.Errorf("FoldInFrom: laid out as %s, not as the key (%s)", g, w)
		}
		if none := must(spmd.SplitFrom(data, 0)); len(none) != 0 {
			t.Errorf("SplitFrom(data, 0): %d arrays", len(none))
		}
		_, err := spmd.SplitFrom(data, -1)
		wantErr(t, err, spmd.ErrInvalidArgument, "SplitFrom: n: -1 is negative")
	}

	// A key that is not uint32[2] is named.
	floats := must(spmd.FromHost(rep, []int{2}, []float32{0, 42}))
	defer floats.Close()
	_, err := spmd.SplitFrom(floats, 2)
	wantErr(t, err, spmd.ErrInvalidArgument, "SplitFrom: key: float32[2]", "uint32[2] (KeyData)")
	_, err = spmd.FoldInFrom(floats, 3)
	wantErr(t, err, spmd.ErrInvalidArgument, "FoldInFrom: key: float32[2]", "uint32[2] (KeyData)")
	_, err = spmd.FoldInFrom(nil, 3)
	wantErr(t, err, spmd.ErrInvalidArgument, "FoldInFrom: key")
}

// A program derives each run's keys from its key input: split in two, 3
// folded into the second, a draw from each, as under jax.jit.
func TestProgramDerivesKeysFromItsKeyInput(t *testing.T) {
	noLeaks(t)
	m := mesh(t, []int{2, 4}, "x", "y")
	s := named(t, m, "x, y")
	rep := named(t, m, "")
	shape := []int{8, 4}
	p, err := spmd.Record(rt, []spmd.InputSpec{{Sharding: rep, DType: spmd.U32, Shape: []int{2}}},
		func(in []*spmd.Array) ([]*spmd.Array, error) {
			keys, err := spmd.SplitFrom(in[0], 2)
			if err != nil {
				return nil, err
			}
			folded, err := spmd.FoldInFrom(keys[1], 3)
			if err != nil {
				return nil, err
			}
			y, err := spmd.NormalFrom(s, keys[0], spmd.F32, shape)
			if err != nil {
				return nil, err
			}
			z, err := spmd.UniformFrom(s, folded, spmd.F32, shape, -1, 2)
			return []*spmd.Array{y, z}, err
		})
	ok(t, err)
	defer p.Close()

	base := must(spmd.Key(0))
	var firsts [][]float32
	for step := uint32(1); step <= 2; step++ {
		key := must(base.FoldIn(step))
		data := must(spmd.KeyData(rep, key))
		defer data.Close()
		out := must(p.Run(data))
		for _, o := range out {
			defer o.Close()
		}
		keys := must(key.Split(2))
		folded := must(keys[1].FoldIn(3))
		wantY := must(spmd.Normal(s, keys[0], spmd.F32, shape))
		defer wantY.Close()
		wantZ := must(spmd.Uniform(s, folded, spmd.F32, shape, -1, 2))
		defer wantZ.Close()
		sameArray(t, fmt.Sprintf("run %d: normal", step), out[0], wantY)
		sameArray(t, fmt.Sprintf("run %d: uniform", step), out[1], wantZ)
		firsts = append(firsts, must(spmd.ToHost[float32](out[0])))
	}
	if fmt.Sprint(firsts[0]) == fmt.Sprint(firsts[1]) {
		t.Errorf("two runs with two keys drew the same numbers: %v", firsts[0])
	}

	// A key input that is not uint32[2] fails the split that reads it.
	_, err = spmd.Record(rt, []spmd.InputSpec{{Sharding: rep, DType: spmd.F32, Shape: []int{2}}},
		func(in []*spmd.Array) ([]*spmd.Array, error) {
			return spmd.SplitFrom(in[0], 2)
		})
	wantErr(t, err, spmd.ErrInvalidArgument, "SplitFrom: key: float32[2]")
	_, err = spmd.Record(rt, []spmd.InputSpec{{Sharding: rep, DType: spmd.F32, Shape: []int{2}}},
		func(in []*spmd.Array) ([]*spmd.Array, error) {
			k, err := spmd.FoldInFrom(in[0], 3)
			return []*spmd.Array{k}, err
		})
	wantErr(t, err, spmd.ErrInvalidArgument, "FoldInFrom: key: float32[2]")
}
