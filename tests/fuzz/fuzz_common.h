// What every fuzz target shares: a property check that stops the run (so
// libFuzzer keeps the input as a reproducer), the rules every failed call
// must keep, and a reader that turns the fuzzer's bytes into choices.
#pragma once

#include <spmd/spmd.h>

#include <cctype>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace fuzz {

[[noreturn]] inline void violated(const char *file, int line, const char *cond, const char *fmt,
                                  ...) {
  std::fprintf(stderr, "\n==== property violated at %s:%d: %s\n     ", file, line, cond);
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "\n     last error: \"%s\"\n", spmd_last_error());
  std::fflush(stderr);
  std::abort();  // libFuzzer reports the crash and writes the input out
}

// FUZZ_CHECK(cond, "printf format", args...): cond must hold.
#define FUZZ_CHECK(cond, ...)                                             \
  do {                                                                    \
    if (!(cond)) ::fuzz::violated(__FILE__, __LINE__, #cond, __VA_ARGS__); \
  } while (0)

// A distinct address per handle type that no call may write into an
// output on failure ("outputs are written only on SPMD_OK").
template <typename T>
T *sentinel() {
  static unsigned char cell[16];
  return reinterpret_cast<T *>(cell);
}

inline bool contains(const std::string &hay, const std::string &needle) {
  return hay.find(needle) != std::string::npos;
}

// Every status is one of the enumerators, and SPMD_ERR_INTERNAL means "a bug
// in libspmd" (status.h), so no input may produce it.
inline void check_status(spmd_status st, const char *call) {
  FUZZ_CHECK(st >= SPMD_OK && st <= SPMD_ERR_INTERNAL, "%s returned %d, not a spmd_status", call,
             (int)st);
  FUZZ_CHECK(st != SPMD_ERR_INTERNAL, "%s returned SPMD_ERR_INTERNAL", call);
}

// A failed call leaves a message that starts with the function's name and
// names the argument (`needle`; empty: only the name is checked).
inline void check_failure(spmd_status st, const char *function, const std::string &needle) {
  check_status(st, function);
  FUZZ_CHECK(st != SPMD_OK, "%s succeeded where it must fail", function);
  const std::string msg = spmd_last_error();
  const std::string head = std::string(function) + ": ";
  FUZZ_CHECK(msg.compare(0, head.size(), head) == 0 && msg.size() > head.size(),
             "the message of a failed %s does not start with \"%s\"", function, head.c_str());
  FUZZ_CHECK(needle.empty() || contains(msg, needle),
             "the message of a failed %s does not name \"%s\"", function, needle.c_str());
}

// The result of a to_string-like call, freed here.
inline std::string take_string(char *s) {
  std::string out = s ? s : "";
  spmd_string_free(s);
  return out;
}

// What the fuzzer's bytes mean: small choices from the front, text from
// the rest. Reading past the end gives zeros, so every input is valid.
class Bytes {
 public:
  Bytes(const uint8_t *data, size_t size) : p_(data), n_(size) {}
  uint8_t byte() { return n_ ? (--n_, *p_++) : 0; }
  // A value in [0, n).
  unsigned pick(unsigned n) { return n ? byte() % n : 0; }
  bool flag() { return byte() & 1; }
  // Text up to the next '\n' (consumed) or the end.
  std::string line() {
    std::string s;
    while (n_ && *p_ != '\n') s += static_cast<char>(byte());
    if (n_) byte();
    return s;
  }
  // The rest as text.
  std::string rest() {
    std::string s(reinterpret_cast<const char *>(p_), n_);
    p_ += n_;
    n_ = 0;
    return s;
  }
  bool empty() const { return n_ == 0; }

 private:
  const uint8_t *p_;
  size_t n_;
};

// Text as the C API sees it: a C string ends at the first NUL.
inline std::string c_text(const std::string &s) { return std::string(s.c_str()); }

// An axis name as meshes and specs accept it: letters, digits and '_', not
// starting with a digit, and not None.
inline bool valid_axis_name(const std::string &s) {
  if (s.empty() || s == "None") return false;
  if (!(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

// A spec's dimensions, read through the accessors.
using Dims = std::vector<std::vector<std::string>>;

inline Dims spec_dims(const spmd_spec *spec) {
  Dims dims;
  size_t ndim = 0;
  FUZZ_CHECK(spmd_spec_ndim(spec, &ndim) == SPMD_OK, "spmd_spec_ndim failed on a live spec");
  for (size_t d = 0; d < ndim; ++d) {
    size_t n = 0;
    FUZZ_CHECK(spmd_spec_dim_size(spec, d, &n) == SPMD_OK, "spmd_spec_dim_size(%zu) failed", d);
    std::vector<std::string> axes;
    for (size_t i = 0; i < n; ++i) {
      const char *name = nullptr;
      FUZZ_CHECK(spmd_spec_dim_axis(spec, d, i, &name) == SPMD_OK && name != nullptr,
                 "spmd_spec_dim_axis(%zu, %zu) failed", d, i);
      axes.emplace_back(name);
    }
    dims.push_back(std::move(axes));
  }
  return dims;
}

inline std::string spec_string(const spmd_spec *spec) {
  char *s = nullptr;
  FUZZ_CHECK(spmd_spec_to_string(spec, &s) == SPMD_OK && s != nullptr,
             "spmd_spec_to_string failed on a live spec");
  return take_string(s);
}

inline std::string sharding_string(const spmd_sharding *sharding) {
  char *s = nullptr;
  FUZZ_CHECK(spmd_sharding_to_string(sharding, &s) == SPMD_OK && s != nullptr,
             "spmd_sharding_to_string failed on a live sharding");
  return take_string(s);
}

inline bool specs_equal(const spmd_spec *a, const spmd_spec *b) {
  int eq = -1;
  FUZZ_CHECK(spmd_spec_equal(a, b, &eq) == SPMD_OK, "spmd_spec_equal failed on live specs");
  FUZZ_CHECK(eq == 0 || eq == 1, "spmd_spec_equal gave %d", eq);
  return eq == 1;
}

inline bool shardings_equal(const spmd_sharding *a, const spmd_sharding *b) {
  int eq = -1;
  FUZZ_CHECK(spmd_sharding_equal(a, b, &eq) == SPMD_OK,
             "spmd_sharding_equal failed on live shardings");
  FUZZ_CHECK(eq == 0 || eq == 1, "spmd_sharding_equal gave %d", eq);
  return eq == 1;
}

// A CPU runtime of `devices` devices and one worker thread, for the whole
// run (the fuzzers' fixed meshes live on it).
inline spmd_runtime *make_runtime(int devices, spmd_platform platform = SPMD_PLATFORM_CPU) {
  spmd_runtime_options o = SPMD_RUNTIME_OPTIONS_INIT;
  o.platform = platform;
  o.cpu_device_count = devices;
  o.worker_threads = 1;
  spmd_runtime *rt = nullptr;
  if (spmd_runtime_create(&o, &rt) != SPMD_OK) {
    std::fprintf(stderr, "cannot create a runtime: %s\n", spmd_last_error());
    std::abort();
  }
  return rt;
}

struct MeshDef {
  std::vector<int64_t> shape;
  std::vector<const char *> names;
  std::vector<int> devices;  // empty: 0, 1, ... in order
};

inline spmd_mesh *make_mesh(spmd_runtime *rt, const MeshDef &def) {
  spmd_mesh *m = nullptr;
  if (spmd_mesh_create(rt, def.shape.size(), def.shape.data(), def.names.data(),
                       def.devices.empty() ? nullptr : def.devices.data(), &m) != SPMD_OK) {
    std::fprintf(stderr, "cannot create a mesh: %s\n", spmd_last_error());
    std::abort();
  }
  return m;
}

}  // namespace fuzz
