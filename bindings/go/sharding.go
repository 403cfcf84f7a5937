package spmd

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/libspmd/libspmd/bindings/go/internal/capi"
)

// Sharding is how an array's elements are laid out over devices:
// NamedSharding(mesh, spec) or SingleDeviceSharding(device). Close it when
// done; arrays laid out by it keep it alive. A Sharding from
// Array.Sharding or Collective.OutputSharding belongs to that object:
// usable while it is open, and its Close does nothing.
type Sharding struct {
	r     *ref
	owner any // the Array or Collective a borrowed sharding belongs to; nil when the caller owns it
}

func newSharding(h uintptr) *Sharding {
	s := &Sharding{r: newRef(h, destroySharding)}
	runtime.SetFinalizer(s, (*Sharding).Close)
	return s
}

func destroySharding(h uintptr) { capi.Spmd_sharding_destroy(h) }

func (s *Sharding) handle() uintptr {
	if s == nil || s.r == nil {
		return 0
	}
	return s.r.id
}

// ShardingKind is the kind of a sharding.
type ShardingKind int

// The kinds of sharding.
const (
	ShardingNamed        ShardingKind = 1 // NamedSharding(mesh, spec)
	ShardingSingleDevice ShardingKind = 2 // SingleDeviceSharding(device)
)

// String is the JAX class name of the kind.
func (k ShardingKind) String() string {
	switch k {
	case ShardingNamed:
		return "NamedSharding"
	case ShardingSingleDevice:
		return "SingleDeviceSharding"
	}
	return fmt.Sprintf("ShardingKind(%d)", int(k))
}

// Named is NamedSharding(mesh, spec). The spec (copied) may name fewer
// dimensions than an array has; the rest are replicated.
// ErrInvalidArgument for an axis the mesh lacks.
func Named(mesh *Mesh, spec *Spec) (*Sharding, error) {
	defer runtime.KeepAlive(mesh)
	defer spec.rlock()()
	return made("Named", newSharding, func(h *uintptr) error { return capi.Spmd_sharding_named(mesh.handle(), spec.handle(), h) })
}

// NamedText is NamedSharding(mesh, spec) with the spec as text (see
// ParseSpec): NamedText(mesh, "P('x', None)").
func NamedText(mesh *Mesh, spec string) (*Sharding, error) {
	defer runtime.KeepAlive(mesh)
	return made("NamedText", newSharding, func(h *uintptr) error { return capi.Spmd_sharding_named_text(mesh.handle(), spec, h) })
}

// Replicated is NamedSharding(mesh, P()): every device holds the whole
// array.
func Replicated(mesh *Mesh) (*Sharding, error) {
	defer runtime.KeepAlive(mesh)
	return made("Replicated", newSharding, func(h *uintptr) error { return capi.Spmd_sharding_replicated(mesh.handle(), h) })
}

// SingleDevice is SingleDeviceSharding(device): the whole array on one
// device; ErrOutOfRange for an unknown device.
func SingleDevice(rt *Runtime, device int) (*Sharding, error) {
	const fn = "SingleDevice"
	defer runtime.KeepAlive(rt)
	if err := cInt(fn, "device", device); err != nil {
		return nil, err
	}
	return made(fn, newSharding, func(h *uintptr) error { return capi.Spmd_sharding_single_device(rt.handle(), device, h) })
}

// Close releases the sharding, and the Mesh and Spec its getters gave.
// Closing twice is harmless; later calls on s fail with
// ErrInvalidArgument. Closing a sharding that belongs to an array or a
// collective does nothing.
func (s *Sharding) Close() error {
	if s == nil || s.r == nil || s.owner != nil {
		return nil
	}
	runtime.SetFinalizer(s, nil)
	s.r.free()
	return nil
}

// Kind is the kind of the sharding.
func (s *Sharding) Kind() (ShardingKind, error) {
	defer runtime.KeepAlive(s)
	k, err := get("Sharding.Kind", func(k *int) error { return capi.Spmd_sharding_get_kind(s.handle(), k) })
	return ShardingKind(k), err
}

