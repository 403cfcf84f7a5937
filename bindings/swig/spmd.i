/* The one interface every binding is made from.
 *
 * SWIG reads the public headers through this file. Its Go module turns them
 * into the raw layer of the Go package (bindings/go); its XML module gives
 * the parse that bindings/gen turns into Rust's spmd-sys and Julia's
 * LibSPMD. The idiomatic layer of each language is written by hand on top.
 *
 *   swig -go -cgo -intgosize 64 -I<include> -I<build>/include spmd.i
 *   swig -xml -I<include> -I<build>/include -o spmd.xml spmd.i
 *
 * Typemaps shared by every language module are here; those of one language
 * sit in its own section below, guarded by SWIG's language macro. Nothing
 * in this file changes what the C API means: a binding that needs another
 * shape of call builds it in its idiomatic layer.
 */
%module spmd

/* The experimental headers (spmd/experimental/) are parsed too: every
 * exported function is wrapped, experimental ones included. They need
 * SPMD_EXPERIMENTAL defined, for SWIG's preprocessor and for the C that
 * SWIG's language modules write. */
#define SPMD_EXPERIMENTAL

%{
#define SPMD_EXPERIMENTAL
#include "spmd/spmd.h"
#include "spmd/dlpack.h"
#include "spmd/experimental/program.h"
#include "spmd/experimental/random.h"
%}

%include <stdint.i>

/* ---- Go: SWIG's Go module (bindings/go/README.md) -------------------- */
#ifdef SWIGGO
/* The raw layer of the Go binding: package internal/capi of the module that
 * bindings/go/CMakeLists.txt stages, generated with
 *   swig -go -cgo -intgosize 64 -DSWIGWORDSIZE64 -package capi ...
 * (-DSWIGWORDSIZE64 makes stdint.i's int64_t a long, as LP64 C has it).
 * The handwritten package spmd is built on top of it. The typemaps below
 * make every call safe under cgo's pointer rules: handles are uintptr ids,
 * Go memory handed to C holds no Go pointers and is not kept, and strings
 * cross as copies. Helpers named spmd_go_* live in
 * bindings/go/internal/capi/capi_helpers.{h,c}; the Go helpers the goin,
 * goout and goargout code names (statusError, joinStrings) in
 * bindings/go/internal/capi/capi.go. */
%{
#include "capi_helpers.h"
%}

/* -- Status -> error. A spmd_status result becomes a Go error: nil for
 * SPMD_OK, else a *capi.Error with the code and spmd_last_error()'s
 * message. The message is copied in the C wrapper, right after the call and
 * on the same thread (a goroutine may move between threads between two cgo
 * calls), into a malloc'd record whose address crosses as a uintptr;
 * statusError (capi.go) reads and frees it. */
%typemap(gotype) spmd_status "error"
%typemap(imtype) spmd_status "uintptr"
%typemap(out) spmd_status %{ $result = (intgo)spmd_go_error_capture($1); %}
%typemap(goout) spmd_status %{ $result = statusError($1) %}
/* A status passed in (spmd_status_string, spmd_ctx_error) is a plain int. */
%typemap(gotype) spmd_status status "int"
%typemap(imtype) spmd_status status "int"
%typemap(in) spmd_status status %{ $1 = (spmd_status)$input; %}

/* -- Handles. Opaque handles are ids that look like pointers; Go keeps them
 * as uintptr (never unsafe.Pointer: they are not addresses). Out handles
 * (T **out) are *uintptr; arrays of handles ([n] inputs, specs, outputs)
 * are []uintptr, whose length the idiomatic layer matches to the count
 * argument beside them. */
%define SPMD_GO_HANDLE(T)
%typemap(gotype) T *, const T * "uintptr"
%typemap(in) T *, const T * %{ $1 = ($1_ltype)$input; %}
%typemap(out) T *, const T * %{ *($&1_ltype)&$result = $1; %}
%typemap(goout) T *, const T * ""
%typemap(gotype) T **, const T ** "*uintptr"
%typemap(in) T **, const T ** %{ $1 = ($1_ltype)$input; %}
%typemap(gotype) T *const *, const T *const *, T **outputs "[]uintptr"
%typemap(in) T *const *, const T *const *, T **outputs %{ $1 = ($1_ltype)$input.array; %}
%enddef
SPMD_GO_HANDLE(spmd_runtime)
SPMD_GO_HANDLE(spmd_mesh)
SPMD_GO_HANDLE(spmd_spec)
SPMD_GO_HANDLE(spmd_sharding)
SPMD_GO_HANDLE(spmd_array)
/* A DLPack tensor (spmd/dlpack.h) is C memory another library owns: an
 * unsafe.Pointer in Go, copied out of a C temporary as spmd_ctx_stream's
 * stream is; a list of them is a []unsafe.Pointer holding C pointers only. */
