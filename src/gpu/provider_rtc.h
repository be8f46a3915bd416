/* The "cuda" provider (provider_rtc.c): CUDA C++ source candidates compiled
 * with NVRTC at run time, as their `kgate:` comment describes
 * (catalog/rtc_desc.h). */
#ifndef KG_PROVIDER_RTC_H
#define KG_PROVIDER_RTC_H

#include <stddef.h>

#include "provider.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The provider of .cu candidates. */
const kg_provider *kg_provider_rtc(void);
/* 1 when path names a CUDA source candidate (it ends in .cu). */
int kg_source_is_cuda(const char *path);
/* Compiles source with NVRTC for compute capability major.minor (sm_90 and
 * later get the "a" target) into a malloc'd cubin. 0, or -1 with one line
 * in msg (NVRTC missing, or its first error). Needs no GPU. */
int kg_rtc_compile(const char *source, const char *name, int cc_major, int cc_minor, char **cubin, size_t *size,
                   char *msg, size_t msg_size);

#ifdef __cplusplus
}
#endif
#endif
