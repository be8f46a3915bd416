/* cuBLASLt baselines of the GEMM operators beyond matmul.
 *
 * cublaslt-batched (batched_matmul): row-major C[b] = A[b] . B[b] computed as
 *   the column-major C^T = B^T . A^T of every batch in one strided-batched
 *   call: CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT = BATCH and
 *   CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = K*N, M*K and M*N elements
 *   on the layouts of B, A and C.
 * cublaslt-linact, cublaslt-linact-h (linear_activation): out = silu(x.W1^T)
 *   * (x.W3^T) as two cuBLASLt GEMMs, each the column-major a^T [N,M] =
 *   op_T(W) . x^T (W [N,K] row-major is the column-major K x N matrix, x
 *   [M,K] the column-major K x M: the TN layout), into intermediates
 *   allocated at setup, then kgate's pointwise gate kernel (baseline_gate.cu);
 *   the three launches are timed as one call. -linact keeps the
 *   intermediates in fp32 (cuBLASLt's fp16/bf16-in, fp32-out mode: nothing is
 *   rounded before the gate); -linact-h in the input dtype, as PyTorch's
 *   F.silu(F.linear(x, W1)) * F.linear(x, W3) stores them: half the
 *   intermediate traffic, but a and b are rounded before the gate, which may
 *   cost it the fp16 check. cuBLASLt has no SiLU or gated epilogue
 *   (CUBLASLT_EPILOGUE_* offers ReLU, GELU, bias and their aux and gradient
 *   forms), so neither path fuses the gate.
 * Every path asks for the top heuristic algorithms, times each and keeps the
 * fastest (baseline_cublaslt_common.h); the two GEMMs of linact have the
 * same shapes and types, so the algorithm timed on the first serves both. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../catalog/op.h"
#include "baseline.h"
#include "baseline_cublaslt_common.h"
#include "baseline_gate.h"
#include "check.h"
#include "tensors.h"

/* One cuBLASLt matmul D = op(A) op(B) (C = D, beta 0). */
typedef struct g2_mm {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulAlgo_t algo;
    const void *A, *B;
    void *C;
} g2_mm;

typedef struct g2_ctx {
    cublasLtHandle_t h;
    void *ws;
    g2_mm mm[2];
    int n_mm;
    /* linact: out = silu(mm[0].C) * mm[1].C, both in `inter` */
    void *inter;
    kg_dtype inter_dt, out_dt;
    void *out;
    int64_t count;
} g2_ctx;

static void g2_mm_destroy(g2_mm *m)
{
    if (m->la)
        cublasLtMatrixLayoutDestroy(m->la);
    if (m->lb)
        cublasLtMatrixLayoutDestroy(m->lb);
    if (m->lc)
        cublasLtMatrixLayoutDestroy(m->lc);
    if (m->op)
        cublasLtMatmulDescDestroy(m->op);
}

static void g2_teardown(void *p)
{
    g2_ctx *c = p;
    if (!c)
        return;
    for (int i = 0; i < 2; i++)
        g2_mm_destroy(&c->mm[i]);
    if (c->h)
        cublasLtDestroy(c->h);
    if (c->ws)
        cudaFree(c->ws);
    if (c->inter)
        cudaFree(c->inter);
    free(c);
}

static int g2_mm_launch(const g2_ctx *c, const g2_mm *m, kgate_stream s, kg_err *err)
{
    const float one = 1.0f, zero = 0.0f;
    KG_CUBLAS(cublasLtMatmul(c->h, m->op, &one, m->A, m->la, m->B, m->lb, &zero, m->C, m->lc, m->C,
                             m->lc, &m->algo, c->ws, KG_LT_WORKSPACE, (cudaStream_t)s));
    return 0;
out:
    return err->code;
}

/* The first matmul alone: what the algorithm search times. */
static int g2_first(void *p, kgate_stream s, kg_err *err)
{
    g2_ctx *c = p;
    return g2_mm_launch(c, &c->mm[0], s, err);
}

