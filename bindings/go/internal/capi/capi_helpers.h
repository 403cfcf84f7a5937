/* C helpers of the Go binding's raw layer (package capi). The SWIG wrapper
 * (spmd_wrap.c, generated) includes this through the typemaps of
 * bindings/swig/spmd.i; capi.go calls them through cgo. */
#ifndef SPMD_GO_CAPI_HELPERS_H
#define SPMD_GO_CAPI_HELPERS_H

#include <stddef.h>
#include <stdint.h>

#include "spmd/spmd.h"

/* The record of one failed call: its status and a copy of
 * spmd_last_error(), made on the thread of the call. Returns 0 for SPMD_OK,
 * else the address of a record statusError (capi.go) reads and frees. */
uintptr_t spmd_go_error_capture(spmd_status status);
int spmd_go_error_status(uintptr_t record);
const char *spmd_go_error_message(uintptr_t record);
void spmd_go_error_free(uintptr_t record);

/* Releases a string libspmd returned (NULL accepted). */
void spmd_go_take_string(char *string);

/* Splits a blob of NUL-terminated strings (joinStrings in capi.go) into a
 * malloc'd, NULL-padded array of pointers into a copy of the blob, all in
 * one allocation the caller frees. *count receives the number of strings. */
char **spmd_go_split_strings(const char *blob, size_t n, size_t *count);

/* C memory for values that option structs point to. */
uintptr_t spmd_go_copy_int64s(const int64_t *values, size_t n);
void spmd_go_free(uintptr_t p);

#endif /* SPMD_GO_CAPI_HELPERS_H */
