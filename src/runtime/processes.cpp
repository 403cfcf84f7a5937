#include "runtime/processes.hpp"

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "base/error.hpp"
#include "base/plugin.hpp"
#include "base/raw_enum.hpp"
#include "dist/plugin.hpp"
#include "runtime/plugin_loader.hpp"

namespace spmd {

namespace {

constexpr int kDefaultTimeoutSeconds = 300;  // jax.distributed.initialize's
constexpr int kMaxTimeoutSeconds = 86400;

// What each process sends the others when the runtime is made. Fixed-size
// and trivially copyable, so it crosses as bytes.
struct Description {
  uint64_t interface_hash;  // of kPluginInterface: the same libspmd everywhere
  int32_t platform;
  int32_t local_devices;
  int64_t memory_bytes;
  int32_t compute_capability;
  int32_t exact_reductions;
  char kind[56];
};
static_assert(std::is_trivially_copyable_v<Description>);

uint64_t fnv1a(const char *text) {
  uint64_t h = 1469598103934665603ull;
  for (const char *p = text; *p; ++p) h = (h ^ static_cast<unsigned char>(*p)) * 1099511628211ull;
  return h;
}

const char *platform_name(int platform) {
  switch (platform) {
    case SPMD_PLATFORM_CPU:
      return "cpu";
    case SPMD_PLATFORM_CUDA:
      return "cuda";
    case SPMD_PLATFORM_SIM:
      return "sim";
    default:
      return "an unknown platform";
  }
}

Description describe(const Backend &local) {
  Description d{};
  d.interface_hash = fnv1a(kPluginInterface);
  d.platform = local.platform();
  d.local_devices = local.device_count();
  if (d.local_devices > 0) {
    d.memory_bytes = local.device_memory_bytes(0);
    d.compute_capability = local.device_compute_capability(0);
    std::snprintf(d.kind, sizeof d.kind, "%s", local.device_kind(0));
  }
  return d;
}

// options->exact_reductions, else $SPMD_EXACT_REDUCTIONS ("0" or "1").
bool exact_reductions_from(const spmd_runtime_options &o) {
  if (o.exact_reductions != 0) return true;
  const char *env = std::getenv("SPMD_EXACT_REDUCTIONS");
  if (env == nullptr || *env == '\0' || std::strcmp(env, "0") == 0) return false;
  if (std::strcmp(env, "1") == 0) return true;
  invalid("SPMD_EXACT_REDUCTIONS='", env, "': expected 0 or 1");
}

// $SPMD_DISTRIBUTED_TIMEOUT in seconds: how long the processes wait for
// each other while the runtime is made.
std::chrono::seconds meeting_timeout() {
  const char *env = std::getenv("SPMD_DISTRIBUTED_TIMEOUT");
  if (env == nullptr || *env == '\0') return std::chrono::seconds(kDefaultTimeoutSeconds);
  char *end = nullptr;
  const long s = std::strtol(env, &end, 10);
  if (*end != '\0' || s < 1 || s > kMaxTimeoutSeconds)
    invalid("SPMD_DISTRIBUTED_TIMEOUT='", env, "': expected seconds, from 1 to ",
            kMaxTimeoutSeconds);
  return std::chrono::seconds(s);
}

// Fails unless every process gave the same `field`, listing each one's.
template <typename Field, typename Say>
void require_alike(const std::vector<Description> &all, spmd_status status, const char *rule,
                   Field field, Say say) {
  bool alike = true;
  for (const auto &d : all) alike = alike && field(d) == field(all[0]);
  if (alike) return;
  std::string each;
  for (size_t p = 0; p < all.size(); ++p)
    each += cat(p == 0 ? "" : p + 1 == all.size() ? " and " : ", ", "process ", p, " ",
                say(all[p]));
  fail(status, rule, ": ", each);
}

}  // namespace

bool distributed_from(const spmd_runtime_options &o) {
  bool distributed = false;
  const int given = raw_enum(o.distributed);
  if (given == SPMD_DISTRIBUTED_MPI) {
    distributed = true;
  } else if (given != SPMD_DISTRIBUTED_NONE) {
    if (given != SPMD_DISTRIBUTED_DEFAULT)
      invalid("options->distributed: ", given,
              " is not a spmd_distributed (SPMD_DISTRIBUTED_DEFAULT, _NONE or _MPI)");
    const char *env = std::getenv("SPMD_DISTRIBUTED");
    if (env != nullptr && std::strcmp(env, "mpi") == 0)
      distributed = true;
    else if (env != nullptr && *env != '\0' && std::strcmp(env, "none") != 0)
      invalid("SPMD_DISTRIBUTED='", env, "': expected 'mpi' or 'none'");
  }
  if (o.mpi_comm_given != 0 && !distributed)
    invalid("options->mpi_comm_given: a communicator is given to a runtime of one process; set "
            "options->distributed to SPMD_DISTRIBUTED_MPI (spmd_runtime_create_mpi does)");
  return distributed;
}

Processes single_process(const Backend &local) {
  Processes p;
  p.local_devices = local.device_count();
  return p;
}

Processes join_processes(const spmd_runtime_options &o, const Backend &local) {
  const auto timeout = meeting_timeout();
  const dist::Deadline deadline = dist::Clock::now() + timeout;
  dist::TransportConfig config;
  config.comm_given = o.mpi_comm_given != 0;
  config.comm = o.mpi_comm;
  config.deadline = deadline;
  Processes p;
  std::vector<Description> all;
  try {
    p.transport = load_plugin_transport("mpi", config);
    Description mine = describe(local);
    mine.exact_reductions = exact_reductions_from(o) ? 1 : 0;
    const std::vector<std::byte> gathered =
        p.transport->all_gather(std::as_bytes(std::span(&mine, 1)), deadline);
    all.resize(gathered.size() / sizeof(Description));
    std::memcpy(all.data(), gathered.data(), all.size() * sizeof(Description));
  } catch (const Error &e) {
    if (e.status() == SPMD_ERR_TIMEOUT)
      fail(e.status(), "distributed over MPI: ", e.what(),
           "; every process must create its runtime within SPMD_DISTRIBUTED_TIMEOUT (",
           timeout.count(), " s)");
    fail(e.status(), "distributed over MPI: ", e.what());
  }
  require_alike(
      all, SPMD_ERR_UNSUPPORTED, "every process must run the same libspmd",
      [](const Description &d) { return d.interface_hash; },
      [](const Description &d) { return cat("runs libspmd interface #", d.interface_hash); });
  require_alike(
      all, SPMD_ERR_INVALID_ARGUMENT, "every process must run the same platform",
      [](const Description &d) { return d.platform; },
      [](const Description &d) { return cat("runs ", platform_name(d.platform)); });
  require_alike(
      all, SPMD_ERR_INVALID_ARGUMENT, "every process must have the same number of local devices",
      [](const Description &d) { return d.local_devices; },
      [](const Description &d) { return cat("has ", d.local_devices); });
  require_alike(
      all, SPMD_ERR_INVALID_ARGUMENT, "every process must ask for exact reductions alike",
      [](const Description &d) { return d.exact_reductions; },
      [](const Description &d) { return d.exact_reductions ? "asks for them" : "does not"; });
  p.exact_reductions = all[0].exact_reductions != 0;
  p.index = p.transport->rank();
  p.count = p.transport->size();
  p.local_devices = local.device_count();
  if (static_cast<int64_t>(p.count) * p.local_devices > INT_MAX)
    invalid("distributed over MPI: ", p.count, " processes of ", p.local_devices,
            " devices are more devices than a runtime numbers (", INT_MAX, ")");
  for (const Description &d : all) {
    ProcessDevices described;
    described.platform = static_cast<spmd_platform>(d.platform);
    described.local_devices = d.local_devices;
    described.kind.assign(d.kind, strnlen(d.kind, sizeof d.kind));
    described.memory_bytes = d.memory_bytes;
    described.compute_capability = d.compute_capability;
    p.described.push_back(std::move(described));
  }
  return p;
}

}  // namespace spmd
