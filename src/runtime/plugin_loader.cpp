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

// Plugins stay loaded for the life of the process: their code may run as
// long as any backend, event or buffer they made is alive.
struct Opened {
  void *handle = nullptr;
  PluginCreateFn create = nullptr;
  std::string path;
};

Opened open_plugin(const std::string &name) {
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
#ifdef SPMD_HAVE_CUDA
  const char *built = "";
#else
  const char *built =
      "; this libspmd was built without it (configure with -DSPMD_WITH_CUDA=ON where the CUDA "
      "Toolkit is installed)";
#endif
  fail(SPMD_ERR_UNSUPPORTED, "platform: the ", upper, " platform is unavailable: its plugin ",
       file, " could not be loaded (", tried, ")", name == "cuda" ? built : "");
}

}  // namespace

std::shared_ptr<Backend> load_plugin_backend(const char *name, const PluginConfig &config) {
  const Opened plugin = open_plugin(name);
  Backend *backend = nullptr;
  char message[1024] = {0};
  const int status = plugin.create(kPluginInterface, &config, &backend, message, sizeof message);
  if (status != SPMD_OK || backend == nullptr)
    fail(status == SPMD_OK ? SPMD_ERR_INTERNAL : static_cast<spmd_status>(status),
         message[0] ? message : "the plugin made no backend", " (plugin ", plugin.path, ")");
  return std::shared_ptr<Backend>(backend);
}

}  // namespace spmd
