// Command intro runs the first seed notebook end to end with the Go
// binding of libspmd, printing each cell as the C tour (examples/c/tour.c)
// does: the Python it reproduces after ">>> " and "... ", then its output.
package main

import (
	"fmt"
	"math"
	"os"
	"strings"

	spmd "github.com/libspmd/libspmd/bindings/go"
)

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "intro:", err)
		os.Exit(1)
	}
}

func must[T any](v T, err error) T {
	check(err)
	return v
}

func cell(python string) { fmt.Printf("\n>>> %s\n", python) }

func show(text string, err error) {
	check(err)
	fmt.Print(text)
	if !strings.HasSuffix(text, "\n") {
		fmt.Println()
	}
}

func main() {
	rt := must(spmd.NewRuntime(nil))
	defer rt.Close()
	fmt.Printf("libspmd %s Go intro\n", spmd.VersionString())

	cell("jax.devices()")
	devices := must(rt.Devices())
	names := make([]string, len(devices))
	for i, d := range devices {
		names[i] = d.String()
	}
	fmt.Printf("[%s]\n", strings.Join(names, ", "))

	dev0 := must(spmd.SingleDevice(rt, 0))
	defer dev0.Close()
	dev1 := must(spmd.SingleDevice(rt, 1))
	defer dev1.Close()
	cell("a = jnp.arange(5); a.device")
	a := must(spmd.Arange(dev0, spmd.I32, []int{5}, 0, 1))
	defer a.Close()
	show(rt.DeviceString(must(a.Device())))
	cell("b = jnp.array([2,3,4], device=jax.devices()[1]); b.device")
	b := must(spmd.FromHost(dev1, []int{3}, []int32{2, 3, 4}))
	defer b.Close()
	show(rt.DeviceString(must(b.Device())))

	cell("mesh = jax.make_mesh((3,), ('x',))\n" +
		"... sharding = jax.sharding.NamedSharding(mesh, PartitionSpec('x',)); print(sharding)")
	mesh := must(spmd.NewMesh(rt, []int{3}, []string{"x"}))
	defer mesh.Close()
	sharding := must(spmd.NamedText(mesh, "P('x',)"))
	defer sharding.Close()
	show(sharding.Text())

	cell("arr = jnp.arange(24.0).reshape(3, 8); arr.shape")
	values := make([]float32, 24)
	for i := range values {
		values[i] = float32(i)
	}
	arr := must(spmd.FromHost(dev0, []int{3, 8}, values))
	defer arr.Close()
	shape := must(arr.Shape())
	fmt.Printf("(%d, %d)\n", shape[0], shape[1])

	cell("arr_sharded = jax.device_put(arr, sharding); arr_sharded.sharding")
	arrSharded := must(arr.Reshard(sharding))
	defer arrSharded.Close()
	shardedSharding := must(arrSharded.Sharding()) // the array's own: nothing to Close
	show(shardedSharding.Text())
	cell("jax.debug.visualize_array_sharding(arr_sharded)")
	show(arrSharded.Visualize(nil))

	cell("@jax.jit\n... def f(x):\n...     return 2 * jnp.sin(x) + 1\n" +
		"... result = f(arr_sharded); jax.debug.visualize_array_sharding(result)")
	sin := must(spmd.Unary(spmd.Sin, arrSharded))
	twice := must(spmd.ScalarBinary(spmd.Mul, 2, sin, spmd.Donate(0)))
	result := must(spmd.BinaryScalar(spmd.Add, twice, 1, spmd.Donate(0)))
	sin.Close()
	twice.Close()
	show(result.Visualize(nil))

	cell("arr_sharded.sharding == result.sharding")
	if must(shardedSharding.Equal(must(result.Sharding()))) {
		fmt.Println("True")
	} else {
		fmt.Println("False")
	}
	result.Close()

	cell("@jax.jit\n... def f(x):\n...     return x.sum(axis=0)\n" +
		"... result = f(arr_sharded); jax.debug.visualize_array_sharding(result)")
	result = must(spmd.Sum(arrSharded, []int{0}))
	show(result.Visualize(nil))
	result.Close()

	cell("arr.sum(axis=1)")
	result = must(spmd.Sum(arr, []int{1}))
	show(result.Repr())
	result.Close()

	cell("@jax.jit\n... def f(x):\n...     return x.sum(axis=1)\n" +
		"... result = f(arr_sharded); jax.debug.visualize_array_sharding(result)")
	result = must(spmd.Sum(arrSharded, []int{1}))
	show(result.Visualize(nil))
	result.Close()

	shardMapCells(rt, mesh, dev0)
}