%typemap(gotype) DLManagedTensor **out "*unsafe.Pointer"
%typemap(in) DLManagedTensor **out (DLManagedTensor *temp) %{ temp = NULL; $1 = &temp; %}
%typemap(argout) DLManagedTensor **out %{ *$input = temp$argnum; %}
%typemap(gotype) DLManagedTensor *const *tensors "[]unsafe.Pointer"
%typemap(in) DLManagedTensor *const *tensors %{ $1 = ($1_ltype)$input.array; %}
SPMD_GO_HANDLE(spmd_collective)
SPMD_GO_HANDLE(spmd_ctx)
SPMD_GO_HANDLE(spmd_x_program)

/* -- Scalar outputs (int *out, size_t *out, spmd_dtype *out, ...) are Go
 * pointers to Go-sized values: C writes a temporary of its own type, the
 * wrapper copies it out (C's int and enums are 4 bytes, Go's int 8). */
%define SPMD_GO_SCALAR_OUT(CTYPE, GOTYPE)
%typemap(gotype) CTYPE *out, CTYPE *ndim "*" #GOTYPE
%typemap(in) CTYPE *out (CTYPE temp), CTYPE *ndim (CTYPE temp)
%{ temp = (CTYPE)0; $1 = ($1_ltype)&temp; %}
%typemap(argout) CTYPE *out, CTYPE *ndim %{ *$input = temp$argnum; %}
%enddef
SPMD_GO_SCALAR_OUT(int, int)
SPMD_GO_SCALAR_OUT(size_t, int64)
SPMD_GO_SCALAR_OUT(int64_t, int64)
SPMD_GO_SCALAR_OUT(spmd_dtype, int)
SPMD_GO_SCALAR_OUT(spmd_platform, int)
SPMD_GO_SCALAR_OUT(spmd_sharding_kind, int)

/* -- Strings out. char **out (a new string the caller frees) and
 * const char **out (borrowed) are *string: the wrapper copies the text into
 * malloc'd memory that a Go string header points to (and frees libspmd's
 * string with spmd_string_free through spmd_go_take_string); the Go side
 * copies it into Go memory and frees the copy (takeCString). C writes a
 * fresh string of the wrapper's (goin), never the caller's, whose memory
 * may hold Go pointers cgo must not pass. */
%typemap(gotype) char **out, const char **out "*string"
%typemap(imtype) char **out, const char **out "*string"
%typemap(goin) char **out, const char **out %{ $result = new(string) %}
%typemap(in) char **out (char *temp), const char **out (const char *temp)
%{ temp = NULL; $1 = ($1_ltype)&temp; %}
%typemap(argout, fragment="AllocateString") char **out
%{ *$input = Swig_AllocateString(temp$argnum, temp$argnum ? strlen(temp$argnum) : 0);
   spmd_go_take_string(temp$argnum); %}
%typemap(argout, fragment="AllocateString") const char **out
%{ *$input = Swig_AllocateString((char *)temp$argnum, temp$argnum ? strlen(temp$argnum) : 0); %}
%typemap(goargout) char **out, const char **out %{ *$1 = takeCString(*$input) %}
/* Returned strings (spmd_status_string, spmd_version_string, the device
 * description's names) cross the same way. takeCString (capi.go) replaces
 * SWIG's swigCopyString, which go vet rejects. */
%typemap(goout) char *, const char * %{ $result = takeCString($1) %}

/* -- Lists of strings (axis names, spec texts) are []string. Go joins them
 * into one NUL-terminated blob (joinStrings), which crosses as one string
 * and holds no Go pointers; the wrapper splits a malloc'd copy into a
 * char *[] padded with NULLs (so a count beside it that is too large reads
 * NULL, which libspmd refuses) and frees it after the call. */
