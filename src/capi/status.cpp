// spmd_status_string, spmd_last_error and the strings libspmd hands out.
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "capi/guard.hpp"
#include "base/raw_enum.hpp"
#include "spmd/status.h"

namespace spmd::capi {

namespace {
// A fixed buffer: recording an error never allocates, so it cannot fail
// even when the error is that memory ran out. Longer messages are cut.
constexpr size_t kLastErrorBytes = 4096;
thread_local char t_last_error[kLastErrorBytes];

void append(size_t &used, const char *text, size_t n) {
  const size_t room = kLastErrorBytes - 1 - used;
  const size_t take = n < room ? n : room;
  std::memcpy(t_last_error + used, text, take);
  used += take;
}
}  // namespace

void set_last_error(const char *function, const char *message, const char *detail) noexcept {
  size_t used = 0;
  append(used, function, std::strlen(function));
  append(used, ": ", 2);
  append(used, message, std::strlen(message));
  append(used, detail, std::strlen(detail));
  t_last_error[used] = '\0';
}

void write_values(const std::vector<int64_t> &values, size_t capacity, int64_t *out,
                  size_t *count, const char *what) {
  if (count) *count = values.size();
  if (out == nullptr && capacity == 0) return;  // a query for the count alone
  if (capacity < values.size())
    fail(SPMD_ERR_OUT_OF_RANGE, "capacity: ", capacity, " values, but the ", what, " has ",
         values.size(), "; pass a capacity of at least ", values.size());
  if (!values.empty() && out == nullptr) invalid(what, ": NULL array for ", values.size(), " values");
  std::copy(values.begin(), values.end(), out);
}

char *to_c_string(const std::string &s) {
  // operator new, as all of libspmd's memory; spmd_string_free deletes it.
  char *p = new char[s.size() + 1];
  std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

}  // namespace spmd::capi

extern "C" {

const char *spmd_status_string(spmd_status status) {
  const int code = spmd::raw_enum(status);
  if (code < SPMD_OK || code > SPMD_ERR_INTERNAL) return "unknown status";
  switch (status) {
    case SPMD_OK: return "ok";
    case SPMD_ERR_INVALID_ARGUMENT: return "invalid argument";
    case SPMD_ERR_OUT_OF_RANGE: return "out of range";
    case SPMD_ERR_OUT_OF_MEMORY: return "out of memory";
    case SPMD_ERR_UNSUPPORTED: return "unsupported";
    case SPMD_ERR_TIMEOUT: return "timeout";
    case SPMD_ERR_CALLBACK: return "callback failed";
    case SPMD_ERR_INTERNAL: return "internal error";
  }
  return "unknown status";
}

const char *spmd_last_error(void) { return spmd::capi::t_last_error; }

void spmd_clear_error(void) { spmd::capi::t_last_error[0] = '\0'; }

void spmd_string_free(char *string) { delete[] string; }

}  // extern "C"
