package spmd

import (
	"runtime"
	"strings"
	"unsafe"

	"github.com/libspmd/libspmd/bindings/go/internal/capi"
)

// Array is a sharded array (jax.Array): a global shape and dtype laid out by
// a sharding, one buffer per device. Operations may complete
// asynchronously; BlockUntilReady or a copy to the host waits for them and
// reports their errors. Close it when done.
type Array struct {
	r   *ref
	rec *recording // the program being recorded that a is a value of, or nil
}

func newArray(h uintptr) *Array {
	a := &Array{r: newRef(h, func(h uintptr) { capi.Spmd_array_destroy(h) })}
	runtime.SetFinalizer(a, (*Array).Close)
	return a
}

func (a *Array) handle() uintptr {
	if a == nil || a.r == nil {
		return 0
	}
	return a.r.id
}

// Close releases the array, and the Sharding its Sharding method gave.
// Closing twice is harmless; later calls on a fail with
// ErrInvalidArgument.
func (a *Array) Close() error {
	if a == nil || a.r == nil {
		return nil
	}
	runtime.SetFinalizer(a, nil)
	a.r.free()
	return nil
}

// bytesOf views a slice of fixed-size elements as its bytes.
func bytesOf[T HostElement](data []T) []byte {
	if len(data) == 0 {
		return nil
	}
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(&data[0])), len(data)*int(unsafe.Sizeof(zero)))
}

// FromHost is jax.device_put: copies data, row-major with prod(shape)
// elements, onto the devices of sharding, each device receiving its block.
// The array's dtype is T's (DTypeOf). ErrInvalidArgument for a data length
// that does not match shape, a bad shape, or a spec naming more dimensions
// than shape has.
func FromHost[T Element](sharding *Sharding, shape []int, data []T) (*Array, error) {
	return fromHost("FromHost", sharding, DTypeOf[T](), shape, data)
}

// FromHostAs is FromHost with the dtype given: data's bytes must be exactly
// prod(shape) elements of dtype (uint16 bit patterns for F16 and BF16).
func FromHostAs[T HostElement](sharding *Sharding, dtype DType, shape []int, data []T) (*Array, error) {
	return fromHost("FromHostAs", sharding, dtype, shape, data)
}

func fromHost[T HostElement](fn string, sharding *Sharding, dtype DType, shape []int, data []T) (*Array, error) {
	defer runtime.KeepAlive(sharding)
	return made(fn, newArray, func(h *uintptr) error {
		return capi.Spmd_array_from_host(sharding.handle(), dtypeC(dtype), int64s(shape), bytesOf(data), h)
	})
}

// FromProcessLocalData is jax.make_array_from_process_local_data: an array
// of global shape laid out by sharding from data, the part of it this
// process holds, row-major: the smallest box covering the blocks of this
// process's devices (Sharding.ProcessLocalShape gives its shape; the whole
// array in a runtime of one process, or where sharding replicates it
// across processes). Each process passes its own part; nothing crosses
// processes. The array's dtype is T's. ErrInvalidArgument for a data
// length that does not match the part, or blocks of this process that do
// not fill a box.
func FromProcessLocalData[T Element](sharding *Sharding, shape []int, data []T) (*Array, error) {
	return fromProcessLocalData("FromProcessLocalData", sharding, DTypeOf[T](), shape, data)
}

// FromProcessLocalDataAs is FromProcessLocalData with the dtype given
// (uint16 bit patterns for F16 and BF16).
func FromProcessLocalDataAs[T HostElement](sharding *Sharding, dtype DType, shape []int, data []T) (*Array, error) {
	return fromProcessLocalData("FromProcessLocalDataAs", sharding, dtype, shape, data)
}

func fromProcessLocalData[T HostElement](fn string, sharding *Sharding, dtype DType, shape []int, data []T) (*Array, error) {
	defer runtime.KeepAlive(sharding)
	return made(fn, newArray, func(h *uintptr) error {
		return capi.Spmd_array_from_process_local_data(sharding.handle(), dtypeC(dtype), int64s(shape), bytesOf(data), h)
	})
}

