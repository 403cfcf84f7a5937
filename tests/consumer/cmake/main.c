/* Links libspmd through its CMake package and checks that the headers, the
 * library and the package agree on the version. */
#include <stdio.h>
#include <string.h>

#include <spmd/spmd.h>

int main(void) {
  if (strcmp(FOUND_VERSION, SPMD_VERSION_STRING) != 0 ||
      strcmp(spmd_version_string(), SPMD_VERSION_STRING) != 0 ||
      spmd_version() != SPMD_VERSION_NUMBER) {
    fprintf(stderr, "version mismatch: package %s, headers %s, library %s\n",
            FOUND_VERSION, SPMD_VERSION_STRING, spmd_version_string());
    return 1;
  }
  spmd_runtime_options options = SPMD_RUNTIME_OPTIONS_INIT;
  options.cpu_device_count = 4;
  spmd_runtime *runtime = NULL;
  spmd_mesh *mesh = NULL;
  char *text = NULL;
  const int64_t shape[1] = {4};
  const char *const axes[1] = {"x"};
  if (spmd_runtime_create(&options, &runtime) != SPMD_OK ||
      spmd_mesh_create(runtime, 1, shape, axes, NULL, &mesh) != SPMD_OK ||
      spmd_mesh_to_string(mesh, &text) != SPMD_OK) {
    fprintf(stderr, "libspmd: %s\n", spmd_last_error());
    return 1;
  }
  printf("consumer of libspmd %s: %s\n", spmd_version_string(), text);
  spmd_string_free(text);
  spmd_mesh_destroy(mesh);
  spmd_runtime_destroy(runtime);
  return 0;
}
