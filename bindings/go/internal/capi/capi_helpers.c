/* See capi_helpers.h. */
#include "capi_helpers.h"

#include <stdlib.h>
#include <string.h>

typedef struct spmd_go_error_record {
  int status;
  char message[]; /* NUL-terminated */
} spmd_go_error_record;

uintptr_t spmd_go_error_capture(spmd_status status) {
  if (status == SPMD_OK) return 0;
  const char *message = spmd_last_error();
  const size_t n = strlen(message);
  spmd_go_error_record *r = malloc(sizeof *r + n + 1);
  if (r == NULL) {
    /* No room for the record: the status alone, tagged in the low bit
     * (records are aligned, their low bit is 0). */
    return ((uintptr_t)status << 1) | 1u;
  }
  r->status = (int)status;
  memcpy(r->message, message, n + 1);
  /* The record owns the message now. */
  spmd_clear_error();
  return (uintptr_t)r;
}

int spmd_go_error_status(uintptr_t record) {
  if (record & 1u) return (int)(record >> 1);
  return ((const spmd_go_error_record *)record)->status;
}

const char *spmd_go_error_message(uintptr_t record) {
  if (record & 1u) return "(the message could not be copied: out of memory)";
  return ((const spmd_go_error_record *)record)->message;
}

void spmd_go_error_free(uintptr_t record) {
  if (!(record & 1u)) free((void *)record);
}

void spmd_go_take_string(char *string) { spmd_string_free(string); }

char **spmd_go_split_strings(const char *blob, size_t n, size_t *count) {
  size_t k = 0;
  for (size_t i = 0; i < n; ++i) k += blob[i] == '\0';
  /* k strings, then NULLs: enough for any count libspmd could read beside
   * a list of at most SPMD_MAX_NDIM names, and one terminator. */
  const size_t slots = k + SPMD_MAX_NDIM + 1;
  char **out = malloc(slots * sizeof *out + n + 1);
  if (out == NULL) {
    *count = 0;
    return NULL;
  }
  char *copy = (char *)(out + slots);
  memcpy(copy, blob, n);
  copy[n] = '\0';
  size_t j = 0;
  for (size_t i = 0; i < n && j < k; ++j) {
    out[j] = copy + i;
    i += strlen(copy + i) + 1;
  }
  for (; j < slots; ++j) out[j] = NULL;
  *count = k;
  return out;
}

uintptr_t spmd_go_copy_int64s(const int64_t *values, size_t n) {
  int64_t *p = malloc((n ? n : 1) * sizeof *p);
  if (p != NULL && n) memcpy(p, values, n * sizeof *p);
  return (uintptr_t)p;
}

void spmd_go_free(uintptr_t p) { free((void *)p); }