// FromSingleDeviceArrays is jax.make_array_from_single_device_arrays: an
// array of global shape and dtype laid out by sharding whose blocks on this
// process's devices are arrays, one per such device in any order, each on
// that one device (a SingleDevice sharding, or any array Device accepts)
// and of its block's shape and dtype. They are copied; the caller keeps
// them (and closes them). Each process passes its own devices' blocks;
// nothing crosses processes. ErrInvalidArgument for a bad shape or
// sharding, a count other than the number of this process's devices in
// the sharding's mesh, a nil, closed or donated array, one on several
// devices, on a device not this process's in the mesh or given twice, or
// of the wrong dtype or shape (the message names its index).
func FromSingleDeviceArrays(sharding *Sharding, dtype DType, shape []int, arrays []*Array) (*Array, error) {
	defer runtime.KeepAlive(sharding)
	defer runtime.KeepAlive(arrays)
	hs := handles(arrays)
	return made("FromSingleDeviceArrays", newArray, func(h *uintptr) error {
		return capi.Spmd_array_from_single_device_arrays(sharding.handle(), dtypeC(dtype), int64s(shape), int64(len(hs)), hs, h)
	})
}

// Zeros is an array of zeros made on the devices (jnp.zeros).
func Zeros(sharding *Sharding, dtype DType, shape []int) (*Array, error) {
	defer runtime.KeepAlive(sharding)
	return made("Zeros", newArray, func(h *uintptr) error {
		return capi.Spmd_array_zeros(sharding.handle(), dtypeC(dtype), int64s(shape), h)
	})
}

// Full is an array every element of which is value converted to dtype
// (jnp.full: integers truncate toward zero, bool is value != 0).
func Full(sharding *Sharding, dtype DType, shape []int, value float64) (*Array, error) {
	defer runtime.KeepAlive(sharding)
	return made("Full", newArray, func(h *uintptr) error {
		return capi.Spmd_array_full(sharding.handle(), dtypeC(dtype), int64s(shape), value, h)
	})
}

// Arange is jnp.arange(start, start + n*step, step).reshape(shape): element
// i in row-major order is start + i*step, converted to dtype.
func Arange(sharding *Sharding, dtype DType, shape []int, start, step float64) (*Array, error) {
	defer runtime.KeepAlive(sharding)
	return made("Arange", newArray, func(h *uintptr) error {
		return capi.Spmd_array_arange(sharding.handle(), dtypeC(dtype), int64s(shape), start, step, h)
	})
}

// DType is the array's element type.
func (a *Array) DType() (DType, error) {
	defer runtime.KeepAlive(a)
	d, err := get("Array.DType", func(d *int) error { return capi.Spmd_array_dtype(a.handle(), d) })
	return DType(d), err
}

// NDim is the array's number of dimensions.
func (a *Array) NDim() (int, error) {
	defer runtime.KeepAlive(a)
	n, err := get("Array.NDim", func(n *int64) error { return capi.Spmd_array_ndim(a.handle(), n) })
	return int(n), err
}

// Shape is the array's global shape.
func (a *Array) Shape() ([]int, error) {
	defer runtime.KeepAlive(a)
	return filled("Array.Shape", func(shape []int64, n *int64) error { return capi.Spmd_array_shape(a.handle(), shape, n) })
}

// Size is the number of elements, prod(shape).
func (a *Array) Size() (int, error) {
	const fn = "Array.Size"
	defer runtime.KeepAlive(a)
	n, err := get(fn, func(n *int64) error { return capi.Spmd_array_size(a.handle(), n) })
	if err != nil {
		return 0, err
	}
	return intOf(fn, n)
}

// NBytes is the byte size of the global array, Size * dtype size.
func (a *Array) NBytes() (int, error) {
	const fn = "Array.NBytes"
	defer runtime.KeepAlive(a)
	n, err := get(fn, func(n *int64) error { return capi.Spmd_array_nbytes(a.handle(), n) })
	if err != nil {
		return 0, err
	}
	return intOf(fn, n)
}