static int g2_launch(void *p, kgate_stream s, kg_err *err)
{
    g2_ctx *c = p;
    for (int i = 0; i < c->n_mm; i++)
        if (g2_mm_launch(c, &c->mm[i], s, err))
            return err->code;
    if (c->inter)
        KG_CUDA(kg_silu_gate(c->inter_dt, c->mm[0].C, c->mm[1].C, c->out_dt, c->out, c->count, s));
    return 0;
out:
    return err->code;
}

/* The context with its handle and workspace. */
static int g2_begin(g2_ctx **out, kg_err *err)
{
    g2_ctx *c = calloc(1, sizeof *c);
    *out = c;
    if (!c)
        return kg_err_set(err, KG_EXIT_ENV, "out of host memory");
    KG_CUBLAS(cublasLtCreate(&c->h));
    KG_CUDA(cudaMalloc(&c->ws, KG_LT_WORKSPACE));
    return 0;
out:
    return err->code;
}

/* A column-major rows x cols layout (leading dimension ld) repeated `batch`
 * times, `stride` elements apart. */
static int g2_layout(cublasLtMatrixLayout_t *l, kg_dtype dt, int64_t rows, int64_t cols, int64_t ld,
                     int64_t batch, int64_t stride, kg_err *err)
{
    int32_t count = (int32_t)batch;
    if (batch < 1 || batch > INT32_MAX)
        return kg_err_set(err, KG_EXIT_ENV, "cuBLASLt takes at most 2^31-1 batches, not %lld",
                          (long long)batch);
    KG_CUBLAS(cublasLtMatrixLayoutCreate(l, kg_lt_type(dt), (uint64_t)rows, (uint64_t)cols, ld));
    KG_CUBLAS(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                               sizeof count));
    KG_CUBLAS(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                               &stride, sizeof stride));
    return 0;
out:
    return err->code;
}

