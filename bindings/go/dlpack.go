package spmd

// DLPack: shards shared with other libraries without copies (spmd/dlpack.h).

/*
#include <dlpack/dlpack.h>
#include <stddef.h>

static void spmd_go_dlpack_delete(void *t) {
	DLManagedTensor *m = (DLManagedTensor *)t;
	if (m != NULL && m->deleter != NULL) m->deleter(m);
}
*/
import "C"

import (
	"runtime"
	"unsafe"

	"github.com/libspmd/libspmd/bindings/go/internal/capi"
)

// ShardToDLPack is shard index's memory as a DLPack tensor (a
// DLManagedTensor *, spmd/dlpack.h), without a copy, once its pending
// writes are done: hand it to another library (cuDNN, CuPy, PyTorch), which
// calls its deleter when done; it keeps the memory alive until then, even
// after the array is closed. The tensor is read-only by contract. On the
// cpu platform its memory is host memory (kDLCPU); on cuda, the GPU's
// (kDLCUDA). ErrOutOfRange past the last shard; ErrUnsupported for another
// process's shard or on the sim platform.
func (a *Array) ShardToDLPack(index int) (unsafe.Pointer, error) {
	defer runtime.KeepAlive(a)
	return get("Array.ShardToDLPack", func(t *unsafe.Pointer) error {
		return capi.Spmd_array_shard_to_dlpack(a.handle(), int64(index), t)
	})
}

// FromDLPack is an array of global shape and dtype laid out by sharding
// whose blocks on this process's devices are DLPack tensors (each a
// DLManagedTensor *), adopted without a copy: tensors[k] is the block of
// device devices[k], one per such device. Each must be on that device's
// memory, of the dtype and block's shape, compact row-major and ready. On
// success the array owns them and calls each deleter once its block is no
// longer used; on an error the caller keeps them all. ErrInvalidArgument
// names the tensor or device at fault; ErrUnsupported on the sim platform.
func FromDLPack(sharding *Sharding, dtype DType, shape []int, devices []int, tensors []unsafe.Pointer) (*Array, error) {
	const fn = "FromDLPack"
	defer runtime.KeepAlive(sharding)
	if len(devices) != len(tensors) {
		return nil, invalid(fn, "devices: %d devices for %d tensors; one each", len(devices), len(tensors))
	}
	ids, err := int32s(fn, "devices", devices)
	if err != nil {
		return nil, err
	}
	return made(fn, newArray, func(h *uintptr) error {
		return capi.Spmd_array_from_dlpack(sharding.handle(), dtypeC(dtype), int64s(shape), int64(len(tensors)), ids, tensors, h)
	})
}

// DeleteDLPack calls a DLPack tensor's deleter: for a tensor ShardToDLPack
// gave that is not handed on after all, or one FromDLPack refused. A nil
// tensor is ignored. The tensor must not be used afterwards.
func DeleteDLPack(tensor unsafe.Pointer) {
	C.spmd_go_dlpack_delete(tensor)
}
