// The one entry point every plugin exports, whatever it makes: libspmd_cuda.so
// a platform (backend/plugin.hpp), libspmd_mpi.so a transport between
// processes (dist/plugin.hpp). runtime/plugin_loader.cpp opens them at run
// time, as PJRT opens its plugins, so that libspmd.so needs none of their
// libraries (CUDA, MPI) and says why one is unavailable.
//
// A plugin is built from the same tree by the same compiler as libspmd: the
// object it returns is called through its virtual functions, and the
// exceptions it throws (spmd::Error) are caught by libspmd as its own
// (libstdc++ matches exception types across libraries by name). The
// interface string guards that assumption: it carries the version and a
// digest of the headers that define the boundary (src/CMakeLists.txt), and
// a plugin built from other headers is refused.
#pragma once

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>

#include "base/error.hpp"

namespace spmd {

// What libspmd asks a plugin to make. The values cross the boundary as ints.
enum class PluginKind : int {
  Platform = 1,   // a Backend, configured by a PluginConfig (backend/plugin.hpp)
  Transport = 2,  // a dist::Transport, configured by a TransportConfig (dist/plugin.hpp)
};

// Defined by the build for libspmd and its plugins alike.
#ifndef SPMD_PLUGIN_INTERFACE
#error "SPMD_PLUGIN_INTERFACE is defined by the build (src/CMakeLists.txt)"
#endif
inline constexpr const char *kPluginInterface = SPMD_PLUGIN_INTERFACE;

// The entry point, exported unmangled as spmd_plugin_create_<name>.
// `interface` is the caller's kPluginInterface (a plugin refuses another);
// `kind` the PluginKind asked for; `config` that kind's configuration, a
// struct whose first field is its size_t struct_size. On success *out is
// the new object as a pointer to the kind's base class, converted to void*,
// owned by the caller. Returns an spmd_status; on failure writes a message
// (NUL-terminated, cut to message_size) and leaves *out untouched.
extern "C" {
typedef int (*PluginCreateFn)(const char *interface, int kind, const void *config, void **out,
                              char *message, size_t message_size);
}

// The body of every entry point: checks the interface, the kind and the
// configuration, then returns make(config), a new Base; every failure
// becomes a status and a message naming `plugin` ("the CUDA plugin").
template <typename Base, typename Config, typename Make>
int serve_plugin_create(const char *plugin, PluginKind serves, const char *interface, int kind,
                        const void *config, void **out, char *message, size_t message_size,
                        Make &&make) noexcept {
  // Never allocates, so even a failure to allocate is reported.
  auto refuse = [&](spmd_status status, const char *text) {
    if (message && message_size) std::snprintf(message, message_size, "%s", text);
    return static_cast<int>(status);
  };
  if (interface == nullptr || std::strcmp(interface, kPluginInterface) != 0) {
    char text[512];
    std::snprintf(text, sizeof text,
                  "%s was built from another libspmd (its interface %s, the library's %s): use "
                  "the plugin built with this libspmd",
                  plugin, kPluginInterface, interface ? interface : "(none)");
    return refuse(SPMD_ERR_UNSUPPORTED, text);
  }
  if (kind != static_cast<int>(serves)) {
    char text[256];
    std::snprintf(text, sizeof text, "%s makes objects of kind %d, not %d", plugin,
                  static_cast<int>(serves), kind);
    return refuse(SPMD_ERR_INTERNAL, text);
  }
  if (config == nullptr || out == nullptr ||
      static_cast<const Config *>(config)->struct_size < sizeof(Config)) {
    char text[256];
    std::snprintf(text, sizeof text, "%s was called without its configuration", plugin);
    return refuse(SPMD_ERR_INTERNAL, text);
  }
  try {
    Base *made = make(*static_cast<const Config *>(config));
    *out = static_cast<void *>(made);
    return SPMD_OK;
  } catch (const Error &e) {
    return refuse(e.status(), e.what());
  } catch (const std::bad_alloc &) {
    char text[256];
    std::snprintf(text, sizeof text, "out of memory while starting %s", plugin);
    return refuse(SPMD_ERR_OUT_OF_MEMORY, text);
  } catch (const std::exception &e) {
    return refuse(SPMD_ERR_INTERNAL, e.what());
  }
}

}  // namespace spmd