/* fp32 accumulate and scale; TRANSA T when trans_a. */
static int g2_desc(g2_mm *m, int trans_a, kg_err *err)
{
    KG_CUBLAS(cublasLtMatmulDescCreate(&m->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    if (trans_a) {
        int32_t t = CUBLAS_OP_T;
        KG_CUBLAS(cublasLtMatmulDescSetAttribute(m->op, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t));
    }
    return 0;
out:
    return err->code;
}

/* Times the heuristic's answers on the first matmul; the others take its
 * choice. *found and *best (0-based) for the note. */
static int g2_pick(g2_ctx *c, const char *what, kgate_stream s, int *found, int *best, kg_err *err)
{
    cublasLtMatmulHeuristicResult_t res[KG_LT_ALGOS];
    g2_mm *m = &c->mm[0];
    if (kg_lt_heuristics(c->h, m->op, m->la, m->lb, m->lc, m->lc, what, res, found, err))
        return err->code;
    *best = kg_lt_fastest(res, *found, &m->algo, g2_first, c, s, err);
    if (*best < 0)
        return err->code;
    for (int i = 1; i < c->n_mm; i++)
        c->mm[i].algo = m->algo;
    return 0;
}

/* ------------------------------------------------------------ batched_matmul */
static int batched_setup(const kg_op *op, const DLTensor *in, DLTensor *out, const kgate_params *p,
                         kgate_stream s, void **ctx, char *note, size_t note_size, kg_err *err)
{
    (void)op;
    (void)p;
    g2_ctx *c = NULL;
    kg_dtype dt = kg_tensor_dtype(&in[0]);
    int64_t nb = in[0].shape[0], m = in[0].shape[1], k = in[0].shape[2], n = in[1].shape[2];
    int found = 0, best = -1;
    char what[128];
    if (g2_begin(&c, err))
        goto out;
    c->n_mm = 1;
    /* column-major C^T (n x m) = B^T (n x k) . A^T (k x m), per batch */
    if (g2_desc(&c->mm[0], 0, err) || g2_layout(&c->mm[0].la, dt, n, k, n, nb, k * n, err) ||
        g2_layout(&c->mm[0].lb, dt, k, m, k, nb, m * k, err) ||
        g2_layout(&c->mm[0].lc, dt, n, m, n, nb, m * n, err))
        goto out;
    c->mm[0].A = in[1].data;
    c->mm[0].B = in[0].data;
    c->mm[0].C = out[0].data;
    snprintf(what, sizeof what, "%lld batches of %lldx%lldx%lld %s", (long long)nb, (long long)m,
             (long long)n, (long long)k, kg_dtype_name(dt));
    if (g2_pick(c, what, s, &found, &best, err) || kg_baseline_trial(g2_launch, c, s, err))
        goto out;
    snprintf(note, note_size,
             "cuBLASLt strided-batched matmul (%lld batches), fastest of %d heuristic algorithms "
             "(#%d), 64 MiB workspace",
             (long long)nb, found, best + 1);
    *ctx = c;
    return 0;
out:
    g2_teardown(c);
    return err->code;
}

/* --------------------------------------------------------- linear_activation */
static int linact_prepare(const DLTensor *in, DLTensor *out, kg_dtype inter_dt, kgate_stream s,
                          void **ctx, char *note, size_t note_size, kg_err *err)
{
    g2_ctx *c = NULL;
    kg_dtype dt = kg_tensor_dtype(&in[0]);
    int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[0];
    size_t esz = kg_dtype_size(inter_dt), one = (size_t)(m * n) * esz;
    int found = 0, best = -1;
    char what[128];
    if (g2_begin(&c, err))
        goto out;
    KG_CUDA(cudaMalloc(&c->inter, 2 * one));
    c->n_mm = 2;
    for (int i = 0; i < 2; i++) {
        /* column-major a^T (n x m) = op_T(W: k x n) . x^T (k x m) */
        g2_mm *mm = &c->mm[i];
        if (g2_desc(mm, 1, err) || g2_layout(&mm->la, dt, k, n, k, 1, 0, err) ||
            g2_layout(&mm->lb, dt, k, m, k, 1, 0, err) ||
            g2_layout(&mm->lc, inter_dt, n, m, n, 1, 0, err))
            goto out;
        mm->A = in[1 + i].data;
        mm->B = in[0].data;
        mm->C = (char *)c->inter + (size_t)i * one;
    }
    c->inter_dt = inter_dt;
    c->out_dt = dt;
    c->out = out[0].data;
    c->count = m * n;
    snprintf(what, sizeof what, "%lldx%lldx%lld %s in, %s out (TN)", (long long)m, (long long)n,
             (long long)k, kg_dtype_name(dt), kg_dtype_name(inter_dt));
    if (g2_pick(c, what, s, &found, &best, err) || kg_baseline_trial(g2_launch, c, s, err))
        goto out;
    snprintf(note, note_size,
             "cuBLASLt: two TN GEMMs into %s intermediates allocated at setup (fastest of %d "
             "heuristic algorithms, #%d, 64 MiB workspace), then a pointwise silu(a)*b kernel: "
             "three launches timed as one; cuBLASLt has no SiLU or gated epilogue",
             kg_dtype_name(inter_dt), found, best + 1);
    *ctx = c;
    return 0;
out:
    g2_teardown(c);
    return err->code;
}

static int linact_setup(const kg_op *op, const DLTensor *in, DLTensor *out, const kgate_params *p,
                        kgate_stream s, void **ctx, char *note, size_t note_size, kg_err *err)
{
    (void)op;
    (void)p;
    return linact_prepare(in, out, KG_FP32, s, ctx, note, note_size, err);
}

static int linact_h_setup(const kg_op *op, const DLTensor *in, DLTensor *out,
                          const kgate_params *p, kgate_stream s, void **ctx, char *note,
                          size_t note_size, kg_err *err)
{
    (void)op;
    (void)p;
    return linact_prepare(in, out, kg_tensor_dtype(&in[0]), s, ctx, note, note_size, err);
}

const kg_baseline kg_baseline_cublaslt_batched = {"cublaslt-batched", "cuBLASLt", batched_setup,
                                                  g2_launch, g2_teardown, 0};
const kg_baseline kg_baseline_cublaslt_linact = {"cublaslt-linact", "cuBLASLt", linact_setup,
                                                 g2_launch, g2_teardown, 0};
const kg_baseline kg_baseline_cublaslt_linact_h = {"cublaslt-linact-h", "cuBLASLt",
                                                   linact_h_setup, g2_launch, g2_teardown, 0};
