/* Preloaded into the MPI tests of sanitizer builds: dlclose does nothing,
 * so the components OpenMPI unloads in MPI_Finalize stay mapped until exit
 * and LeakSanitizer can name the library of memory they kept (suppressed
 * by lsan-openmpi.supp) instead of reporting an "<unknown module>". */
int dlclose(void *handle);

int dlclose(void *handle) {
  (void)handle;
  return 0;
}
