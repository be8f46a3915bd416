/* matmul: C[M,N] = A[M,K] . B[K,N], fp16 or bf16 in and out, fp32 accumulate.
 * Work: A and B read once, C written once; 2MNK FLOPs on the tensor cores.
 * Baseline: cuBLASLt, the fastest of its top 8 heuristic algorithms (64 MiB
 * workspace). Edge rows of A (NaN, +-Inf, equal values, denormals) must give
 * what the fp64 product gives: NaN rows stay NaN, Inf times a nonzero B entry
 * gives a signed Inf unless the row also meets the opposite Inf. */
#include "../core/op.h"
#include "../gpu/baseline.h"

int kg_matmul_reference(const DLTensor *in, int n_in, double *ref, const kgate_params *p,
                        kgate_stream s);

static void matmul_work(const kg_shape *s, kg_dtype dt, kg_work *w)
{
    double m = (double)s->d[0], n = (double)s->d[1], k = (double)s->d[2];
    w->bytes = (m * k + k * n + m * n) * (double)kg_dtype_size(dt);
    w->flops = 2.0 * m * n * k;
}

static void matmul_cpu(const double *const *in, const kg_shape *s, const kgate_params *p,
                       double *out)
{
    (void)p;
    int64_t m = s->d[0], n = s->d[1], k = s->d[2];
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = 0;
            for (int64_t l = 0; l < k; l++)
                acc += in[0][i * k + l] * in[1][l * n + j];
            out[i * n + j] = acc;
        }
}

const kg_op kg_op_matmul = {
    .name = "matmul",
    .summary = "C = A.B (row-major), fp32 accumulate",
    .dims = "MxNxK",
    .n_dims = 3,
    .dtypes = {KG_FP16, KG_BF16},
    .n_dtypes = 2,
    .presets = {{"small", {3, {1024, 1024, 1024}}},
                {"medium", {3, {4096, 4096, 4096}}},
                {"large", {3, {8192, 8192, 8192}}},
                {"xl", {3, {16384, 16384, 16384}}}},
    .n_presets = 4,
    .n_inputs = 2,
    .n_outputs = 1,
    .in = {{"A", 2, {0, 2, 0}, -1.0, 1.0}, {"B", 2, {2, 1, 0}, -1.0, 1.0}},
    .out = {{"C", 2, {0, 1, 0}, 0, 0}},
    .reduction = 0,
    .unit = KG_UNIT_TENSOR,
    .eps = 0,
    .min_rows = 5,
    .work = matmul_work,
    .cpu_reference = matmul_cpu,
    .reference = kg_matmul_reference,
    .baseline = &kg_baseline_cublaslt,
    .fallback = NULL,
    .edge_semantics = "rows of A with NaN give NaN rows of C; +-Inf give signed Inf "
                      "(NaN where opposite infinities meet); equal and denormal rows are "
                      "ordinary values",
};