%typemap(gotype) const char *const *, (const char *const *axes, size_t naxes) "[]string"
%typemap(imtype) const char *const *, (const char *const *axes, size_t naxes) "string"
%typemap(goin) const char *const *, (const char *const *axes, size_t naxes)
%{ $result = joinStrings($input) %}
%typemap(in) const char *const * (size_t count)
%{ $1 = ($1_ltype)spmd_go_split_strings($input.p, (size_t)$input.n, &count); %}
%typemap(in) (const char *const *axes, size_t naxes)
%{ $1 = ($1_ltype)spmd_go_split_strings($input.p, (size_t)$input.n, &$2); %}
%typemap(freearg) const char *const *, (const char *const *axes, size_t naxes)
%{ free((void *)$1); %}

/* -- Counted arrays: a (count, pointer) pair is one Go slice whose length
 * is the count (nil or empty: NULL, count 0). Inputs ((size_t ndim,
 * const int64_t *shape) and the like) are []int64; so are caller-sized
 * outputs ((size_t capacity, int64_t *shape): C fills the first ndim
 * values); ppermute's (source, dest) pairs are [][2]int64, split's keys to
 * fill [][2]uint32, and the key data split_from makes []uintptr, one
 * handle per new array. */
%typemap(gotype) (size_t ndim, const int64_t *shape) "[]int64"
%typemap(in) (size_t ndim, const int64_t *shape)
%{ $1 = (size_t)$input.len; $2 = $input.len ? ($2_ltype)$input.array : NULL; %}
%apply (size_t ndim, const int64_t *shape) {
  (size_t ndim, const int64_t *coords), (size_t naxes, const int64_t *axes),
  (size_t naxes, const int64_t *perm), (size_t ndim, const int64_t *start),
  (size_t capacity, int64_t *shape), (size_t capacity, int64_t *coords),
  (size_t npairs, const int64_t *pairs), (size_t n, spmd_key *out),
  (size_t n, spmd_array **out) }
%typemap(gotype) (size_t npairs, const int64_t *pairs) "[][2]int64"
%typemap(gotype) (size_t n, spmd_key *out) "[][2]uint32"
%typemap(gotype) (size_t n, spmd_array **out) "[]uintptr"
/* The slices' stop, strides and sizes have start's count: each copied into
 * a zero-padded buffer, so a short slice never makes libspmd read past its
 * end. */
%typemap(gotype) const int64_t *stop "[]int64"
%typemap(in) const int64_t *stop (int64_t buf[SPMD_MAX_NDIM])
%{ memset(buf, 0, sizeof buf);
   if ($input.len > SPMD_MAX_NDIM) $1 = ($1_ltype)$input.array;
   else { memcpy(buf, $input.array, (size_t)$input.len * sizeof *buf); $1 = buf; } %}
%apply const int64_t *stop { const int64_t *strides, const int64_t *sizes }
/* spmd_array_process_local_shape's out has the count of the shape beside
 * it: the two are one []int64, read as the global shape and overwritten
 * with the local one. C writes a buffer of the wrapper's (NULL past
 * SPMD_MAX_NDIM dimensions, which libspmd refuses), copied out on success,
 * so it never writes past the slice. (This sequence of three is longer
 * than, so taken before, the (ndim, shape) pair above.) */
%typemap(gotype) (size_t ndim, const int64_t *shape, int64_t *out) "[]int64"
%typemap(in) (size_t ndim, const int64_t *shape, int64_t *out) (int64_t buf[SPMD_MAX_NDIM])
%{ $1 = (size_t)$input.len; $2 = $input.len ? ($2_ltype)$input.array : NULL;
   $3 = $input.len <= SPMD_MAX_NDIM ? buf : NULL; %}
%typemap(argout) (size_t ndim, const int64_t *shape, int64_t *out)
%{ if (result == SPMD_OK && $1 <= SPMD_MAX_NDIM) memcpy($input.array, buf$argnum, $1 * sizeof(int64_t)); %}
/* Device ids of spmd_mesh_create: []int32 (Go's int is 8 bytes); nil takes
 * the default order. The idiomatic layer checks the length. */
%typemap(gotype) const int *device_ids, const int *devices "[]int32"
%typemap(in) const int *device_ids, const int *devices %{ $1 = $input.len ? ($1_ltype)$input.array : NULL; %}
/* Pointers stored in option structs (collective pairs, dot_general
 * dimensions) must point to C memory: uintptr from capi.CopyInt64s. */
