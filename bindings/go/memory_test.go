package spmd_test

import (
	"testing"

	spmd "github.com/libspmd/libspmd/bindings/go"
)

func TestRuntimeMemoryOptions(t *testing.T) {
	noLeaks(t)
	// The CUDA options are accepted, and ignored, by the CPU platform.
	r := must(spmd.NewRuntime(&spmd.RuntimeOptions{Platform: spmd.PlatformCPU, DeviceCount: 2,
		WorkerThreads: 1, DevicesPerGPU: 4, CallbackMemory: spmd.MemoryHost}))
	defer r.Close()
	d := must(r.Device(1))
	if d.MemoryBytes != 0 || d.ComputeCapability != 0 {
		t.Errorf("a CPU device with GPU fields: %+v", d)
	}
	// The sim platform gives callbacks mapped memory only, and nothing
	// but the CPU platform takes plain host memory.
	for _, kind := range []spmd.MemoryKind{spmd.MemoryDevice, spmd.MemoryHost} {
		_, err := spmd.NewRuntime(&spmd.RuntimeOptions{Platform: spmd.PlatformSim, DeviceCount: 2,
			WorkerThreads: 1, CallbackMemory: kind})
		wantErr(t, err, spmd.ErrInvalidArgument, "memory")
	}
	_, err := spmd.NewRuntime(&spmd.RuntimeOptions{Platform: spmd.PlatformCPU, CallbackMemory: 9})
	wantErr(t, err, spmd.ErrInvalidArgument, "NewRuntime: RuntimeOptions.CallbackMemory: 9")
	if spmd.MemoryHostMapped.String() != "host_mapped" || spmd.MemoryDevice.HostAddressable() ||
		!spmd.MemoryHost.HostAddressable() || !spmd.MemoryHostMapped.HostAddressable() {
		t.Error("MemoryKind names or host addressability")
	}
}

// shardMapKinds runs a shard_map on r's first two devices and returns the
// memory kinds of an input, an Alloc'd block and a collective's result, as
// every device saw them, after checking the values read through BlockData.
func shardMapKinds(t *testing.T, r *spmd.Runtime) []spmd.MemoryKind {
	t.Helper()
	m := must(spmd.NewMesh(r, []int{2}, []string{"x"}))
	defer m.Close()
	s := must(spmd.NamedText(m, "x"))
	defer s.Close()
	x := must(spmd.FromHost(s, []int{4}, iota32(4)))
	defer x.Close()
	kinds := make([][]spmd.MemoryKind, 2)
	outs := must(spmd.ShardMap(m, func(ctx *spmd.ShardContext) error {
		i, err := ctx.AxisIndex("x")
		if err != nil {
			return err
		}
		// Host and mapped memory are not queued work: no stream.
		if stream, err := ctx.Stream(); err != nil || stream != nil {
			return ctx.Error(spmd.StatusInternal, "a stream outside CUDA")
		}
		in, err := ctx.Input(0)
		if err != nil {
			return err
		}
		local, err := ctx.Alloc(spmd.F32)
		if err != nil {
			return err
		}
		for _, v := range spmd.BlockData[float32](in) {
			spmd.BlockData[float32](local)[0] += v
		}
		sum, err := ctx.Psum(local, "x")
		if err != nil {
			return err
		}
		if in.Pointer() == nil || sum.Pointer() == nil {
			return ctx.Error(spmd.StatusInternal, "a block without data")
		}
		kinds[i] = []spmd.MemoryKind{in.MemoryKind(), local.MemoryKind(), sum.MemoryKind()}
		return ctx.SetOutput(0, sum)
	}, []*spmd.Array{x}, []string{"x"}, []string{""}, nil))
	defer outs[0].Close()
	equal(t, "psum of the block sums", must(spmd.ToHost[float32](outs[0])), []float32{6})
	return append(kinds[0], kinds[1]...)
}

func TestShardMapBlocksSayWhereTheyLie(t *testing.T) {
	noLeaks(t)
	host := spmd.MemoryHost
	equal(t, "cpu block kinds", shardMapKinds(t, rt), []spmd.MemoryKind{host, host, host, host, host, host})

	// The sim platform's devices own memory the host cannot touch; its
	// callbacks get mapped memory, which BlockData reads.
	sim := must(spmd.NewRuntime(&spmd.RuntimeOptions{Platform: spmd.PlatformSim, DeviceCount: 2, WorkerThreads: 1}))
	defer sim.Close()
	if d := must(sim.Device(0)); d.MemoryBytes != 0 || d.ComputeCapability != 0 {
		t.Errorf("a sim device with GPU fields: %+v", d)
	}
	mapped := spmd.MemoryHostMapped
	equal(t, "sim block kinds", shardMapKinds(t, sim),
		[]spmd.MemoryKind{mapped, mapped, mapped, mapped, mapped, mapped})
}
