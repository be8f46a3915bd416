/* attention: scaled dot-product attention forward, as
 * torch.nn.functional.scaled_dot_product_attention(Q, K, V, is_causal=causal):
 *     O[b,h,i,:] = sum_j P[i,j] V[b,h,j,:],  P[i,:] = softmax_j(Q[b,h,i,:].K[b,h,j,:] * scale)
 * over the visible keys j (all of them; with causal = 1 only j <= i, the
 * top-left aligned mask), Q, K, V and O [B,H,S,D] contiguous (D innermost),
 * fp16 or bf16 in and out, fp32 accumulation and softmax in the kernels.
 *
 * scale is 1/sqrt(D) by definition (PyTorch's default), not a scalar: a
 * scalar's default cannot depend on the shape, and a fixed scale that is
 * wrong for every D but one would check nothing.
 * Scalars: causal (required, 0 or 1: one trial runs the other value).
 * Inputs: Q and K uniform in [-2, 2), V in [-1, 1). With the 1/sqrt(D) scale
 * a score has standard deviation 4/3 whatever D is, so a row's largest
 * weights are about 100 times its typical one: the softmax is neither
 * near-uniform (as with [-1, 1]: weights within e^+-1) nor one-hot, the
 * running max of an online softmax changes along the row, and exp works over
 * much of its range. The offset distribution (Q + 64) makes scores of a few
 * hundred: an exp without max subtraction overflows fp32 there.
 * Tolerance: the plain rule, no RMS scaling (tol_rms = 0) and no doubling.
 * O is a convex combination of V rows, so |O| <= max |V| = 1 and its
 * rounding error is relative to the V values, not to a partial sum that
 * grows with S (the reference's RMS never exceeds 1, where kg_tol_scale
 * would act); the errors of P's rounding to fp16/bf16 before P.V average
 * out over the row (rel-L2 about 2e-4 in fp16, 2e-3 in bf16).
 * Work: Q, K, V read and O written once; 4*B*H*S*S*D FLOPs (Q.K^T and P.V),
 * halved when causal (the call's scalar, kg_op.work_p), on the tensor cores;
 * the softmax's exps are not counted.
 * Baseline: cuDNN's fused flash attention forward through the graph API
 * (src/gpu/baseline_cudnn_sdpa.c).
 * Edge rows (planted into Q): the max-subtracted softmax, as PyTorch and
 * cuDNN compute it. A Q row holding a NaN or an Inf gives a NaN O row: every
 * one of its scores is NaN or +-Inf, and exp(s - max) meets NaN, Inf - Inf
 * (some score +Inf) or, all scores -Inf, -Inf - (-Inf). Equal and denormal
 * rows are ordinary values (a denormal row attends uniformly).
 * GPU reference: attention.cu. */
#include <math.h>

#include "../catalog/op.h"

int kg_attention_reference(const DLTensor *in, int n_in, double *const *ref, const kgate_params *p,
                           kgate_stream s);

static void attention_work(const kg_op *op, const kg_shape *s, kg_types t, const kgate_params *p,
                           kg_work *w)
{
    kg_work_default(op, s, t, w);
    double f = 4.0 * (double)s->d[0] * (double)s->d[1] * (double)s->d[2] * (double)s->d[2] *
               (double)s->d[3];
    /* the masked half is not work (FlashAttention's count; exactly it is
     * (S + 1) / (2 S) of the product) */
    w->flops = kgate_scalar_get(p, "causal", 0) != 0 ? f / 2 : f;
}

static double dot(const double *a, const double *b, int64_t n)
{
    double acc = 0;
    for (int64_t k = 0; k < n; k++)
        acc += a[k] * b[k];
    return acc;
}

/* The definition, two passes a row: the NaN-propagating max of the visible
 * scores, then exp(s - max) summed and applied to V. */
