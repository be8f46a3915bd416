/* Which GPUs this build's code runs on, and which bundled variants a GPU can
 * run. A build's CUDA architectures (KG_CUDA_ARCHS, CMake's form:
 * "80-real;90a-real;100-virtual", ';' ',' or ' ' apart) against a device's
 * compute capability, the way the CUDA driver picks code from a fat binary:
 * SASS built for the GPU when there is some, else PTX it compiles (JIT).
 * Plain C; no GPU. */
#ifndef KG_ARCH_H
#define KG_ARCH_H

#include <stddef.h>

#include "op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What code a GPU gets from a build. */
typedef enum kg_code {
    KG_CODE_NONE, /* none: kgate refuses the GPU */
    KG_CODE_PTX,  /* PTX the driver compiles for it at load (JIT) */
    KG_CODE_SASS, /* SASS built for it */
} kg_code;

/* The architecture list this build's CUDA code was compiled for, as CMake
 * was given it (KG_CUDA_ARCHS). */
const char *kg_arch_build(void);

/* The code a GPU of compute capability cc (major * 10 + minor: 90 for 9.0,
 * 120 for 12.0) gets from archs: SASS of sm_XY runs on the GPUs of major X
 * and minor Y or later, SASS of an "a" target (sm_90a) on X.Y alone, one of
 * an "f" target on major X from minor Y; PTX of compute_XY is compiled for
 * any GPU from X.Y on ("a": X.Y alone, "f": major X from minor Y). The
 * newest SASS that runs wins, then the newest PTX. The chosen arch goes to
 * what ("sm_90a", "compute_100"; "" for none). Entries that do not parse
 * are ignored. */
kg_code kg_arch_code(const char *archs, int cc, char *what, size_t size);

/* 0 when a build for archs has code for GPU `index` (named name, compute
 * capability cc); else KG_EXIT_ENV with one line naming the GPU, its arch
 * and the build's list: kgate refuses a GPU it has no code for. */
int kg_arch_check_gpu(int index, const char *name, int cc, const char *archs, kg_err *err);

/* archs for people: "sm_80, sm_86, sm_90a and PTX compute_100" into buf. */
const char *kg_arch_list_text(const char *archs, char *buf, size_t size);

/* The need of op's bundled kernel `kernel` (named <op>_<variant>_<dtype>,
 * op->needs), or NULL when it needs nothing beyond the build's code. */
const kg_variant_need *kg_arch_need(const kg_op *op, const char *kernel);

/* 0 when a GPU of compute capability cc runs op's bundled kernel `kernel`
 * from a build for archs; else 1 with why, one line: what it needs and that
 * this GPU (sm_XY) or this build lacks it. */
int kg_arch_unavailable(const kg_op *op, const char *kernel, int cc, const char *archs, char *why,
                        size_t size);

/* The bundled variants (<op>_<variant>, every dtype) that a GPU of compute
 * capability cc cannot run from a build for archs, as one line into buf:
 * "attention_v3, matmul_v2 (needs sm_90a (wgmma, TMA): this GPU is sm_80)",
 * variants of one reason together, "; " between reasons; "" when it runs
 * them all. */
const char *kg_arch_unavailable_text(int cc, const char *archs, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
