// Platforms that live in plugins (backend/plugin.hpp): found, opened once
// and asked for a backend.
#pragma once

#include <memory>

#include "backend/plugin.hpp"

namespace spmd {

// The backend of platform `name` ("cuda") from its plugin,
// libspmd_<name>.so: the file $SPMD_<NAME>_PLUGIN names, else the one beside
// this library, else the one the dynamic loader finds. Throws UNSUPPORTED
// saying why the platform is unavailable (the plugin missing or refused,
// no driver, no device), with the plugin's own status for other failures.
std::shared_ptr<Backend> load_plugin_backend(const char *name, const PluginConfig &config);

}  // namespace spmd
