package spmd

import (
	"runtime"

	"github.com/libspmd/libspmd/bindings/go/internal/capi"
)

// MaxNDim is the most dimensions an array, a spec or a mesh may have.
const MaxNDim = capi.MaxNDim

// Mesh is a device mesh (jax.sharding.Mesh): devices of one runtime in a
// grid with named axes. Close it when done; shardings that use it keep it
// alive.
type Mesh struct {
	h        uintptr
	borrowed bool // lent by a shard_map context: Close does nothing
}

func newMesh(h uintptr) *Mesh {
	m := &Mesh{h: h}
	runtime.SetFinalizer(m, (*Mesh).Close)
	return m
}

func (m *Mesh) handle() uintptr {
	if m == nil {
		return 0
	}
	return m.h
}

// NewMesh creates a mesh of len(shape) axes with sizes shape and names axes
// (letters, digits and '_', not starting with a digit, not "None").
// devices lists prod(shape) distinct device ids in row-major mesh order;
// nil takes devices 0, 1, ... in order, as jax.make_mesh does.
// ErrInvalidArgument for a bad shape, name or device list.
func NewMesh(rt *Runtime, shape []int64, axes []string, devices []int) (*Mesh, error) {
	defer runtime.KeepAlive(rt)
	if len(axes) != len(shape) {
		return nil, invalid("spmd.NewMesh: %d axis names for %d axes", len(axes), len(shape))
	}
	var ids []int32
	if devices != nil {
		n := int64(1)
		for _, s := range shape {
			n *= s
		}
		if int64(len(devices)) != n {
			return nil, invalid("spmd.NewMesh: %d device ids for a mesh of %d devices", len(devices), n)
		}
		ids = make([]int32, len(devices))
		for i, d := range devices {
			ids[i] = int32(d)
		}
	}
	var h uintptr
	if err := check(capi.Spmd_mesh_create(rt.handle(), shape, axes, ids, &h)); err != nil {
		return nil, err
	}
	return newMesh(h), nil
}

// Close releases the caller's reference to the mesh. Closing twice is
// harmless; later calls on m fail with ErrInvalidArgument. A mesh borrowed
// from a ShardContext is not closed.
func (m *Mesh) Close() error {
	if m == nil || m.borrowed {
		return nil
	}
	runtime.SetFinalizer(m, nil)
	capi.Spmd_mesh_destroy(m.h)
	return nil
}

// NDim is the number of axes.
func (m *Mesh) NDim() (int, error) {
	defer runtime.KeepAlive(m)
	var n int64
	if err := check(capi.Spmd_mesh_ndim(m.handle(), &n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// Size is the number of devices in the mesh, prod(shape).
func (m *Mesh) Size() (int, error) {
	defer runtime.KeepAlive(m)
	var n int64
	if err := check(capi.Spmd_mesh_size(m.handle(), &n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// AxisName is the name of axis i; ErrOutOfRange past the last axis.
func (m *Mesh) AxisName(i int) (string, error) {
	defer runtime.KeepAlive(m)
	var s string
	if err := check(capi.Spmd_mesh_axis_name(m.handle(), int64(i), &s)); err != nil {
		return "", err
	}
	return s, nil
}

// AxisSize is the size of axis i; ErrOutOfRange past the last axis.
func (m *Mesh) AxisSize(i int) (int64, error) {
	defer runtime.KeepAlive(m)
	var n int64
	if err := check(capi.Spmd_mesh_axis_size(m.handle(), int64(i), &n)); err != nil {
		return 0, err
	}
	return n, nil
}

// AxisIndex is the index of the axis called name; ErrInvalidArgument when
// the mesh has none.
func (m *Mesh) AxisIndex(name string) (int, error) {
	defer runtime.KeepAlive(m)
	var n int64
	if err := check(capi.Spmd_mesh_axis_index(m.handle(), name, &n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// AxisNames lists the axis names in order.
func (m *Mesh) AxisNames() ([]string, error) {
	n, err := m.NDim()
	if err != nil {
		return nil, err
	}
	out := make([]string, n)
	for i := range out {
		if out[i], err = m.AxisName(i); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Shape lists the axis sizes in order.
func (m *Mesh) Shape() ([]int64, error) {
	n, err := m.NDim()
	if err != nil {
		return nil, err
	}
	out := make([]int64, n)
	for i := range out {
		if out[i], err = m.AxisSize(i); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// DeviceAt is the device at mesh coordinates coords, one per axis;
// ErrOutOfRange for a coordinate outside its axis.
func (m *Mesh) DeviceAt(coords ...int64) (int, error) {
	defer runtime.KeepAlive(m)
	var d int
	if err := check(capi.Spmd_mesh_device_at(m.handle(), coords, &d)); err != nil {
		return 0, err
	}
	return d, nil
}

// DeviceCoords are the mesh coordinates of device id; ErrInvalidArgument
// when the device is not in the mesh.
func (m *Mesh) DeviceCoords(id int) ([]int64, error) {
	defer runtime.KeepAlive(m)
	coords := make([]int64, MaxNDim)
	var n int64
	if err := check(capi.Spmd_mesh_device_coords(m.handle(), id, coords, &n)); err != nil {
		return nil, err
	}
	return coords[:n], nil
}

// Device is the i-th device in row-major mesh order (mesh.devices.flat[i]).
func (m *Mesh) Device(i int) (int, error) {
	defer runtime.KeepAlive(m)
	var d int
	if err := check(capi.Spmd_mesh_device(m.handle(), int64(i), &d)); err != nil {
		return 0, err
	}
	return d, nil
}

// Devices lists the mesh's device ids in row-major mesh order.
func (m *Mesh) Devices() ([]int, error) {
	n, err := m.Size()
	if err != nil {
		return nil, err
	}
	out := make([]int, n)
	for i := range out {
		if out[i], err = m.Device(i); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Equal reports whether two meshes have the same runtime, axis names, sizes
// and devices.
func (m *Mesh) Equal(o *Mesh) (bool, error) {
	defer runtime.KeepAlive(m)
	defer runtime.KeepAlive(o)
	var eq int
	if err := check(capi.Spmd_mesh_equal(m.handle(), o.handle(), &eq)); err != nil {
		return false, err
	}
	return boolOf(eq), nil
}

// Text is JAX's str(mesh): "Mesh('x': 2, 'y': 4)".
func (m *Mesh) Text() (string, error) {
	defer runtime.KeepAlive(m)
	var s string
	if err := check(capi.Spmd_mesh_to_string(m.handle(), &s)); err != nil {
		return "", err
	}
	return s, nil
}

// String is Text, or the error in angle brackets.
func (m *Mesh) String() string { return stringOr(m.Text()) }
