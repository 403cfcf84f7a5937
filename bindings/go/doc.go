// Package spmd is the Go binding of libspmd, JAX's SPMD sharding model for
// C: runtimes of virtual devices, meshes with named axes, partition specs,
// named shardings, sharded arrays, resharding, global ops, shard_map
// per-device callbacks with collectives, persistent collectives and random
// numbers identical to jax.random.
//
// # Errors
//
// Every fallible call returns an error; a failure of libspmd is an *Error
// carrying the status and a message that names the Go function or method,
// the argument and the problem:
//
//	spmd: invalid argument: Sum: axes[0]: 5 is out of range for an array of 2 dimensions
//
// Compare with the sentinels:
//
//	if errors.Is(err, spmd.ErrInvalidArgument) { ... }
//
// # Integers and options
//
// Shapes, axes, indices, device ids and permutations are ints, converted
// (and checked) where they cross to C. The global ops take their optional
// arguments after the operands, as functional options:
//
//	y, err := spmd.Sum(x, []int{1}, spmd.KeepDims(), spmd.OutSharding(s))
//
// Constructors with many settings take an options struct, nil for every
// default (NewRuntime, ShardMap, NewCollective, Visualize).
//
// # Lifetimes
//
// Runtime, Mesh, Spec, Sharding, Array, Collective and Program hold a
// libspmd handle.
// Release it with Close (idempotent); a finalizer releases handles a
// program forgets, but only as a safety net: device memory is not visible
// to Go's garbage collector. A closed object keeps its handle id, which
// libspmd never reuses, so any use after Close fails with
// ErrInvalidArgument. Objects keep what they need alive: closing a Runtime
// while arrays of it are open is fine.
//
// Getters that return objects (Array.Sharding, Sharding.Mesh,
// Sharding.Spec, Collective.OutputSharding) return ones that belong to the
// object asked: made on the first call, the same afterwards, freed with
// it. There is nothing to Close (their Close does nothing), so chained
// calls leak nothing:
//
//	fmt.Println(must(a.Sharding()).Mesh())
//
// They are usable while their owner is open.
//
// # Host data
//
// Host slices are row-major, as NumPy's default layout. FromHost and ToHost
// are generic over the Element types (float32, float64, int8, int16, int32,
// int64, uint8, uint16, uint32, bool); FromHostAs and ToHostAs also take
// uint16 bit patterns for float16 and bfloat16.
//
// # Threads
//
// Every function may be called from any goroutine. A ShardMap callback runs
// on libspmd's device threads, one call per device at once; its
// ShardContext and Blocks are valid only during that call, on that call's
// goroutine.
//
// # Programs (experimental)
//
// Record is jax.jit: it calls a function once on abstract arrays, whose
// ops record themselves into a Program, compiled with elementwise chains
// fused, then run as often as needed:
//
//	p, err := spmd.Record(rt, []spmd.InputSpec{{Sharding: s, DType: spmd.F32, Shape: []int{8, 16}}},
//		func(x []*spmd.Array) ([]*spmd.Array, error) { ... })
//	out, err := p.Run(a)
//
// It wraps spmd/experimental/program.h, which may change in any release.
// Random numbers in a program draw from a key given as an input: KeyData
// makes a key a uint32[2] array, NormalFrom and co. draw from such an
// array, and SplitFrom and FoldInFrom derive a step's keys from it
// (spmd/experimental/random.h, experimental too).
//
// # Device memory
//
// A Block's MemoryKind says where its data lies. BlockData makes a slice of
// host memory only (MemoryHost on cpu, MemoryHostMapped on sim, or on cuda
// with RuntimeOptions.CallbackMemory = MemoryHostMapped); a MemoryDevice
// block (cuda's default) is for kernels queued on ShardContext.Stream, at
// Block.Pointer, and BlockData panics with ErrInvalidArgument for it.
package spmd