// shardMapCells are the notebook's shard_map cells over Mesh('x': 3): the
// callbacks run on libspmd's device threads and see their own blocks only.
func shardMapCells(rt *spmd.Runtime, mesh *spmd.Mesh, dev0 *spmd.Sharding) {
	fmt.Printf("\n=== Manual partitioning with shard_map ===\n")
	cell("mesh = jax.make_mesh((3,), ('x',))\n" +
		"... @jax.jit\n" +
		"... def f_elementwise(x):\n" +
		"...     jax.debug.print(str(x.shape))\n" +
		"...     return 2 * jnp.sin(x) + 1\n" +
		"... f_elementwise_sharded = shard_map(f_elementwise, mesh=mesh,\n" +
		"...                                   in_specs=PartitionSpec('x'), out_specs=PartitionSpec('x'))\n" +
		"... arr = jnp.arange(24)\n" +
		"... f_elementwise_sharded(arr)")
	x := must(spmd.Arange(dev0, spmd.I32, []int{24}, 0, 1))
	defer x.Close()
	elementwise := func(ctx *spmd.ShardContext) error {
		in, err := ctx.Input(0)
		if err != nil {
			return err
		}
		if err := ctx.Printf("(%d,)", in.Shape()[0]); err != nil {
			return err
		}
		out, err := ctx.Alloc(spmd.F32, in.Shape()...)
		if err != nil {
			return err
		}
		y := spmd.BlockData[float32](out)
		for i, v := range spmd.BlockData[int32](in) {
			y[i] = 2*float32(math.Sin(float64(float32(v)))) + 1
		}
		return ctx.SetOutput(0, out)
	}
	ys := must(spmd.ShardMap(mesh, elementwise, []*spmd.Array{x}, []string{"x"}, []string{"x"}, nil))
	show(ys[0].Repr())
	ys[0].Close()

	cell("def f(x):\n" +
		"...     sum_in_shard = x.sum()\n" +
		"...     return jax.lax.psum(sum_in_shard, 'x')\n" +
		"... result = shard_map(f, mesh=mesh, in_specs=PartitionSpec('x'),\n" +
		"...                    out_specs=PartitionSpec())(arr_sharded)\n" +
		"... result")
	rows := must(spmd.NamedText(mesh, "x"))
	defer rows.Close()
	arrSharded := must(spmd.Arange(rows, spmd.F32, []int{3, 8}, 0, 1))
	defer arrSharded.Close()
	psumOfSums := func(ctx *spmd.ShardContext) error {
		in, err := ctx.Input(0)
		if err != nil {
			return err
		}
		local, err := ctx.Alloc(spmd.F32)
		if err != nil {
			return err
		}
		var s float32
		for _, v := range spmd.BlockData[float32](in) {
			s += v
		}
		spmd.BlockData[float32](local)[0] = s
		total, err := ctx.Psum(local, "x")
		if err != nil {
			return err
		}
		return ctx.SetOutput(0, total)
	}
	totals := must(spmd.ShardMap(mesh, psumOfSums, []*spmd.Array{arrSharded}, []string{"x"}, []string{""},
		&spmd.ShardMapOptions{CheckRep: true}))
	total := totals[0]
	defer total.Close()
	show(total.Repr())
	cell("result.sharding")
	show(must(total.Sharding()).Text())
}
