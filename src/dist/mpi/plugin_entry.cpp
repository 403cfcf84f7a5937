// The MPI plugin's one export (base/plugin.hpp): makes the transport, or
// says why it cannot.
#include "dist/mpi/transport.hpp"
#include "dist/plugin.hpp"

extern "C" __attribute__((visibility("default"))) int spmd_plugin_create_mpi(
    const char *interface, int kind, const void *config, void **out, char *message,
    size_t message_size) {
  using spmd::dist::Transport;
  using spmd::dist::TransportConfig;
  return spmd::serve_plugin_create<Transport, TransportConfig>(
      "the MPI plugin", spmd::PluginKind::Transport, interface, kind, config, out, message,
      message_size, [](const TransportConfig &c) -> Transport * {
        return spmd::dist::mpi::MpiTransport::create(c).release();
      });
}
