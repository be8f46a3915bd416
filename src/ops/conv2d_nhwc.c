/* conv2d_nhwc: conv2d (src/ops/conv2d.c) with channels last: x [N,H,W,C],
 * w [K,R,S,C/GROUPS] (KRSC), y [N,P,Q,K]; the same shape, rule, presets,
 * work model and CPU reference (conv2d.h), the same cross-correlation. The
 * layout tensor cores and cuDNN's fastest engines prefer: a kernel's
 * im2col tile is C-contiguous. Baseline: cuDNN's graph API convolution
 * forward with NHWC strides (src/gpu/baseline_cudnn_conv.c). GPU
 * reference: conv2d.cu. */
#include "conv2d.h"

int kg_conv2d_nhwc_reference(const DLTensor *in, int n_in, double *const *ref, const kgate_params *p,
                             kgate_stream s);

static void conv2d_nhwc_cpu(const double *const *in, const kg_shape *s, const kgate_params *p,
                            double *const *out)
{
    (void)p; /* stride, pad, groups: the same values, read from the shape */
    kg_conv2d_cpu(1, in, s, out);
}

/* w [K, R, S, C/G] and y [N, P, Q, K] */
static void conv2d_nhwc_w_ext(const kg_shape *s, int64_t *e)
{
    e[0] = s->d[KG_CV_K];
    e[1] = s->d[KG_CV_R];
    e[2] = s->d[KG_CV_S];
    e[3] = kg_conv_cg(s);
}

static void conv2d_nhwc_y_ext(const kg_shape *s, int64_t *e)
{
    e[0] = s->d[KG_CV_N];
    e[1] = kg_conv_p(s);
    e[2] = kg_conv_q(s);
    e[3] = s->d[KG_CV_K];
}

const kg_op kg_op_conv2d_nhwc = {
    .name = "conv2d_nhwc",
    .summary = "y = conv2d(x, w), NHWC (w KRSC), cross-correlation as torch.nn.functional.conv2d "
               "in channels_last (P = (H+2PAD-R)/STRIDE+1), fp32 accumulate",
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
    .in = {{.name = "x", .rank = 4, .dim = {KG_CV_N, KG_CV_H, KG_CV_W, KG_CV_C}, .lo = -1.0, .hi = 1.0},
           {.name = "w", .rank = 4, .lo = -1.0, .hi = 1.0, .derive = conv2d_nhwc_w_ext,
            .derived_names = "K,R,S,C/GROUPS"}},
    .out = {{.name = "y", .rank = 4, .derive = conv2d_nhwc_y_ext, .derived_names = "N,P,Q,K"}},
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
    .cpu_reference = conv2d_nhwc_cpu,
    .reference = kg_conv2d_nhwc_reference,
    .baselines = {"cudnn-conv-nhwc"},
    .fast = "v3",
    .needs = {{"v3", "90a", "wgmma, TMA"}},
    .edge_semantics = "rows of x (the C channels of one pixel) with NaN give NaN in every output whose "
                      "window meets them; +-Inf give signed Inf there (NaN where opposite infinities "
                      "meet or an Inf meets a zero weight); equal and denormal rows are ordinary values",
    /* two channels, stride 2, pad 1: channel 0 is [[1,2,3],[4,5,6],[7,8,9]]
     * with the filter [[1,2],[3,4]] (conv2d's example: 4, 18, 36, 77),
     * channel 1 is ten times it with a filter of ones (10, 20+30, 40+70,
     * 50+60+80+90): y = [14, 68, 146, 357]. NHWC interleaves the channels. */
    .example = {{KG_CV_DIMS, {1, 2, 3, 3, 1, 2, 2, 2, 1, 1}},
                {(const double[]){1, 10, 2, 20, 3, 30, 4, 40, 5, 50, 6, 60, 7, 70, 8, 80, 9, 90},
                 (const double[]){1, 1, 2, 1, 3, 1, 4, 1}},
                {(const double[]){14, 68, 146, 357}}},
};