// Sharding is the array's sharding (a.sharding). It belongs to the array,
// which makes it once and frees it when closed: there is nothing to Close,
// calling Sharding again costs nothing, and the Sharding is usable while
// the array is open (to outlive it, keep the sharding the array was made
// with).
func (a *Array) Sharding() (*Sharding, error) {
	const fn = "Array.Sharding"
	if a == nil || a.r == nil {
		return nil, check(fn, capi.Spmd_array_sharding(0, new(uintptr)))
	}
	defer runtime.KeepAlive(a)
	r, err := a.r.child(fn, "sharding", destroySharding, func(h *uintptr) error { return capi.Spmd_array_sharding(a.r.id, h) })
	if err != nil {
		return nil, err
	}
	return &Sharding{r: r, owner: a}, nil
}

// Device is a.device for an array on one device; ErrInvalidArgument for an
// array spread over several (ask for its Sharding instead).
func (a *Array) Device() (int, error) {
	defer runtime.KeepAlive(a)
	return get("Array.Device", func(d *int) error { return capi.Spmd_array_device(a.handle(), d) })
}

// BlockUntilReady waits until every pending operation producing the array
// has finished, and returns the error of one that failed.
func (a *Array) BlockUntilReady() error {
	defer runtime.KeepAlive(a)
	return check("Array.BlockUntilReady", capi.Spmd_array_block_until_ready(a.handle()))
}

// ToHost copies the global array into a new row-major slice
// (np.asarray(a)), waiting for pending work. ErrInvalidArgument when T is
// not the array's dtype.
func ToHost[T Element](a *Array) ([]T, error) {
	if err := checkElement[T](a, "ToHost"); err != nil {
		return nil, err
	}
	return toHost[T](a, "ToHost")
}

// ToHostAs copies the array's bytes into a new slice of T, whatever the
// dtype, as long as the sizes fit (uint16 for F16 and BF16 bit patterns).
func ToHostAs[T HostElement](a *Array) ([]T, error) {
	return toHost[T](a, "ToHostAs")
}

func toHost[T HostElement](a *Array, fn string) ([]T, error) {
	return readAll[T](a, fn, func(b []byte) error {
		return check(fn, capi.Spmd_array_to_host(a.handle(), b))
	})
}

// ProcessAllgather copies the global array into a new row-major slice in
// every process (jax.experimental.multihost_utils.process_allgather(a,
// tiled=True)): the blocks other processes hold travel here, so it reads
// arrays ToHost refuses over several processes. Every process of the
// runtime must call it, in the same order as its other calls across
// processes; in a runtime of one process it is ToHost. ErrInvalidArgument
// when T is not the array's dtype; ErrTimeout when a process does not take
// part in time.
func ProcessAllgather[T Element](a *Array) ([]T, error) {
	if err := checkElement[T](a, "ProcessAllgather"); err != nil {
		return nil, err
	}
	return processAllgather[T](a, "ProcessAllgather")
}

// ProcessAllgatherAs is ProcessAllgather into a slice of T, whatever the
// dtype, as long as the sizes fit (uint16 for F16 and BF16 bit patterns).
func ProcessAllgatherAs[T HostElement](a *Array) ([]T, error) {
	return processAllgather[T](a, "ProcessAllgatherAs")
}

func processAllgather[T HostElement](a *Array, fn string) ([]T, error) {
	return readAll[T](a, fn, func(b []byte) error {
		return check(fn, capi.Spmd_array_process_allgather(a.handle(), b))
	})
}

// checkElement refuses a T that is not the array's dtype, naming fn.
func checkElement[T Element](a *Array, fn string) error {
	defer runtime.KeepAlive(a)
	d, err := get(fn, func(d *int) error { return capi.Spmd_array_dtype(a.handle(), d) })
	if err != nil {
		return err
	}
	if want := DTypeOf[T](); DType(d) != want {
		return invalid(fn, "T: the array holds %v, not %v", DType(d), want)
	}
	return nil
}

