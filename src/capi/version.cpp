#include "spmd/version.h"

extern "C" {
unsigned spmd_version(void) { return SPMD_VERSION_NUMBER; }
const char *spmd_version_string(void) { return SPMD_VERSION_STRING; }
}
