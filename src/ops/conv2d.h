/* What conv2d (NCHW, src/ops/conv2d.c) and conv2d_nhwc (src/ops/conv2d_nhwc.c)
 * share: the shape and its rule, the bound scalars, the presets, the work
 * model and the CPU reference (defined in conv2d.c).
 *
 * The shape holds the whole geometry, ten extents in this order:
 *     N x C x H x W x K x R x S x STRIDE x PAD x GROUPS
 * x is [N,C,H,W] (NHWC: [N,H,W,C]), w is [K, C/GROUPS, R, S] (NHWC:
 * [K, R, S, C/GROUPS]), y is [N,K,P,Q] (NHWC: [N,P,Q,K]) with
 *     P = (H + 2 PAD - R) / STRIDE + 1,  Q = (W + 2 PAD - S) / STRIDE + 1.
 * Output extents depend on stride and padding, and kgate sizes tensors from
 * the shape alone, so they are extents of the shape, not free scalars; the
 * kernels read them as the bound scalars stride, pad and groups (op.h:
 * kg_op.bound_extent), which the worker sets from each shape it runs.
 *
 * The rule (kg_conv2d_check_shape): every extent but PAD at least 1, PAD at
 * least 0; GROUPS divides C and K; PAD below both filter extents (a larger
 * one makes windows of padding alone); the filter fits the padded input
 * (else there is no output). */
#ifndef KG_OPS_CONV2D_H
#define KG_OPS_CONV2D_H

#include "../catalog/op.h"

/* The extents of a convolution shape, by index. */
enum {
    KG_CV_N,
    KG_CV_C,
    KG_CV_H,
    KG_CV_W,
    KG_CV_K,
    KG_CV_R,
    KG_CV_S,
    KG_CV_STRIDE,
    KG_CV_PAD,
    KG_CV_GROUPS,
    KG_CV_DIMS
};
#define KG_CONV2D_DIMS "NxCxHxWxKxRxSxSTRIDExPADxGROUPS"

/* Output height (width): (in + 2 pad - filter) / stride + 1; 1 when the
 * filter does not fit, a shape kg_conv2d_check_shape refuses (so that a
 * derived extent is never 0 or negative). */
static inline int64_t kg_conv_out(int64_t in, int64_t filter, int64_t stride, int64_t pad)
{
    int64_t span = in + 2 * pad - filter;
    return span < 0 || stride < 1 ? 1 : span / stride + 1;
}

static inline int64_t kg_conv_p(const kg_shape *s)
{
    return kg_conv_out(s->d[KG_CV_H], s->d[KG_CV_R], s->d[KG_CV_STRIDE], s->d[KG_CV_PAD]);
}

static inline int64_t kg_conv_q(const kg_shape *s)
{
    return kg_conv_out(s->d[KG_CV_W], s->d[KG_CV_S], s->d[KG_CV_STRIDE], s->d[KG_CV_PAD]);
}

/* Input channels a group sees (C / GROUPS; C when GROUPS is not yet valid). */
static inline int64_t kg_conv_cg(const kg_shape *s)
{
    int64_t g = s->d[KG_CV_GROUPS];
    return g >= 1 && s->d[KG_CV_C] % g == 0 ? s->d[KG_CV_C] / g : s->d[KG_CV_C];
}

/* The scalars both operators bind to their shape (kg_op.bound_extent): a
 * kernel reads them (and must declare "stride,pad,groups"); nobody sets
 * them with --param. */
#define KG_CONV2D_SCALARS                                                          \
    {{.name = "stride", .def = 1, .alt = NAN, .required = 1, .integer = 1,         \
      .doc = "the window's step in both spatial extents"},                         \
     {.name = "pad", .def = 1, .alt = NAN, .required = 1, .integer = 1,            \
      .doc = "zero padding on each side, both spatial extents"},                   \
     {.name = "groups", .def = 1, .alt = NAN, .required = 1, .integer = 1,         \
      .doc = "channel groups (C = K = GROUPS: depthwise)"}}
#define KG_CONV2D_BOUND {1 + KG_CV_STRIDE, 1 + KG_CV_PAD, 1 + KG_CV_GROUPS}

/* The presets of both: the paper artifact's large shape (x 32x256x128x128,
 * w 256x256x3x3, stride 1, pad 1), its filters from 1x1 to 7x7, depthwise
 * and strided variants at that size, and two smaller 3x3 shapes. */
#define KG_CONV2D_PRESETS                                                 \
    {{"small", {KG_CV_DIMS, {8, 64, 56, 56, 64, 3, 3, 1, 1, 1}}},         \
     {"medium", {KG_CV_DIMS, {16, 128, 64, 64, 128, 3, 3, 1, 1, 1}}},     \
     {"large", {KG_CV_DIMS, {32, 256, 128, 128, 256, 3, 3, 1, 1, 1}}},    \
     {"f1x1", {KG_CV_DIMS, {32, 256, 128, 128, 256, 1, 1, 1, 0, 1}}},     \
     {"f5x5", {KG_CV_DIMS, {32, 256, 128, 128, 256, 5, 5, 1, 2, 1}}},     \
     {"f7x7", {KG_CV_DIMS, {32, 256, 128, 128, 256, 7, 7, 1, 3, 1}}},     \
     {"dw", {KG_CV_DIMS, {32, 256, 128, 128, 256, 3, 3, 1, 1, 256}}},     \
     {"s2", {KG_CV_DIMS, {32, 256, 128, 128, 256, 3, 3, 2, 1, 1}}}}
#define KG_CONV2D_N_PRESETS 8

/* op->check_shape of both operators (the rule above). With repair, moves s
 * to a valid shape near it: extents below their minimum raised to it,
 * GROUPS cut to gcd(GROUPS, C, K), PAD cut below the smaller filter extent,
 * each filter extent cut to fit the padded input. */
int kg_conv2d_check_shape(const kg_op *op, kg_shape *s, int repair, char *why, size_t why_size);

/* Work: x and w read once, y written once; 2 N K P Q (C/GROUPS) R S FLOPs. */
void kg_conv2d_work(const kg_op *op, const kg_shape *s, kg_types t, kg_work *w);

/* The CPU fp64 reference in either layout; the geometry comes from the
 * shape (the bound scalars repeat it). nhwc: x, w, y in NHWC / KRSC. */
void kg_conv2d_cpu(int nhwc, const double *const *in, const kg_shape *s, double *const *out);

#endif