// readAll makes a slice of T as large as the array and fills its bytes
// with read (the whole array, row-major); fn names the caller.
func readAll[T HostElement](a *Array, fn string, read func([]byte) error) ([]T, error) {
	defer runtime.KeepAlive(a)
	n, err := get(fn, func(n *int64) error { return capi.Spmd_array_nbytes(a.handle(), n) })
	if err != nil {
		return nil, err
	}
	nbytes, err := intOf(fn, n)
	if err != nil {
		return nil, err
	}
	var zero T
	size := int(unsafe.Sizeof(zero))
	if nbytes%size != 0 {
		return nil, invalid(fn, "T: %d bytes are no whole number of %d-byte elements", nbytes, size)
	}
	out := make([]T, nbytes/size)
	if err := read(bytesOf(out)); err != nil {
		return nil, err
	}
	return out, nil
}

// IsFullyAddressable reports whether this process holds every shard of the
// array (jax.Array.is_fully_addressable): always in a runtime of one
// process. Only such an array can be read with ToHost; ProcessAllgather
// reads any.
func (a *Array) IsFullyAddressable() (bool, error) {
	defer runtime.KeepAlive(a)
	v, err := get("Array.IsFullyAddressable", func(v *int) error { return capi.Spmd_array_is_fully_addressable(a.handle(), v) })
	return boolOf(v), err
}

// ShardCount is the number of shards, one per device of the sharding
// (len(a.addressable_shards); over several processes every shard, those of
// other processes' devices described but not readable here).
func (a *Array) ShardCount() (int, error) {
	defer runtime.KeepAlive(a)
	n, err := get("Array.ShardCount", func(n *int64) error { return capi.Spmd_array_shard_count(a.handle(), n) })
	if err != nil {
		return 0, err
	}
	return intOf("Array.ShardCount", n)
}

// ShardInfo describes shard index (mesh device order); ErrOutOfRange past
// the last shard.
func (a *Array) ShardInfo(index int) (ShardInfo, error) {
	defer runtime.KeepAlive(a)
	return shardInfo("Array.ShardInfo", func(info capi.Spmd_shard_info) error {
		return capi.Spmd_array_shard_info(a.handle(), int64(index), info)
	})
}

// ShardInfoOfDevice describes the shard on device id; ErrInvalidArgument
// when no shard of the array is there.
func (a *Array) ShardInfoOfDevice(device int) (ShardInfo, error) {
	const fn = "Array.ShardInfoOfDevice"
	defer runtime.KeepAlive(a)
	if err := cInt(fn, "device", device); err != nil {
		return ShardInfo{}, err
	}
	return shardInfo(fn, func(info capi.Spmd_shard_info) error {
		return capi.Spmd_array_shard_info_of_device(a.handle(), device, info)
	})
}

// Shards describes every shard, in mesh device order.
func (a *Array) Shards() ([]ShardInfo, error) { return list(a.ShardCount, a.ShardInfo) }

func elements(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}

// ShardRead copies shard index (row-major, its local shape) into a new
// slice, waiting for pending work. The element size of T must be the
// dtype's (uint16 reads F16 and BF16 bits).
func ShardRead[T HostElement](a *Array, index int) ([]T, error) {
	const fn = "ShardRead"
	defer runtime.KeepAlive(a)
	info, err := shardInfo(fn, func(info capi.Spmd_shard_info) error {
		return capi.Spmd_array_shard_info(a.handle(), int64(index), info)
	})
	if err != nil {
		return nil, err
	}
	out := make([]T, elements(info.LocalShape))
	if err := check(fn, capi.Spmd_array_shard_read(a.handle(), int64(index), bytesOf(out))); err != nil {
		return nil, err
	}
	return out, nil
}

// ShardWrite overwrites shard index from data (row-major, the shard's local
// shape). Only that device's copy changes: keeping replicas equal is the
// caller's duty. It must not run while another goroutine reads or writes
// the array.
func ShardWrite[T HostElement](a *Array, index int, data []T) error {
	defer runtime.KeepAlive(a)
	return check("ShardWrite", capi.Spmd_array_shard_write(a.handle(), int64(index), bytesOf(data)))
}

