package spmd

import (
	"runtime"

	"github.com/libspmd/libspmd/bindings/go/internal/capi"
)

// MaxNDim is the most dimensions an array, a spec or a mesh may have.
const MaxNDim = capi.MaxNDim

// Mesh is a device mesh (jax.sharding.Mesh): devices of one runtime in a
// grid with named axes. Close it when done; shardings that use it keep it
// alive. A Mesh from Sharding.Mesh belongs to its sharding (its Close does
// nothing).
type Mesh struct {
	r     *ref
	owner any // the Sharding a borrowed mesh belongs to; nil when the caller owns it
}

func newMesh(h uintptr) *Mesh {
	m := &Mesh{r: newRef(h, destroyMesh)}
	runtime.SetFinalizer(m, (*Mesh).Close)
	return m
}

func destroyMesh(h uintptr) { capi.Spmd_mesh_destroy(h) }

func (m *Mesh) handle() uintptr {
	if m == nil || m.r == nil {
		return 0
	}
	return m.r.id
}

// NewMesh creates a mesh of len(shape) axes with sizes shape and names axes
// (letters, digits and '_', not starting with a digit, not "None").
// devices lists prod(shape) distinct device ids in row-major mesh order;
// none takes devices 0, 1, ... in order, as jax.make_mesh does:
//
//	mesh, err := spmd.NewMesh(rt, []int{2, 4}, []string{"x", "y"})
//	reversed, err := spmd.NewMesh(rt, []int{4}, []string{"d"}, 3, 2, 1, 0)
//
// ErrInvalidArgument for a bad shape, name or device list.
func NewMesh(rt *Runtime, shape []int, axes []string, devices ...int) (*Mesh, error) {
	const fn = "NewMesh"
	defer runtime.KeepAlive(rt)
	if len(axes) != len(shape) {
		return nil, invalid(fn, "axes: %d axis names for %d axes", len(axes), len(shape))
	}
	var ids []int32
	if len(devices) > 0 {
		if n := elements(shape); len(devices) != n {
			return nil, invalid(fn, "devices: %d device ids for a mesh of %d devices", len(devices), n)
		}
		var err error
		if ids, err = int32s(fn, "devices", devices); err != nil {
			return nil, err
		}
	}
	return made(fn, newMesh, func(h *uintptr) error { return capi.Spmd_mesh_create(rt.handle(), int64s(shape), axes, ids, h) })
}

// Close releases the caller's reference to the mesh. Closing twice is
// harmless; later calls on m fail with ErrInvalidArgument. Closing a mesh
// that belongs to a sharding does nothing.
func (m *Mesh) Close() error {
	if m == nil || m.r == nil || m.owner != nil {
		return nil
	}
	runtime.SetFinalizer(m, nil)
	m.r.free()
	return nil
}

// NDim is the number of axes.
func (m *Mesh) NDim() (int, error) {
	defer runtime.KeepAlive(m)
	n, err := get("Mesh.NDim", func(n *int64) error { return capi.Spmd_mesh_ndim(m.handle(), n) })
	return int(n), err
}

// Size is the number of devices in the mesh, prod(shape).
func (m *Mesh) Size() (int, error) {
	defer runtime.KeepAlive(m)
	n, err := get("Mesh.Size", func(n *int64) error { return capi.Spmd_mesh_size(m.handle(), n) })
	if err != nil {
		return 0, err
	}
	return intOf("Mesh.Size", n)
}

// AxisName is the name of axis i; ErrOutOfRange past the last axis.
func (m *Mesh) AxisName(i int) (string, error) {
	defer runtime.KeepAlive(m)
	return get("Mesh.AxisName", func(s *string) error { return capi.Spmd_mesh_axis_name(m.handle(), int64(i), s) })
}

// AxisSize is the size of axis i; ErrOutOfRange past the last axis.
func (m *Mesh) AxisSize(i int) (int, error) {
	defer runtime.KeepAlive(m)
	n, err := get("Mesh.AxisSize", func(n *int64) error { return capi.Spmd_mesh_axis_size(m.handle(), int64(i), n) })
	if err != nil {
		return 0, err
	}
	return intOf("Mesh.AxisSize", n)
}

// AxisIndex is the index of the axis called name; ErrInvalidArgument when
// the mesh has none.
func (m *Mesh) AxisIndex(name string) (int, error) {
	defer runtime.KeepAlive(m)
	n, err := get("Mesh.AxisIndex", func(n *int64) error { return capi.Spmd_mesh_axis_index(m.handle(), name, n) })
	return int(n), err
}

// AxisNames lists the axis names in order.
func (m *Mesh) AxisNames() ([]string, error) { return list(m.NDim, m.AxisName) }

// Shape lists the axis sizes in order.
func (m *Mesh) Shape() ([]int, error) { return list(m.NDim, m.AxisSize) }

// DeviceAt is the device at mesh coordinates coords, one per axis;
// ErrOutOfRange for a coordinate outside its axis.
func (m *Mesh) DeviceAt(coords ...int) (int, error) {
	defer runtime.KeepAlive(m)
	return get("Mesh.DeviceAt", func(d *int) error { return capi.Spmd_mesh_device_at(m.handle(), int64s(coords), d) })
}

// DeviceCoords are the mesh coordinates of device id; ErrInvalidArgument
// when the device is not in the mesh.
func (m *Mesh) DeviceCoords(id int) ([]int, error) {
	const fn = "Mesh.DeviceCoords"
	defer runtime.KeepAlive(m)
	if err := cInt(fn, "id", id); err != nil {
		return nil, err
	}
	return filled(fn, func(coords []int64, n *int64) error { return capi.Spmd_mesh_device_coords(m.handle(), id, coords, n) })
}

// Device is the i-th device in row-major mesh order (mesh.devices.flat[i]).
func (m *Mesh) Device(i int) (int, error) {
	defer runtime.KeepAlive(m)
	return get("Mesh.Device", func(d *int) error { return capi.Spmd_mesh_device(m.handle(), int64(i), d) })
}

// Devices lists the mesh's device ids in row-major mesh order.
func (m *Mesh) Devices() ([]int, error) { return list(m.Size, m.Device) }

// Equal reports whether two meshes have the same runtime, axis names, sizes
// and devices.
func (m *Mesh) Equal(o *Mesh) (bool, error) {
	defer runtime.KeepAlive(m)
	defer runtime.KeepAlive(o)
	eq, err := get("Mesh.Equal", func(eq *int) error { return capi.Spmd_mesh_equal(m.handle(), o.handle(), eq) })
	return boolOf(eq), err
}

// Text is JAX's str(mesh): "Mesh('x': 2, 'y': 4)".
func (m *Mesh) Text() (string, error) {
	defer runtime.KeepAlive(m)
	return get("Mesh.Text", func(s *string) error { return capi.Spmd_mesh_to_string(m.handle(), s) })
}

// String is Text, or the error in angle brackets.
func (m *Mesh) String() string { return stringOr(m.Text()) }
