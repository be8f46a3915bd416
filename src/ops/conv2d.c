/* conv2d: y = conv2d(x, w), NCHW, forward 2-D convolution as cuDNN and
 * PyTorch compute it (cross-correlation: the filter is not flipped), with
 * stride, symmetric zero padding and channel groups; fp16 or bf16 in and
 * out, fp32 accumulate. x [N,C,H,W], w [K,C/GROUPS,R,S], y [N,K,P,Q].
 *
 *   y[n,k,p,q] = sum over c < C/G, r < R, s < S of
 *                x[n, g C/G + c, p STRIDE - PAD + r, q STRIDE - PAD + s] . w[k,c,r,s]
 *   (g = k / (K/G), x outside [0,H) x [0,W) reads as 0)
 *
 * The shape holds the geometry (src/ops/conv2d.h says why and what makes a
 * shape valid); this file also holds what conv2d_nhwc shares: the shape
 * rule, the work model and the CPU reference for both layouts.
 * Work: x, w read once, y written once; 2 N K P Q (C/G) R S FLOPs on the
 * tensor cores. Baseline: cuDNN's graph API convolution forward, the
 * fastest of every engine config its heuristics offer
 * (src/gpu/baseline_cudnn_conv.c). GPU reference: conv2d.cu. */
#include "conv2d.h"

#include <stdarg.h>
#include <stdio.h>

int kg_conv2d_reference(const DLTensor *in, int n_in, double *const *ref, const kgate_params *p,
                        kgate_stream s);

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Writes why a shape is refused; returns 1 (refused). */
static int refuse(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int refuse(char *why, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
    return 1;
}

/* The repairs of kg_conv2d_check_shape: the nearest valid shape. */
static void conv_repair(int64_t *d)
{
    for (int i = 0; i < KG_CV_DIMS; i++)
        if (i != KG_CV_PAD && d[i] < 1)
            d[i] = 1;
    if (d[KG_CV_PAD] < 0)
        d[KG_CV_PAD] = 0;
    d[KG_CV_GROUPS] = gcd64(d[KG_CV_GROUPS], gcd64(d[KG_CV_C], d[KG_CV_K]));
    int64_t f = d[KG_CV_R] < d[KG_CV_S] ? d[KG_CV_R] : d[KG_CV_S];
    if (d[KG_CV_PAD] > f - 1)
        d[KG_CV_PAD] = f - 1;
    /* H >= 1, so the cut filter stays above PAD */
    if (d[KG_CV_R] > d[KG_CV_H] + 2 * d[KG_CV_PAD])
        d[KG_CV_R] = d[KG_CV_H] + 2 * d[KG_CV_PAD];
    if (d[KG_CV_S] > d[KG_CV_W] + 2 * d[KG_CV_PAD])
        d[KG_CV_S] = d[KG_CV_W] + 2 * d[KG_CV_PAD];
}

int kg_conv2d_check_shape(const kg_op *op, kg_shape *s, int repair, char *why, size_t n)
{
    static const char *names[KG_CV_DIMS] = {"N", "C", "H", "W", "K", "R", "S", "STRIDE", "PAD", "GROUPS"};
    int64_t *d = s->d;
    (void)op;
    if (s->n != KG_CV_DIMS)
        return refuse(why, n, "expected %d extents", KG_CV_DIMS);
    if (repair)
        conv_repair(d);
    if (d[KG_CV_STRIDE] < 1)
        return refuse(why, n, "stride %lld: the window must move by at least 1", (long long)d[KG_CV_STRIDE]);
    for (int i = 0; i < KG_CV_DIMS; i++)
        if (i != KG_CV_PAD && d[i] < 1)
            return refuse(why, n, "extent %s is %lld, it must be at least 1", names[i], (long long)d[i]);
    if (d[KG_CV_PAD] < 0)
        return refuse(why, n, "padding %lld is negative", (long long)d[KG_CV_PAD]);
    if (d[KG_CV_C] % d[KG_CV_GROUPS] || d[KG_CV_K] % d[KG_CV_GROUPS])
        return refuse(why, n, "%lld groups do not divide both the %lld input and the %lld output channels",
                        (long long)d[KG_CV_GROUPS], (long long)d[KG_CV_C], (long long)d[KG_CV_K]);
    if (d[KG_CV_PAD] >= d[KG_CV_R] || d[KG_CV_PAD] >= d[KG_CV_S])
        return refuse(why, n, "padding %lld is not below the %lldx%lld filter's extents (windows of padding alone)",
                        (long long)d[KG_CV_PAD], (long long)d[KG_CV_R], (long long)d[KG_CV_S]);
    if (d[KG_CV_R] > d[KG_CV_H] + 2 * d[KG_CV_PAD] || d[KG_CV_S] > d[KG_CV_W] + 2 * d[KG_CV_PAD])
        return refuse(why, n, "the %lldx%lld filter does not fit the %lldx%lld input padded by %lld (no output)",
                        (long long)d[KG_CV_R], (long long)d[KG_CV_S], (long long)d[KG_CV_H],
                        (long long)d[KG_CV_W], (long long)d[KG_CV_PAD]);
    return 0;
}

void kg_conv2d_work(const kg_op *op, const kg_shape *s, kg_types t, kg_work *w)
{
    kg_work_default(op, s, t, w);
    w->flops = 2.0 * (double)s->d[KG_CV_N] * (double)s->d[KG_CV_K] * (double)kg_conv_p(s) *
               (double)kg_conv_q(s) * (double)kg_conv_cg(s) * (double)s->d[KG_CV_R] * (double)s->d[KG_CV_S];
}

void kg_conv2d_cpu(int nhwc, const double *const *in, const kg_shape *sh, double *const *out)
{
    const int64_t *d = sh->d;
    const int64_t N = d[KG_CV_N], C = d[KG_CV_C], H = d[KG_CV_H], W = d[KG_CV_W], K = d[KG_CV_K];
    const int64_t R = d[KG_CV_R], S = d[KG_CV_S], U = d[KG_CV_STRIDE], pad = d[KG_CV_PAD];
    const int64_t Cg = kg_conv_cg(sh), Kg = K / d[KG_CV_GROUPS], P = kg_conv_p(sh), Q = kg_conv_q(sh);
    /* element strides of x (n, c, h, w), w (k, c, r, s) and y (n, k, p, q) */
    const int64_t xs[4] = {C * H * W, nhwc ? 1 : H * W, nhwc ? W * C : W, nhwc ? C : 1};
    const int64_t ws[4] = {Cg * R * S, nhwc ? 1 : R * S, nhwc ? S * Cg : S, nhwc ? Cg : 1};
    const int64_t ys[4] = {K * P * Q, nhwc ? 1 : P * Q, nhwc ? Q * K : Q, nhwc ? K : 1};
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++)
            for (int64_t p = 0; p < P; p++)
                for (int64_t q = 0; q < Q; q++) {
                    int64_t c0 = (k / Kg) * Cg;
                    double acc = 0;
                    for (int64_t c = 0; c < Cg; c++)
                        for (int64_t r = 0; r < R; r++)
                            for (int64_t s = 0; s < S; s++) {
                                int64_t h = p * U - pad + r, x = q * U - pad + s;
                                if (h < 0 || h >= H || x < 0 || x >= W)
                                    continue;
                                acc += in[0][n * xs[0] + (c0 + c) * xs[1] + h * xs[2] + x * xs[3]] *
                                       in[1][k * ws[0] + c * ws[1] + r * ws[2] + s * ws[3]];
                            }
                    out[0][n * ys[0] + k * ys[1] + p * ys[2] + q * ys[3]] = acc;
                }
}

