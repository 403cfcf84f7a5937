// What lives in plugins (base/plugin.hpp): platforms and the transport
// between processes, each found, opened once and asked for its object.
#pragma once

#include <memory>

#include "backend/plugin.hpp"
#include "dist/plugin.hpp"

namespace spmd {

// The backend of platform `name` ("cuda") from its plugin,
// libspmd_<name>.so: the file $SPMD_<NAME>_PLUGIN names, else the one beside
// this library, else the one the dynamic loader finds. Throws UNSUPPORTED
// saying why the platform is unavailable (the plugin missing or refused,
// no driver, no device), with the plugin's own status for other failures.
std::shared_ptr<Backend> load_plugin_backend(const char *name, const PluginConfig &config);

// The transport `name` ("mpi") from its plugin, found as above
// ($SPMD_MPI_PLUGIN). Throws UNSUPPORTED saying why it is unavailable, with
// the plugin's own status for other failures (a timeout, a bad
// communicator).
std::shared_ptr<dist::Transport> load_plugin_transport(const char *name,
                                                       const dist::TransportConfig &config);

}  // namespace spmd
