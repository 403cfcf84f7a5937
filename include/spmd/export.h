/* libspmd: the one visibility macro every public declaration carries. */
#ifndef SPMD_EXPORT_H
#define SPMD_EXPORT_H

#if defined(_WIN32)
#  if defined(SPMD_BUILDING_LIBRARY)
#    define SPMD_API __declspec(dllexport)
#  else
#    define SPMD_API
#  endif
#elif defined(__GNUC__) && __GNUC__ >= 4
#  define SPMD_API __attribute__((visibility("default")))
#else
#  define SPMD_API
#endif

#ifdef __cplusplus
#  define SPMD_EXTERN_C_BEGIN extern "C" {
#  define SPMD_EXTERN_C_END }
#else
#  define SPMD_EXTERN_C_BEGIN
#  define SPMD_EXTERN_C_END
#endif

#endif /* SPMD_EXPORT_H */
