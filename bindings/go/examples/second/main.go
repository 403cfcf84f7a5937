// Command second is the second program: a sum, a matmul and a shard_map
// over a 2 x 4 mesh, each printed with its sharding, as
// docs/second-program/second.py prints them in JAX.
package main

import (
	"fmt"
	"log"

	spmd "github.com/libspmd/libspmd/bindings/go"
)

func must[T any](v T, err error) T {
	if err != nil {
		log.Fatal(err)
	}
	return v
}

// show prints a and its sharding: print(a); print(a.sharding)
func show(a *spmd.Array) {
	fmt.Println(a)
	fmt.Println(must(a.Sharding()))
}

// blockSum is jax.lax.psum(block.sum(), ('x', 'y')).
func blockSum(ctx *spmd.ShardContext) error {
	in, err := ctx.Input(0)
	if err != nil {
		return err
	}
	local, err := ctx.Alloc(spmd.F32)
	if err != nil {
		return err
	}
	sum := spmd.BlockData[float32](local)
	for _, v := range spmd.BlockData[float32](in) {
		sum[0] += v
	}
	total, err := ctx.Psum(local, "('x', 'y')")
	if err != nil {
		return err
	}
	return ctx.SetOutput(0, total)
}

func main() {
	rt := must(spmd.NewRuntime(nil))
	defer rt.Close()
	mesh := must(spmd.NewMesh(rt, []int{2, 4}, []string{"x", "y"}))
	defer mesh.Close()
	sharding := must(spmd.NamedText(mesh, "P('x', 'y')"))
	defer sharding.Close()
	a := must(spmd.Arange(sharding, spmd.F32, []int{4, 8}, 0, 1))
	defer a.Close()
	fmt.Println(must(a.Sharding()))

	s := must(spmd.Sum(a, []int{1}))
	defer s.Close()
	show(s)

	at := must(spmd.Transpose(a, nil))
	defer at.Close()
	m := must(spmd.Matmul(a, at))
	defer m.Close()
	show(m)

	t := must(spmd.ShardMap(mesh, blockSum, []*spmd.Array{a}, []string{"P('x', 'y')"}, []string{"P()"}, nil))
	defer t[0].Close()
	show(t[0])
}
