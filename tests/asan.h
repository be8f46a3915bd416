/* KG_UNDER_ASAN, defined when a test is built with AddressSanitizer (clang's
 * __has_feature or gcc's __SANITIZE_ADDRESS__): the tests that load a
 * nvcc-built library skip that part there, since its CUDA runtime is not
 * instrumented. */
#ifndef KG_TESTS_ASAN_H
#define KG_TESTS_ASAN_H
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KG_UNDER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(KG_UNDER_ASAN)
#define KG_UNDER_ASAN 1
#endif
#endif