// Mesh is the sharding's mesh (a one-device mesh for a single-device
// sharding). It belongs to the sharding, which makes it once and frees it
// when closed: there is nothing to Close, and the Mesh is usable while
// the sharding is (to outlive it, keep the mesh the sharding was made
// from).
func (s *Sharding) Mesh() (*Mesh, error) {
	const fn = "Sharding.Mesh"
	if s == nil || s.r == nil {
		return nil, check(fn, capi.Spmd_sharding_mesh(0, new(uintptr)))
	}
	defer runtime.KeepAlive(s)
	r, err := s.r.child(fn, "mesh", destroyMesh, func(h *uintptr) error { return capi.Spmd_sharding_mesh(s.r.id, h) })
	if err != nil {
		return nil, err
	}
	return &Mesh{r: r, owner: s}, nil
}

// Spec is the sharding's spec (P() for a single-device sharding). It
// belongs to the sharding, which makes it once and frees it when closed:
// there is nothing to Close, the Spec is read-only (Append refuses it), and
// it is usable while the sharding is (NewSpec(spec.Dims()...) copies it).
func (s *Sharding) Spec() (*Spec, error) {
	const fn = "Sharding.Spec"
	if s == nil || s.r == nil {
		return nil, check(fn, capi.Spmd_sharding_spec(0, new(uintptr)))
	}
	defer runtime.KeepAlive(s)
	r, err := s.r.child(fn, "spec", destroySpec, func(h *uintptr) error { return capi.Spmd_sharding_spec(s.r.id, h) })
	if err != nil {
		return nil, err
	}
	return &Spec{r: r, owner: s}, nil
}

// DeviceCount is the number of devices that hold a shard: the mesh size.
func (s *Sharding) DeviceCount() (int, error) {
	const fn = "Sharding.DeviceCount"
	defer runtime.KeepAlive(s)
	n, err := get(fn, func(n *int64) error { return capi.Spmd_sharding_device_count(s.handle(), n) })
	if err != nil {
		return 0, err
	}
	return intOf(fn, n)
}

// Equal reports whether two shardings place every element of every array on
// the same devices (JAX's ==): same kind, same mesh, and specs equal once
// trailing Nones are dropped.
func (s *Sharding) Equal(o *Sharding) (bool, error) {
	defer runtime.KeepAlive(s)
	defer runtime.KeepAlive(o)
	eq, err := get("Sharding.Equal", func(eq *int) error { return capi.Spmd_sharding_equal(s.handle(), o.handle(), eq) })
	return boolOf(eq), err
}

// IsFullyReplicated reports whether every device holds the whole array.
func (s *Sharding) IsFullyReplicated() (bool, error) {
	defer runtime.KeepAlive(s)
	v, err := get("Sharding.IsFullyReplicated", func(v *int) error { return capi.Spmd_sharding_is_fully_replicated(s.handle(), v) })
	return boolOf(v), err
}

// Text is JAX's str of the sharding: "NamedSharding(mesh=Mesh('x': 3),
// spec=PartitionSpec('x',), memory_kind=device)".
func (s *Sharding) Text() (string, error) {
	defer runtime.KeepAlive(s)
	return get("Sharding.Text", func(t *string) error { return capi.Spmd_sharding_to_string(s.handle(), t) })
}

// String is Text, or the error in angle brackets.
func (s *Sharding) String() string { return stringOr(s.Text()) }

// ShardInfo is where one shard of a global array lives (jax's Shard).
// Indices are [Start, Stop) per dimension, as Python slices. For an uneven
// dimension the shards are ceil(D/n) long and the last ones shorter or
// empty.
type ShardInfo struct {
	Device     int   // global id of the device holding the shard
	ReplicaID  int   // counts the devices holding the same block, 0 first
	Start      []int // first index per dimension
	Stop       []int // one past the last index per dimension
	LocalShape []int // Stop - Start per dimension
}

// shardInfo runs fill on a fresh spmd_shard_info and converts it.
func shardInfo(fn string, fill func(capi.Spmd_shard_info) error) (ShardInfo, error) {
	info := capi.NewSpmd_shard_info()
	defer capi.DeleteSpmd_shard_info(info)
	if err := check(fn, capi.Spmd_shard_info_init(info, capi.SizeofShardInfo)); err != nil {
		return ShardInfo{}, err
	}
	if err := check(fn, fill(info)); err != nil {
		return ShardInfo{}, err
	}
	n := int(info.GetNdim())
	out := ShardInfo{Device: info.GetDevice(), ReplicaID: info.GetReplica_id()}
	var err error
	if out.Start, err = intsOf(fn, copyInt64s(info.GetStart(), n)); err != nil {
		return ShardInfo{}, err
	}
	if out.Stop, err = intsOf(fn, copyInt64s(info.GetStop(), n)); err != nil {
		return ShardInfo{}, err
	}
	if out.LocalShape, err = intsOf(fn, copyInt64s(info.GetLocal_shape(), n)); err != nil {
		return ShardInfo{}, err
	}
	return out, nil
}

