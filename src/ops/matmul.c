/* matmul: C[M,N] = A[M,K] . B[K,N], fp16, bf16 or fp32 in and out, fp32
 * accumulate.
 * Work: A and B read once, C written once; 2MNK FLOPs on the tensor cores
 * (fp16, bf16) or the CUDA cores (fp32: TF32 fails its tolerance,
 * kg_roof_unit).
 * Baseline: cuBLASLt, the fastest of its top 8 heuristic algorithms (64 MiB
 * workspace); at fp32 also cuBLASLt with TF32 tensor cores (cublaslt-tf32),
 * checked like any path: TF32's 10-bit operands give a relative L2 error
 * of 2.6e-4 against fp32's 2e-5 (doubled: a long sum, kg_op_tol) at the
 * presets, so that path is reported incorrect and E is measured against
 * fp32 cuBLASLt. fp32 is not in the suite (two dtypes). Edge rows of A (NaN, +-Inf, equal values, denormals) must give
 * what the fp64 product gives: NaN rows stay NaN, Inf times a nonzero B entry
 * gives a signed Inf unless the row also meets the opposite Inf.
 * GPU reference: matmul.cu. */
#include "../catalog/op.h"

int kg_matmul_reference(const DLTensor *in, int n_in, double *const *ref, const kgate_params *p,
                        kgate_stream s);

static void matmul_work(const kg_op *op, const kg_shape *s, kg_types t, kg_work *w)
{
    kg_work_default(op, s, t, w);
    w->flops = 2.0 * (double)s->d[0] * (double)s->d[1] * (double)s->d[2];
}

static void matmul_cpu(const double *const *in, const kg_shape *s, const kgate_params *p,
                       double *const *out)
{
    (void)p;
    int64_t m = s->d[0], n = s->d[1], k = s->d[2];
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = 0;
            for (int64_t l = 0; l < k; l++)
                acc += in[0][i * k + l] * in[1][l * n + j];
            out[0][i * n + j] = acc;
        }
}

const kg_op kg_op_matmul = {
    .name = "matmul",
    .summary = "C = A.B (row-major), fp32 accumulate",
    .family = KG_FAMILY_GEMM,
    .dims = "MxNxK",
    .n_dims = 3,
    .dtypes = {KG_FP16, KG_BF16, KG_FP32},
    .n_dtypes = 3,
    .n_suite_dtypes = 2,
    .presets = {{"small", {3, {1024, 1024, 1024}}},
                {"medium", {3, {4096, 4096, 4096}}},
                {"large", {3, {8192, 8192, 8192}}},
                {"xl", {3, {16384, 16384, 16384}}}},
    .n_presets = 4,
    .n_inputs = 2,
    .n_outputs = 1,
    .in = {{.name = "A", .rank = 2, .dim = {0, 2}, .lo = -1.0, .hi = 1.0},
           {.name = "B", .rank = 2, .dim = {2, 1}, .lo = -1.0, .hi = 1.0}},
    .out = {{.name = "C", .rank = 2, .dim = {0, 1}}},
    .dists = KG_D(WIDE),
    .reduction = 0,
    .tol_rms = 1,
    .unit = KG_UNIT_TENSOR,
    .min_rows = 6,
    .work = matmul_work,
    .cpu_reference = matmul_cpu,
    .reference = kg_matmul_reference,
    .baselines = {"cublaslt", "cublaslt-tf32"},
    .fast = "v3",
    .needs = {{"v2", "90a", "wgmma, TMA"}, {"v3", "90a", "wgmma, TMA"}},
    .edge_semantics = "rows of A with NaN give NaN rows of C; +-Inf give signed Inf "
                      "(NaN where opposite infinities meet); equal and denormal rows are "
                      "ordinary values",
    /* [[1,2],[3,4]] . [[5,6],[7,8]] = [[19,22],[43,50]] */
    .example = {{3, {2, 2, 2}},
                {(const double[]){1, 2, 3, 4}, (const double[]){5, 6, 7, 8}},
                {(const double[]){19, 22, 43, 50}}},
};
