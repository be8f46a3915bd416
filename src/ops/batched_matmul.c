/* batched_matmul: C[b] = A[b] . B[b] for every b < BATCH, row-major, as
 * torch.bmm: A [BATCH,M,K], B [BATCH,K,N], C [BATCH,M,N], fp16 or bf16 in
 * and out, fp32 accumulate. Extents are written BATCHxMxNxK.
 * Presets: the paper's batched shapes, 64 x 128^2 ("small") up to
 * 32 x 4096^2 ("large"), and its artifact's batched matrix-vector product
 * 128 x (1x2048).(2048x2048) ("gemv", memory-bound: each B read once for
 * one row of A).
 * Work: A and B read once, C written once; 2 BATCH M N K FLOPs on the tensor
 * cores.
 * Baseline: cuBLASLt strided-batched matmul, the fastest of its top heuristic
 * algorithms (src/gpu/baseline_cublaslt_gemm2.c).
 * Edge rows: input 0 viewed as BATCH*M rows of K; a NaN row of A gives a NaN
 * row of C in its batch, +-Inf a signed Inf unless opposite infinities meet.
 * GPU reference: batched_matmul.cu. */
#include "../catalog/op.h"

int kg_batched_matmul_reference(const DLTensor *in, int n_in, double *const *ref,
                                const kgate_params *p, kgate_stream s);

static void bmm_work(const kg_op *op, const kg_shape *s, kg_types t, kg_work *w)
{
    kg_work_default(op, s, t, w);
    w->flops = 2.0 * (double)s->d[0] * (double)s->d[1] * (double)s->d[2] * (double)s->d[3];
}

static void bmm_cpu(const double *const *in, const kg_shape *s, const kgate_params *p,
                    double *const *out)
{
    (void)p;
    int64_t nb = s->d[0], m = s->d[1], n = s->d[2], k = s->d[3];
    for (int64_t b = 0; b < nb; b++) {
        const double *a = in[0] + b * m * k, *bm = in[1] + b * k * n;
        double *c = out[0] + b * m * n;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double acc = 0;
                for (int64_t l = 0; l < k; l++)
                    acc += a[i * k + l] * bm[l * n + j];
                c[i * n + j] = acc;
            }
    }
}

const kg_op kg_op_batched_matmul = {
    .name = "batched_matmul",
    .summary = "C[b] = A[b].B[b] (row-major), as torch.bmm, fp32 accumulate",
    .family = KG_FAMILY_GEMM,
    .dims = "BATCHxMxNxK",
    .n_dims = 4,
    .dtypes = {KG_FP16, KG_BF16},
    .n_dtypes = 2,
    .n_suite_dtypes = 2,
    .presets = {{"small", {4, {64, 128, 128, 128}}},
                {"medium", {4, {32, 1024, 1024, 1024}}},
                {"large", {4, {32, 4096, 4096, 4096}}},
                {"gemv", {4, {128, 1, 2048, 2048}}}},
    .n_presets = 4,
    .n_inputs = 2,
    .n_outputs = 1,
    .in = {{.name = "A", .rank = 3, .dim = {0, 1, 3}, .lo = -1.0, .hi = 1.0},
           {.name = "B", .rank = 3, .dim = {0, 3, 2}, .lo = -1.0, .hi = 1.0}},
    .out = {{.name = "C", .rank = 3, .dim = {0, 1, 2}}},
    .dists = KG_D(WIDE),
    .reduction = 0,
    .tol_rms = 1,
    .unit = KG_UNIT_TENSOR,
    .min_rows = 6,
    .work = bmm_work,
    .cpu_reference = bmm_cpu,
    .reference = kg_batched_matmul_reference,
    .baselines = {"cublaslt-batched"},
    .fast = "v2",
    .needs = {{"v2", "90a", "wgmma, TMA"}},
    .edge_semantics = "rows of A (BATCH*M rows of K) with NaN give NaN rows of C in their batch; "
                      "+-Inf give signed Inf (NaN where opposite infinities meet); equal and "
                      "denormal rows are ordinary values",
    /* BATCH 2, M 2, N 3, K 2:
     * [[1,2],[3,4]] . [[5,6,7],[8,9,10]] = [[21,24,27],[47,54,61]];
     * [[-1,0.5],[2,0]] . [[2,4,1],[6,-2,3]] = [[1,-5,0.5],[4,8,2]] */
    .example = {{4, {2, 2, 3, 2}},
                {(const double[]){1, 2, 3, 4, -1, 0.5, 2, 0},
                 (const double[]){5, 6, 7, 8, 9, 10, 2, 4, 1, 6, -2, 3}},
                {(const double[]){21, 24, 27, 47, 54, 61, 1, -5, 0.5, 4, 8, 2}}},
};