%typemap(gotype) const int64_t *pairs "uintptr"
%typemap(in) const int64_t *pairs %{ $1 = ($1_ltype)$input; %}
%typemap(out) const int64_t *pairs %{ *($&1_ltype)&$result = $1; %}
%apply const int64_t *pairs { const int64_t *lhs_batch, const int64_t *rhs_batch,
                              const int64_t *lhs_contract, const int64_t *rhs_contract }

/* -- Host buffers: (const void *data, size_t nbytes) and (void *data,
 * size_t nbytes) are one []byte, read or filled during the call only. */
%typemap(gotype) (const void *data, size_t nbytes), (void *data, size_t nbytes) "[]byte"
%typemap(in) (const void *data, size_t nbytes), (void *data, size_t nbytes)
%{ $1 = $input.len ? ($1_ltype)$input.array : NULL; $2 = (size_t)$input.len; %}
/* A block's data is memory the shard_map context owns, of the kind its
 * memory_kind field (an Enum_SS_spmd_memory_kind) says: the idiomatic layer
 * makes a slice of it only for host memory. */
%typemap(gotype) void *data "unsafe.Pointer"
/* spmd_ctx_stream's stream (a cudaStream_t, or NULL) is C's, never Go
 * memory: *unsafe.Pointer, copied out of a C temporary as the scalar
 * outputs are, so C never writes through a Go pointer. */
%typemap(gotype) void **out "*unsafe.Pointer"
%typemap(in) void **out (void *temp) %{ temp = NULL; $1 = &temp; %}
%typemap(argout) void **out %{ *$input = temp$argnum; %}

/* -- PRNG keys: spmd_key is two uint32 words, so *[2]uint32 in Go (split's
 * (n, out) pair is a counted array, above). */
%typemap(gotype) spmd_key *, const spmd_key * "*[2]uint32"
%typemap(in) spmd_key *, const spmd_key * %{ $1 = ($1_ltype)$input; %}

/* -- Callbacks: function pointers cross as uintptr (the addresses of the
 * C trampolines in bindings/go/trampoline.c); user data is a
 * runtime/cgo.Handle value, never a Go pointer. */
%typemap(gotype) spmd_shard_fn, spmd_print_fn "uintptr"
%typemap(in) spmd_shard_fn, spmd_print_fn %{ $1 = ($1_ltype)$input; %}
%typemap(out) spmd_shard_fn, spmd_print_fn %{ *($&1_ltype)&$result = $1; %}

/* Not wrapped for Go: spmd_ctx_printf is variadic (ShardContext.Printf
 * formats in Go and calls spmd_ctx_print); spmd_string_free takes strings
 * libspmd made, which never reach Go (the char **out typemap frees them
 * through capi_helpers.c). */
%ignore spmd_ctx_printf;
%ignore spmd_string_free;
/* The thread's last error means nothing to a goroutine, which may move
 * between threads: every error already carries its message (above), copied
 * by capi_helpers.c, which calls both. */
%ignore spmd_last_error;
%ignore spmd_clear_error;
/* A key is *[2]uint32 (above); its struct's words accessor would take a
 * pointer of the wrong size. */
%ignore spmd_key::words;

/* The device description's strings live in the runtime: read-only. */
%immutable spmd_device_info::platform_name;
%immutable spmd_device_info::kind;
#endif /* SWIGGO */

/* ---- The headers, in the order spmd/spmd.h includes them. ------------ */
%include "spmd/export.h"
%include "spmd/version.h"
%include "spmd/status.h"
%include "spmd/handles.h"
%include "spmd/dtype.h"
%include "spmd/runtime.h"
%include "spmd/mesh.h"
%include "spmd/spec.h"
%include "spmd/sharding.h"
%include "spmd/array.h"
%include "spmd/format.h"
%include "spmd/random.h"
%include "spmd/visualize.h"
%include "spmd/shard_map.h"
%include "spmd/collective.h"
%include "spmd/ops.h"

/* ---- DLPack (spmd/dlpack.h, which spmd/spmd.h leaves out): its struct is
 * DLPack's own, which the header declares opaque to SWIG; a binding passes
 * the pointer through. */
%include "spmd/dlpack.h"

/* ---- Experimental (spmd/experimental/, SPMD_EXPERIMENTAL above): the
 * APIs not yet promised stable, wrapped by every binding as experimental
 * (docs/bindings.md). */
%include "spmd/experimental/program.h"
%include "spmd/experimental/random.h"
