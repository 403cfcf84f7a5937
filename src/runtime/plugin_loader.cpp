#include "runtime/plugin_loader.hpp"

#include <dlfcn.h>

#include <cctype>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "base/error.hpp"

namespace spmd {

namespace {

// Where this library's own file lies, for the plugin beside it.
std::string own_directory() {
  Dl_info info;
  if (dladdr(reinterpret_cast<const void *>(&load_plugin_backend), &info) == 0 ||
      info.dli_fname == nullptr)
    return {};
  std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

// What each plugin is, for the message saying it is unavailable: whether
// this libspmd was built with it, and how to build it.
struct Known {
  const char *name;
  const char *unavailable;  // "the CUDA platform"
  bool built;
  const char *how_to_build;
};

constexpr Known kKnown[] = {
#ifdef SPMD_HAVE_CUDA
    {"cuda", "the CUDA platform", true, ""},
#else
    {"cuda", "the CUDA platform", false,
     "configure with -DSPMD_WITH_CUDA=ON where the CUDA Toolkit is installed"},
#endif
#ifdef SPMD_HAVE_MPI
    {"mpi", "MPI", true, ""},
#else
    {"mpi", "MPI", false, "configure with -DSPMD_WITH_MPI=ON where MPI is installed"},
#endif
};

const Known *known(const std::string &name) {
  for (const Known &k : kKnown)
    if (name == k.name) return &k;
  return nullptr;
}

// Plugins stay loaded for the life of the process: their code may run as
// long as any object they made is alive.
struct Opened {
  void *handle = nullptr;
  PluginCreateFn create = nullptr;
  std::string path;
};

Opened open_plugin(const std::string &name, const char *role) {
  static std::mutex mu;
  static std::map<std::string, Opened> opened;
  std::lock_guard<std::mutex> lock(mu);
  auto it = opened.find(name);
  if (it != opened.end()) return it->second;

  std::string upper = name;
  for (char &c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const std::string file = "libspmd_" + name + ".so";
  std::vector<std::string> candidates;
  const std::string env = "SPMD_" + upper + "_PLUGIN";
  if (const char *given = std::getenv(env.c_str()); given != nullptr && *given != '\0') {
    candidates.push_back(given);
  } else {
    const std::string dir = own_directory();
    if (!dir.empty()) candidates.push_back(dir + file);
    candidates.push_back(file);
  }
  std::string tried;
  for (const auto &path : candidates) {
    dlerror();
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char *why = dlerror();
      tried += cat(tried.empty() ? "" : "; ", path, ": ", why ? why : "not loadable");
      continue;
    }
    const std::string symbol = "spmd_plugin_create_" + name;
    auto create = reinterpret_cast<PluginCreateFn>(dlsym(handle, symbol.c_str()));
    if (create == nullptr) {
      tried += cat(tried.empty() ? "" : "; ", path, ": no ", symbol, " in it");
      dlclose(handle);
      continue;
    }
    Opened o{handle, create, path};
    opened.emplace(name, o);
    return o;
  }
  const Known *k = known(name);
  fail(SPMD_ERR_UNSUPPORTED, role ? role : "", role ? ": " : "",
       k ? k->unavailable : name.c_str(), " is unavailable: its plugin ", file, " could not be loaded (", tried, ")",
       k && !k->built ? "; this libspmd was built without it (" : "",
       k && !k->built ? k->how_to_build : "", k && !k->built ? ")" : "");
}

// The object of kind `kind` from plugin `name`, made with `config`. `role`
// starts the message saying the plugin is unavailable ("platform"), unless
// null, when the caller says what asked for it.
void *create_from_plugin(const char *name, const char *role, PluginKind kind,
                         const void *config) {
  const Opened plugin = open_plugin(name, role);
  void *made = nullptr;
  char message[1024] = {0};
  const int status = plugin.create(kPluginInterface, static_cast<int>(kind), config, &made,
                                   message, sizeof message);
  if (status != SPMD_OK || made == nullptr)
    fail(status == SPMD_OK ? SPMD_ERR_INTERNAL : static_cast<spmd_status>(status),
         message[0] ? message : "the plugin made nothing", " (plugin ", plugin.path, ")");
  return made;
}

}  // namespace

std::shared_ptr<Backend> load_plugin_backend(const char *name, const PluginConfig &config) {
  return std::shared_ptr<Backend>(
      static_cast<Backend *>(create_from_plugin(name, "platform", PluginKind::Platform, &config)));
}

std::shared_ptr<dist::Transport> load_plugin_transport(const char *name,
                                                       const dist::TransportConfig &config) {
  return std::shared_ptr<dist::Transport>(static_cast<dist::Transport *>(
      create_from_plugin(name, nullptr, PluginKind::Transport, &config)));
}

}  // namespace spmd