static void attention_cpu(const double *const *in, const kg_shape *s, const kgate_params *p,
                          double *const *out)
{
    int64_t bh = s->d[0] * s->d[1], S = s->d[2], D = s->d[3];
    int causal = kgate_scalar_get(p, "causal", 0) != 0;
    double scale = 1.0 / sqrt((double)D);
    for (int64_t h = 0; h < bh; h++) {
        const double *q = in[0] + h * S * D, *k = in[1] + h * S * D, *v = in[2] + h * S * D;
        double *o = out[0] + h * S * D;
        for (int64_t i = 0; i < S; i++) {
            int64_t n = causal ? i + 1 : S;
            double mx = -INFINITY, sum = 0;
            double *oi = o + i * D;
            for (int64_t j = 0; j < n; j++) {
                double sj = dot(q + i * D, k + j * D, D) * scale;
                mx = sj > mx || sj != sj ? sj : mx;
            }
            for (int64_t d = 0; d < D; d++)
                oi[d] = 0;
            for (int64_t j = 0; j < n; j++) {
                double e = exp(dot(q + i * D, k + j * D, D) * scale - mx);
                sum += e;
                for (int64_t d = 0; d < D; d++)
                    oi[d] += e * v[j * D + d];
            }
            for (int64_t d = 0; d < D; d++)
                oi[d] /= sum;
        }
    }
}

const kg_op kg_op_attention = {
    .name = "attention",
    .summary = "scaled dot-product attention forward, O = softmax(Q.K^T / sqrt(D) [causal]) . V",
    .family = KG_FAMILY_ATTENTION,
    .dims = "BxHxSxD",
    .n_dims = 4,
    .dtypes = {KG_FP16, KG_BF16},
    .n_dtypes = 2,
    .n_suite_dtypes = 2,
    .presets = {{"small", {4, {2, 4, 256, 64}}},
                {"medium", {4, {8, 32, 1024, 128}}},
                {"large", {4, {8, 32, 2048, 128}}}, /* the paper's QKV shape */
                {"seq512", {4, {8, 32, 512, 128}}},
                {"seq4096", {4, {8, 32, 4096, 128}}},
                {"d64", {4, {8, 32, 2048, 64}}},
                {"seq512-d64", {4, {8, 32, 512, 64}}},
                {"seq4096-d64", {4, {8, 32, 4096, 64}}}},
    .n_presets = 8,
    .n_inputs = 3,
    .n_outputs = 1,
    .in = {{.name = "Q", .rank = 4, .dim = {0, 1, 2, 3}, .lo = -2.0, .hi = 2.0},
           {.name = "K", .rank = 4, .dim = {0, 1, 2, 3}, .lo = -2.0, .hi = 2.0},
           {.name = "V", .rank = 4, .dim = {0, 1, 2, 3}, .lo = -1.0, .hi = 1.0}},
    .out = {{.name = "O", .rank = 4, .dim = {0, 1, 2, 3}}},
    .scalars = {{"causal", 0, 1, 1, 1, "1: query i attends to keys j <= i only (top-left aligned mask)"}},
    .n_scalars = 1,
    .dists = KG_D(OFFSET) | KG_D(WIDE),
    .reduction = 0,
    .tol_rms = 0,
    .unit = KG_UNIT_TENSOR,
    .min_rows = 6,
    .work_p = attention_work,
    .cpu_reference = attention_cpu,
    .reference = kg_attention_reference,
    .baselines = {"cudnn-sdpa"},
    .fast = "v3",
    .needs = {{"v3", "90a", "wgmma, TMA"}},
    .edge_semantics = "a Q row with a NaN or an Inf gives a NaN O row (its scores are NaN or "
                      "+-Inf: the max-subtracted softmax meets NaN, Inf - Inf or 0/0); equal and "
                      "denormal Q rows are ordinary values",
    /* B = H = 1, S = D = 2, K = I, so scores = Q / sqrt(2):
     * Q row 0 = [sqrt(2) ln 3, 0] -> scores [ln 3, 0] -> P = [3/4, 1/4];
     * Q row 1 = [0, sqrt(2) ln 3] -> P = [1/4, 3/4]; V = [[1,2],[5,6]]:
     * O = [[0.75+1.25, 1.5+1.5], [0.25+3.75, 0.5+4.5]] = [[2,3],[4,5]] */
    .example = {{4, {1, 1, 2, 2}},
                {(const double[]){1.5536723984241867, 0, 0, 1.5536723984241867},
                 (const double[]){1, 0, 0, 1}, (const double[]){1, 2, 5, 6}},
                {(const double[]){2, 3, 4, 5}}},
};
