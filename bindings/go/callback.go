package spmd

// #cgo pkg-config: spmd
// #include <stdint.h>
// #include "trampoline.h"
import "C"

import (
	"errors"
	"fmt"
	"runtime/cgo"
)

// shardFnPtr and printFnPtr are the C trampolines (trampoline.c), as
// libspmd's spmd_shard_fn and spmd_print_fn.
func shardFnPtr() uintptr { return uintptr(C.spmd_go_shard_fn()) }
func printFnPtr() uintptr { return uintptr(C.spmd_go_print_fn()) }

// spmdGoShardCallback runs on a device thread of libspmd, called by the
// trampoline with the device's context and the cgo.Handle of the ShardMap's
// shardCall. It never lets a panic reach C: panics and returned errors
// become spmd_ctx_error, the device's failure.
//
//export spmdGoShardCallback
func spmdGoShardCallback(ctx C.uintptr_t, handle C.uintptr_t) C.int {
	call, ok := cgo.Handle(handle).Value().(*shardCall)
	if !ok {
		return C.int(StatusInternal)
	}
	c := &ShardContext{h: uintptr(ctx), call: call}
	defer c.finish()
	return C.int(c.run())
}

// spmdGoPrintCallback receives spmd_ctx_print's text, one call at a time.
//
//export spmdGoPrintCallback
func spmdGoPrintCallback(device C.int, text *C.char, handle C.uintptr_t) {
	print, ok := cgo.Handle(handle).Value().(func(int, string))
	if !ok {
		return
	}
	s := C.GoString(text)
	defer func() { _ = recover() }() // a panicking sink loses its line, not the process
	print(int(device), s)
}

// run calls the user's function and turns its outcome into a status.
func (c *ShardContext) run() (status Status) {
	defer func() {
		if r := recover(); r != nil {
			status = c.fail(StatusCallback, fmt.Sprintf("panic: %v", r))
		}
	}()
	err := c.call.fn(c)
	if err == nil {
		return StatusOK
	}
	status = StatusCallback
	var e *Error
	if errors.As(err, &e) && e.Status != StatusOK {
		status = e.Status
	}
	if c.recorded.Load() { // ctx.Error gave libspmd the message already
		return status
	}
	message := err.Error()
	if e, ok := err.(*Error); ok && e.Message != "" {
		message = e.Message // the status is the device's: no "spmd: <status>: " twice
	}
	return c.fail(status, message)
}
