/**
 * @file
 * libspmd: the one visibility macro every public declaration carries.
 */
#ifndef SPMD_EXPORT_H
#define SPMD_EXPORT_H

/**
 * @def SPMD_API
 * Marks a function as part of libspmd's exported ABI: default visibility
 * with GCC and Clang, dllexport while building the library on Windows,
 * nothing elsewhere.
 */
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

/**
 * @def SPMD_EXTERN_C_BEGIN
 * Opens an extern "C" block when compiled as C++; empty in C.
 */
/**
 * @def SPMD_EXTERN_C_END
 * Closes the block SPMD_EXTERN_C_BEGIN opened; empty in C.
 */
#ifdef __cplusplus
#  define SPMD_EXTERN_C_BEGIN extern "C" {
#  define SPMD_EXTERN_C_END }
#else
#  define SPMD_EXTERN_C_BEGIN
#  define SPMD_EXTERN_C_END
#endif

#endif /* SPMD_EXPORT_H */