// Reshard is a new array with the same values laid out by sharding (on the
// same mesh or another mesh of the same runtime); only the overlapping
// blocks move, device to device. On a value of a program being recorded
// (Record) it records a layout constraint
// (jax.lax.with_sharding_constraint).
func (a *Array) Reshard(sharding *Sharding) (*Array, error) {
	defer runtime.KeepAlive(a)
	defer runtime.KeepAlive(sharding)
	r, err := made("Array.Reshard", newArray, func(h *uintptr) error { return capi.Spmd_array_reshard(a.handle(), sharding.handle(), h) })
	return derived(r, err, a)
}

// Save writes the array to the directory dir as a checkpoint, as Orbax
// checkpoints a jax.Array (ocp.StandardCheckpointer().save(dir, a)), in
// libspmd's own layout: each process writes the blocks of its devices, one
// file per block, and process 0 an index of them, so that Load restores it
// under any sharding, on any mesh and number of processes. The directory
// is made if missing. ErrInvalidArgument when it already holds a
// checkpoint, or when a file cannot be made or written (the message names
// the path and the system's reason). Every process of the runtime calls it
// with the same directory, on a file system they share; it waits for
// pending work and returns once the whole checkpoint is written.
// ErrTimeout when a process does not take part in time.
func (a *Array) Save(dir string) error {
	defer runtime.KeepAlive(a)
	if err := pathArg("Array.Save", dir); err != nil {
		return err
	}
	return check("Array.Save", capi.Spmd_array_save(a.handle(), dir))
}

// Load restores the array Save wrote to the directory dir, laid out by
// sharding (Orbax's restore of a jax.Array with
// ocp.ArrayRestoreArgs(sharding=...)): its dtype and shape are the saved
// ones (Array.DType tells them); each process reads only the parts of the
// saved blocks its own devices need. ErrInvalidArgument for a directory
// without a checkpoint, a damaged index or block file (named in the
// message), or a sharding whose spec does not suit the saved rank.
func Load(sharding *Sharding, dir string) (*Array, error) {
	defer runtime.KeepAlive(sharding)
	if err := pathArg("Load", dir); err != nil {
		return nil, err
	}
	return made("Load", newArray, func(h *uintptr) error { return capi.Spmd_array_load(sharding.handle(), dir, h) })
}

// pathArg refuses a path C would cut short at a NUL byte.
func pathArg(fn, path string) error {
	if strings.IndexByte(path, 0) >= 0 {
		return invalid(fn, "dir: the path %q contains a NUL byte", path)
	}
	return nil
}

// Repr is JAX's repr(a): "Array([ 1.      ,  2.682942], dtype=float32)",
// with NumPy's default print options. It copies the array to the host.
func (a *Array) Repr() (string, error) {
	defer runtime.KeepAlive(a)
	return get("Array.Repr", func(s *string) error { return capi.Spmd_array_repr(a.handle(), s) })
}

// Str is str(a), what print(a) shows: "[[0. 1.]\n [2. 3.]]", a
// 0-dimensional array as its scalar ("276.0").
func (a *Array) Str() (string, error) {
	defer runtime.KeepAlive(a)
	return get("Array.Str", func(s *string) error { return capi.Spmd_array_str(a.handle(), s) })
}

// String is Str, or the error in angle brackets.
func (a *Array) String() string { return stringOr(a.Str()) }

// Visualize is the picture of the array's sharding
// (jax.debug.visualize_array_sharding), ending with a newline; nil options
// take every default.
func (a *Array) Visualize(opts *VisualizeOptions) (string, error) {
	defer runtime.KeepAlive(a)
	o, release, err := visualizeOptions("Array.Visualize", opts)
	if err != nil {
		return "", err
	}
	defer release()
	return get("Array.Visualize", func(s *string) error { return capi.Spmd_array_visualize(a.handle(), o, s) })
}
