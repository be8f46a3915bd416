/* Library baselines: the vendor path an operator is measured against.
 * setup() prepares everything outside the timed region (handles, plans,
 * algorithm choice, workspace); launch() enqueues one call on the stream.
 * A setup error with code KG_EXIT_ENV and `unsupported` set means the library
 * cannot run this case; the caller then uses the operator's bundled fallback
 * and says so. */
#ifndef KG_BASELINE_H
#define KG_BASELINE_H

#include <kgate/plugin.h>

#include "../core/kg.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kg_op;

typedef struct kg_baseline {
    const char *name; /* "cublaslt", "cudnn-softmax", "cudnn-layernorm" */
    int (*setup)(const struct kg_op *op, kg_dtype dt, const DLTensor *in, DLTensor *out,
                 const kgate_params *p, kgate_stream s, void **ctx, int *unsupported,
                 char *note, size_t note_size, kg_err *err);
    int (*launch)(void *ctx, kgate_stream s, kg_err *err);
    void (*teardown)(void *ctx);
} kg_baseline;

extern const kg_baseline kg_baseline_cublaslt;
extern const kg_baseline kg_baseline_cudnn_softmax;
extern const kg_baseline kg_baseline_cudnn_layer_norm;

/* cuBLASLt matmul of row-major A[m,k] . B[k,n] on device pointers, for the
 * peaks command: dtype fp16, bf16 or fp32 (tf32 tensor cores). Times the top
 * heuristics and keeps the fastest; returns its median time in *t_s. */
int kg_cublaslt_peak(kg_dtype dt, int64_t m, int64_t n, int64_t k, double *t_s, kg_err *err);

#ifdef __cplusplus
}
#endif
#endif