static void conv2d_cpu(const double *const *in, const kg_shape *s, const kgate_params *p, double *const *out)
{
    (void)p; /* stride, pad, groups: the same values, read from the shape */
    kg_conv2d_cpu(0, in, s, out);
}

/* w [K, C/G, R, S] and y [N, K, P, Q] */
static void conv2d_w_ext(const kg_shape *s, int64_t *e)
{
    e[0] = s->d[KG_CV_K];
    e[1] = kg_conv_cg(s);
    e[2] = s->d[KG_CV_R];
    e[3] = s->d[KG_CV_S];
}

static void conv2d_y_ext(const kg_shape *s, int64_t *e)
{
    e[0] = s->d[KG_CV_N];
    e[1] = s->d[KG_CV_K];
    e[2] = kg_conv_p(s);
    e[3] = kg_conv_q(s);
}

const kg_op kg_op_conv2d = {
    .name = "conv2d",
    .summary = "y = conv2d(x, w), NCHW, cross-correlation as torch.nn.functional.conv2d "
               "(P = (H+2PAD-R)/STRIDE+1), fp32 accumulate",
    .family = KG_FAMILY_CONVOLUTION,
    .dims = KG_CONV2D_DIMS,
    .n_dims = KG_CV_DIMS,
    .dtypes = {KG_FP16, KG_BF16},
    .n_dtypes = 2,
    .n_suite_dtypes = 2,
    .presets = KG_CONV2D_PRESETS,
    .n_presets = KG_CONV2D_N_PRESETS,
    .n_inputs = 2,
    .n_outputs = 1,
    .in = {{.name = "x", .rank = 4, .dim = {KG_CV_N, KG_CV_C, KG_CV_H, KG_CV_W}, .lo = -1.0, .hi = 1.0},
           {.name = "w", .rank = 4, .lo = -1.0, .hi = 1.0, .derive = conv2d_w_ext,
            .derived_names = "K,C/GROUPS,R,S"}},
    .out = {{.name = "y", .rank = 4, .derive = conv2d_y_ext, .derived_names = "N,K,P,Q"}},
    .scalars = KG_CONV2D_SCALARS,
    .n_scalars = 3,
    .bound_extent = KG_CONV2D_BOUND,
    .dists = KG_D(WIDE),
    .reduction = 0,
    .tol_rms = 1,
    .unit = KG_UNIT_TENSOR,
    .min_rows = 6,
    .work = kg_conv2d_work,
    .check_shape = kg_conv2d_check_shape,
    .cpu_reference = conv2d_cpu,
    .reference = kg_conv2d_reference,
    .baselines = {"cudnn-conv"},
    .fast = "v3",
    .needs = {{"v3", "90a", "wgmma, TMA"}},
    .edge_semantics = "rows of x (W values of one image row of one channel) with NaN give NaN in every "
                      "output whose window meets them; +-Inf give signed Inf there (NaN where opposite "
                      "infinities meet or an Inf meets a zero weight); equal and denormal rows are "
                      "ordinary values",
    /* x = [[1,2,3],[4,5,6],[7,8,9]], w = [[1,2],[3,4]], stride 2, pad 1:
     * the windows start at rows -1, 1 and columns -1, 1, so
     * y[0,0] = 1.4 = 4; y[0,1] = 2.3 + 3.4 = 18; y[1,0] = 4.2 + 7.4 = 36;
     * y[1,1] = 5.1 + 6.2 + 8.3 + 9.4 = 77 */
    .example = {{KG_CV_DIMS, {1, 1, 3, 3, 1, 2, 2, 2, 1, 1}},
                {(const double[]){1, 2, 3, 4, 5, 6, 7, 8, 9}, (const double[]){1, 2, 3, 4}},
                {(const double[]){4, 18, 36, 77}}},
};
