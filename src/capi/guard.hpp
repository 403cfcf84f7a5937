// The boundary between C++ and C: every entry point runs its body inside
// guard(), which turns exceptions into a status code and stores the message
// for spmd_last_error(). Nothing throws across the ABI.
#pragma once

#include <algorithm>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "spmd/status.h"

namespace spmd::capi {

// Records "function: message detail" for spmd_last_error(); never
// allocates, so it works when memory has run out.
void set_last_error(const char *function, const char *message, const char *detail = "") noexcept;

template <typename F>
spmd_status guard(const char *function, F &&body) noexcept {
  try {
    body();
    return SPMD_OK;
  } catch (const Error &e) {
    set_last_error(function, e.what());
    return e.status();
  } catch (const std::bad_alloc &) {
    set_last_error(function, "out of memory");
    return SPMD_ERR_OUT_OF_MEMORY;
  } catch (const std::exception &e) {
    set_last_error(function, "internal error: ", e.what());
    return SPMD_ERR_INTERNAL;
  } catch (...) {
    set_last_error(function, "internal error: unknown exception");
    return SPMD_ERR_INTERNAL;
  }
}

// Output pointers must not be NULL.
template <typename T>
T *out_arg(T *out, const char *arg = "out") {
  if (out == nullptr) invalid(arg, ": NULL output pointer");
  return out;
}

// The one way a result leaves an entry point: the output pointer is checked
// before the result is made, so a call rejected for a NULL output makes (and
// leaks) nothing.
template <typename T, typename Make>
void produce(T *out, Make &&make, const char *arg = "out") {
  out_arg(out, arg);
  *out = make();
}

// Hands `values` to a caller's array of `capacity` (and their count to
// *count when count is not NULL): the one shape of every call that fills
// a caller's array. NULL with a capacity of 0 asks for the count alone; a
// capacity too small is SPMD_ERR_OUT_OF_RANGE, with the count still
// written so the caller can size the array.
void write_values(const std::vector<int64_t> &values, size_t capacity, int64_t *out,
                  size_t *count, const char *what);

// A copy the caller frees with spmd_string_free.
char *to_c_string(const std::string &s);

// No public struct will ever grow past this: a struct_size above it is an
// uninitialised field, not a newer caller, and is never used to read or
// write the caller's memory.
inline constexpr size_t kMaxStructSize = 1024;

// Checks the struct_size a caller set in a struct it passes.
inline size_t checked_struct_size(size_t size, const char *arg) {
  if (size < sizeof(size_t))
    invalid(arg, "->struct_size: ", size, " is too small; initialise the struct with its _INIT "
            "macro or _init() function");
  if (size > kMaxStructSize)
    invalid(arg, "->struct_size: ", size, " looks uninitialised (no libspmd struct is larger "
            "than ", kMaxStructSize, " bytes); initialise the struct with its _INIT macro or "
            "_init() function");
  return size;
}

// spmd_X_init(s, size): fills a caller's struct of `size` bytes (the sizeof
// it was compiled with) with T's defaults, zeroing what this library does
// not know, and sets struct_size to `size`; never writes past `size`.
template <typename T>
void init_struct(T *s, size_t size, const T &defaults, const char *arg) {
  out_arg(s, arg);
  if (size < sizeof(size_t))
    invalid("size: ", size, " is too small for any libspmd struct; pass sizeof *", arg);
  if (size > kMaxStructSize)
    invalid("size: ", size, " is larger than any libspmd struct (", kMaxStructSize,
            " bytes); pass sizeof *", arg);
  std::memset(static_cast<void *>(s), 0, size);
  std::memcpy(static_cast<void *>(s), &defaults, std::min(size, sizeof(T)));
  s->struct_size = size;
}

// Writes a result struct into the caller's: only the fields that fit in
// the caller's struct_size (an older caller gets the fields it knows, a
// newer one keeps its unknown tail), struct_size left as the caller set it.
// The caller's struct must hold at least `first_field_end` bytes (struct_size
// and the first field), or there is nothing to write.
template <typename T>
void write_result_struct(T *out, const T &value, size_t first_field_end, const char *arg,
                         const char *init_macro) {
  const size_t caller_size = checked_struct_size(out->struct_size, arg);
  if (caller_size < first_field_end)
    invalid(arg, "->struct_size: ", caller_size, " is too small to hold any field; initialise "
            "it with ", init_macro);
  std::memcpy(static_cast<void *>(out), &value, std::min(caller_size, sizeof(T)));
  out->struct_size = caller_size;
}

// Reads a caller's versioned options struct: missing trailing fields of an
// older (smaller) struct keep their defaults, a newer (larger) struct is
// accepted only if the fields this library does not know are all zero.
template <typename T>
T read_options(const T *given, const T &defaults, const char *arg) {
  T out = defaults;
  if (given == nullptr) return out;
  const size_t size = checked_struct_size(given->struct_size, arg);
  if (size > sizeof(T)) {
    const auto *tail = reinterpret_cast<const unsigned char *>(given) + sizeof(T);
    for (size_t i = 0; i < size - sizeof(T); ++i)
      if (tail[i] != 0)
        invalid(arg, "->struct_size: ", size, " is larger than this libspmd's ", sizeof(T),
                " and the fields it does not know are set; the caller was built against a newer "
                "libspmd");
  }
  std::memcpy(static_cast<void *>(&out), given, std::min(size, sizeof(T)));
  out.struct_size = sizeof(T);
  return out;
}

}  // namespace spmd::capi
