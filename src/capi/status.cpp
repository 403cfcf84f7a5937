// spmd_status_string, spmd_last_error and the strings libspmd hands out.
#include <cstdlib>
#include <cstring>
#include <string>

#include "capi/guard.hpp"
#include "base/raw_enum.hpp"
#include "spmd/status.h"

namespace spmd::capi {

namespace {
thread_local std::string t_last_error;
}

void set_last_error(const char *function, const std::string &message) {
  t_last_error = std::string(function) + ": " + message;
}

char *to_c_string(const std::string &s) {
  char *p = static_cast<char *>(std::malloc(s.size() + 1));
  if (p == nullptr) throw std::bad_alloc();
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

const char *spmd_last_error(void) { return spmd::capi::t_last_error.c_str(); }

void spmd_clear_error(void) { spmd::capi::t_last_error.clear(); }

void spmd_string_free(char *string) { std::free(string); }

}  // extern "C"
