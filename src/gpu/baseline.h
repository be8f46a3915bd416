/* Library baselines: the vendor paths an operator is measured against.
 *
 * An operator lists its candidate paths (op->baselines); the worker sets
 * each up, checks it once against the fp64 reference and times it through
 * the same engine as a kernel; the supervisor keeps the fastest correct one
 * as t_lib and names it. setup() prepares everything outside the timed
 * region (handles, plans, algorithm choice, workspace) for the tensors it is
 * given; launch() enqueues one call on the stream.
 *
 * The rule for a path: setup() returning non-zero means "this library cannot
 * run this case here" (an unsupported dtype, shape, engine, or a missing
 * library), with the reason in err; it is reported beside the result and the
 * other paths go on. A launch that fails is an error of the library, which
 * stops the command (the candidate is never blamed for it). */
#ifndef KG_BASELINE_H
#define KG_BASELINE_H

#include <kgate/plugin.h>

#include "../base/kg.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kg_op;

typedef struct kg_baseline {
    const char *name;    /* "cudnn-softmax", "cub-argmax", ... */
    const char *library; /* "cuDNN", "cuBLASLt", "CUB" */
    int (*setup)(const struct kg_op *op, const DLTensor *in, DLTensor *out,
                 const kgate_params *p, kgate_stream s, void **ctx, char *note, size_t note_size,
                 kg_err *err);
    int (*launch)(void *ctx, kgate_stream s, kg_err *err);
    void (*teardown)(void *ctx);
    unsigned dtypes; /* the data dtypes it is tried at (bits 1 << kg_dtype); 0: every one */
} kg_baseline;

/* Runs launch(ctx) once on s and waits for it: a setup() calls it so that
 * a refusal of the library shows at setup ("cannot run this case here"),
 * not inside the timed loop. Returns err->code. */
int kg_baseline_trial(int (*launch)(void *ctx, kgate_stream s, kg_err *err), void *ctx,
                      kgate_stream s, kg_err *err);

/* The largest divisor of n that is at most cap (1 when there is none): how
 * the element-wise paths split a long vector into a 2-D view. */
int64_t kg_divisor_upto(int64_t n, int64_t cap);

/* The path named `name` (operators name theirs in op->baselines), or NULL.
 * A path is in the table when its source defines it at the start of a line,
 * `const kg_baseline kg_baseline_<name> = {...}` (the build generates the
 * table from those lines: cmake/baselines.cmake). */
const kg_baseline *kg_baseline_find(const char *name);
/* The i-th path of the table, or NULL past the end. */
const kg_baseline *kg_baseline_at(int i);

/* cuBLASLt matmul of row-major A[m,k] . B[k,n] on device pointers, for the
 * peaks command: dtype fp16, bf16 or fp32 (tf32 tensor cores). Times the top
 * heuristics and keeps the fastest; returns its median time in *t_s. */
int kg_cublaslt_peak(kg_dtype dt, int64_t m, int64_t n, int64_t k, double *t_s, kg_err *err);

#ifdef __cplusplus
}
#endif
#endif