// copyInt64s copies n values from a C array into Go memory.
func copyInt64s(p *int64, n int) []int64 {
	out := make([]int64, n)
	if n > 0 {
		copy(out, unsafe.Slice(p, n))
	}
	return out
}

// ShardInfo is shard index (in mesh device order) of an array of global
// shape shape under the sharding; ErrOutOfRange for the index.
func (s *Sharding) ShardInfo(shape []int, index int) (ShardInfo, error) {
	defer runtime.KeepAlive(s)
	return shardInfo("Sharding.ShardInfo", func(info capi.Spmd_shard_info) error {
		return capi.Spmd_sharding_shard_info(s.handle(), int64s(shape), int64(index), info)
	})
}

// ProcessLocalShape is the shape of this process's part of an array of
// global shape laid out by s, what FromProcessLocalData takes: the smallest
// box covering the blocks of this process's devices (shape itself in a
// runtime of one process). ErrInvalidArgument for a bad shape, blocks that
// do not fill a box, or a mesh without a device of this process.
func (s *Sharding) ProcessLocalShape(shape []int) ([]int, error) {
	const fn = "Sharding.ProcessLocalShape"
	defer runtime.KeepAlive(s)
	local := int64s(shape) // read as the global shape, overwritten with the local one
	if err := check(fn, capi.Spmd_array_process_local_shape(s.handle(), local)); err != nil {
		return nil, err
	}
	return intsOf(fn, local)
}

// ShardInfoOfDevice is ShardInfo for the shard on device id;
// ErrInvalidArgument when the sharding places nothing there.
func (s *Sharding) ShardInfoOfDevice(shape []int, device int) (ShardInfo, error) {
	const fn = "Sharding.ShardInfoOfDevice"
	defer runtime.KeepAlive(s)
	if err := cInt(fn, "device", device); err != nil {
		return ShardInfo{}, err
	}
	return shardInfo(fn, func(info capi.Spmd_shard_info) error {
		return capi.Spmd_sharding_shard_info_of_device(s.handle(), int64s(shape), device, info)
	})
}

// VisualizeOptions are the options of the sharding pictures; zero in a
// field means the default.
type VisualizeOptions struct {
	ASCII    bool    // +-| instead of box drawing characters
	MaxWidth int     // console width; 0 = 80, as JAX; at most 1000
	MinWidth int     // narrowest block; 0 = 9, as JAX; at most 1000
	Scale    float64 // picture scale; 0 = 1.0, as JAX; at most 100
}

// visualizeOptions makes libspmd's struct (nil for nil) and its release.
func visualizeOptions(fn string, o *VisualizeOptions) (capi.Spmd_visualize_options, func(), error) {
	if o == nil {
		return nil, func() {}, nil
	}
	c := capi.NewSpmd_visualize_options()
	release := func() { capi.DeleteSpmd_visualize_options(c) }
	if err := check(fn, capi.Spmd_visualize_options_init(c, capi.SizeofVisualizeOptions)); err != nil {
		release()
		return nil, nil, err
	}
	c.SetAscii(cBool(o.ASCII))
	c.SetMax_width(o.MaxWidth)
	c.SetMin_width(o.MinWidth)
	c.SetScale(o.Scale)
	return c, release, nil
}

// Visualize is the picture of how an array of shape shape (1 or 2
// dimensions) is laid out by the sharding, exactly what
// jax.debug.visualize_array_sharding prints without colour, ending with a
// newline. nil options take every default.
func (s *Sharding) Visualize(shape []int, opts *VisualizeOptions) (string, error) {
	const fn = "Sharding.Visualize"
	defer runtime.KeepAlive(s)
	o, release, err := visualizeOptions(fn, opts)
	if err != nil {
		return "", err
	}
	defer release()
	return get(fn, func(t *string) error { return capi.Spmd_sharding_visualize(s.handle(), int64s(shape), o, t) })
}
