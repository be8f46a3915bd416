/* conv2d and conv2d_nhwc on the CPU: shapes (stride, padding and groups
 * live in the shape; bad ones are refused with one line naming the
 * problem; random extra shapes are repaired into valid ones), the derived
 * extents and work model with stride and padding, the bound scalars, and
 * the CPU reference's groups (depthwise included) and layouts checked
 * against each other. The Hopper kernel v3 (kernels/conv2d.cu) emulated on
 * the host with its own index functions (kernels/conv2d_v3.h): which
 * geometries it takes, and that its tiles, TMA boxes and stores compute the
 * convolution. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "catalog/op.h"
#include "ops/conv2d.h"

#include "../kernels/conv2d_v3.h"

static const kg_op *nchw(void) { return kg_op_find("conv2d"); }
static const kg_op *nhwc(void) { return kg_op_find("conv2d_nhwc"); }

static kg_shape shape_of(const int64_t *d)
{
    kg_shape s = {KG_CV_DIMS, {0}};
    memcpy(s.d, d, sizeof(int64_t) * KG_CV_DIMS);
    return s;
}

static void parsed_shapes_and_extents(void **state)
{
    (void)state;
    kg_shape s;
    kg_err e = {0, ""};
    int64_t ext[KG_MAX_RANK];
    assert_int_equal(kg_shape_parse(nchw(), "large", &s, &e), 0);
    assert_int_equal(kg_tensor_extents(&nchw()->out[0], &s, ext), 32LL * 256 * 128 * 128);
    assert_true(ext[2] == 128 && ext[3] == 128);
    assert_int_equal(kg_shape_parse(nchw(), "s2", &s, &e), 0);
    kg_tensor_extents(&nchw()->out[0], &s, ext);
    assert_true(ext[0] == 32 && ext[1] == 256 && ext[2] == 64 && ext[3] == 64);
    assert_int_equal(kg_shape_parse(nchw(), "dw", &s, &e), 0);
    kg_tensor_extents(&nchw()->in[1], &s, ext); /* w [K, C/G, R, S] */
    assert_true(ext[0] == 256 && ext[1] == 1 && ext[2] == 3 && ext[3] == 3);
    kg_tensor_extents(&nhwc()->in[1], &s, ext); /* w [K, R, S, C/G] */
    assert_true(ext[0] == 256 && ext[1] == 3 && ext[2] == 3 && ext[3] == 1);
    /* padding 0 is an extent of 0, which this operator admits */
    assert_int_equal(kg_shape_parse(nchw(), "2x8x5x7x4x1x1x1x0x1", &s, &e), 0);
    assert_true(s.d[KG_CV_PAD] == 0);
    kg_tensor_extents(&nhwc()->out[0], &s, ext); /* y [N, P, Q, K] */
    assert_true(ext[0] == 2 && ext[1] == 5 && ext[2] == 7 && ext[3] == 4);
    /* every preset of both is valid */
    for (int k = 0; k < nchw()->n_presets; k++) {
        kg_err e2 = {0, ""};
        assert_int_equal(kg_shape_check(nhwc(), &nchw()->presets[k].shape, &e2), 0);
    }
}

/* Bad shapes: exit code KG_EXIT_USAGE and one line that names the problem. */
static void bad_shapes_are_refused(void **state)
{
    (void)state;
    static const struct {
        const char *text, *says;
    } bad[] = {
        {"1x8x4x4x8x3x3x0x1x1", "stride 0"},
        {"1x8x4x4x8x3x3x1x3x1", "padding 3 is not below the 3x3 filter"},
        {"1x8x4x4x8x1x1x1x1x1", "padding 1 is not below the 1x1 filter"},
        {"1x8x2x2x8x7x7x1x1x1", "the 7x7 filter does not fit the 2x2 input padded by 1"},
        {"1x8x4x4x6x3x3x1x1x4", "4 groups do not divide"},
        {"1x8x4x4x8x3x3x1x1x0", "extent GROUPS is 0"},
        {"0x8x4x4x8x3x3x1x1x1", "extent N is 0"},
        {"1x8x4x4x8x3x3x1x1", "NxCxHxWxKxRxSxSTRIDExPADxGROUPS"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kg_shape s;
        kg_err e = {0, ""};
        assert_int_equal(kg_shape_parse(nchw(), bad[i].text, &s, &e), KG_EXIT_USAGE);
        if (!strstr(e.msg, bad[i].says) || strchr(e.msg, '\n'))
            fail_msg("%s: '%s' does not say '%s' in one line", bad[i].text, e.msg, bad[i].says);
    }
    /* a job read back by the worker passes the same rule */
    kg_shape s = shape_of((const int64_t[]){1, 8, 4, 4, 8, 3, 3, 1, 3, 1});
    kg_err e = {0, ""};
    assert_int_equal(kg_shape_check(nhwc(), &s, &e), KG_EXIT_USAGE);
    assert_non_null(strstr(e.msg, "conv2d_nhwc"));
}

/* flops = 2 N K P Q (C/G) R S; bytes = x + w + y once. */
static void work_model_with_stride_and_padding(void **state)
{
    (void)state;
    /* N2 C6 H9 W11 K4 R3 S5 stride 2 pad 1 groups 2: P = (9+2-3)/2+1 = 5,
     * Q = (11+2-5)/2+1 = 5, C/G = 3 */
    kg_shape s = shape_of((const int64_t[]){2, 6, 9, 11, 4, 3, 5, 2, 1, 2});
    kg_types fp16 = {KG_FP16, KG_I64};
    kg_work w;
    kg_err e = {0, ""};
    assert_int_equal(kg_shape_check(nchw(), &s, &e), 0);
    for (int l = 0; l < 2; l++) {
        kg_op_work(l ? nhwc() : nchw(), &s, fp16, &w);
        assert_true(w.flops == 2.0 * 2 * 4 * 5 * 5 * 3 * 3 * 5);
        assert_true(w.bytes_read == (2.0 * 6 * 9 * 11 + 4 * 3 * 3 * 5) * 2);
        assert_true(w.bytes_written == 2.0 * 4 * 5 * 5 * 2);
        assert_true(w.bytes == w.bytes_read + w.bytes_written);
    }
    /* the paper artifact's large shape */
    kg_op_work(nchw(), &kg_preset_find(nchw(), "large")->shape, fp16, &w);
    assert_true(w.flops == 2.0 * 32 * 256 * 128 * 128 * 256 * 9);
    kg_op_work(nchw(), &kg_preset_find(nchw(), "dw")->shape, fp16, &w);
    assert_true(w.flops == 2.0 * 32 * 256 * 128 * 128 * 1 * 9);
}

/* stride, pad and groups come from the shape; --param refuses them. */
static void bound_scalars(void **state)
{
    (void)state;
    kg_scalars sc;
    kg_err e = {0, ""};
    kg_scalars_default(nchw(), &sc);
    kg_scalars_bind(nchw(), &kg_preset_find(nchw(), "s2")->shape, &sc);
    assert_int_equal(sc.n, 3);
    assert_true(sc.v[0].value == 2 && sc.v[1].value == 1 && sc.v[2].value == 1);
    kg_scalars_bind(nchw(), &kg_preset_find(nchw(), "f1x1")->shape, &sc);
    assert_true(sc.v[0].value == 1 && sc.v[1].value == 0 && sc.v[2].value == 1);
    kg_scalars_bind(nchw(), &kg_preset_find(nchw(), "dw")->shape, &sc);
    assert_true(sc.v[2].value == 256);
    assert_int_equal(kg_scalars_set(nchw(), &sc, "stride=2", &e), KG_EXIT_USAGE);
    assert_non_null(strstr(e.msg, "give it in --shape"));
    /* a trial never varies them */
    kg_scalars trial;
    kg_scalars_for_trial(nchw(), &sc, 1, &trial);
    assert_memory_equal(&trial, &sc, sizeof sc);
    /* a kernel must say it reads all three */
    kg_err e2 = {0, ""};
    assert_int_equal(kg_op_check_scalars(nhwc(), "k", "stride,pad,groups", &e2), 0);
    assert_int_equal(kg_op_check_scalars(nhwc(), "k", "stride,pad", &e2), KG_EXIT_CANDIDATE);
    assert_non_null(strstr(e2.msg, "'groups'"));
}

/* The unaligned, tiny and unnamed shapes are valid after repair, and over
 * many seeds the tiny ones reach strides, groups and padding above 1. */
static void extra_shapes_are_valid(void **state)
{
    (void)state;
    int strided = 0, grouped = 0, padded = 0;
    for (unsigned long long seed = 1; seed <= 300; seed++) {
        kg_shape x[3];
        assert_int_equal(kg_extra_shapes(nchw(), seed, x), 3);
        for (int k = 0; k < 3; k++) {
            kg_err e = {0, ""};
            if (kg_shape_check(nchw(), &x[k], &e))
                fail_msg("seed %llu, extra shape %d: %s", seed, k, e.msg);
        }
        for (int d = 0; d < KG_CV_DIMS; d++)
            assert_true(x[1].d[d] >= 0 && x[1].d[d] <= 7);
        strided += x[1].d[KG_CV_STRIDE] > 1;
        grouped += x[1].d[KG_CV_GROUPS] > 1;
        padded += x[1].d[KG_CV_PAD] > 1;
        /* the unaligned one keeps odd channel counts (no multiple of 8) */
        assert_true(x[0].d[KG_CV_C] % 2 == 1 && x[0].d[KG_CV_K] % 2 == 1);
    }
    assert_true(strided > 30 && grouped > 10 && padded > 10);
    /* repair moves a bad shape to a valid one near it */
    kg_shape s = shape_of((const int64_t[]){1, 6, 2, 3, 4, 7, 5, 0, 9, 4});
    char why[300];
    assert_int_equal(nchw()->check_shape(nchw(), &s, 1, why, sizeof why), 0);
    assert_true(s.d[KG_CV_STRIDE] == 1 && s.d[KG_CV_GROUPS] == 2 && s.d[KG_CV_PAD] == 4);
    assert_true(s.d[KG_CV_R] == 7 && s.d[KG_CV_S] == 5); /* 7 <= 2 + 8, 5 <= 3 + 8 */
}

static double *random_array(size_t n, unsigned *seed)
{
    double *a = malloc(n * sizeof *a);
    for (size_t i = 0; i < n; i++) {
        *seed = *seed * 1103515245u + 12345u;
        a[i] = (double)((*seed >> 8) % 2001) / 1000.0 - 1.0;
    }
    return a;
}

static double *run_ref(const kg_op *op, const kg_shape *s, const double *x, const double *w)
{
    int64_t ext[KG_MAX_RANK];
    double *y = calloc((size_t)kg_tensor_extents(&op->out[0], s, ext), sizeof *y);
    const double *in[2] = {x, w};
    double *out[1] = {y};
    op->cpu_reference(in, s, NULL, out);
    return y;
}

static void assert_close(const double *a, const double *b, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (fabs(a[i] - b[i]) > 1e-12 * fmax(1.0, fabs(b[i])))
            fail_msg("[%lld]: %.17g vs %.17g", (long long)i, a[i], b[i]);
}

/* A grouped convolution is the ungrouped one with a block-diagonal filter:
 * output channel k sees only the input channels of its group. Depthwise
 * (C = K = G) is the per-channel convolution. */
static void groups_are_block_diagonal(void **state)
{
    (void)state;
    static const int64_t cases[][KG_CV_DIMS] = {
        {2, 4, 6, 5, 6, 3, 3, 2, 1, 2},  /* 2 groups: 2 input, 3 output channels each */
        {2, 3, 5, 4, 3, 3, 3, 1, 1, 3},  /* depthwise */
        {1, 6, 7, 7, 12, 5, 3, 3, 2, 6}, /* depthwise with a channel multiplier of 2 */
    };
    unsigned seed = 7;
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        kg_shape g = shape_of(cases[t]), full = g;
        kg_err e = {0, ""};
        int64_t ext[KG_MAX_RANK];
        const int64_t C = g.d[KG_CV_C], K = g.d[KG_CV_K], RS = g.d[KG_CV_R] * g.d[KG_CV_S];
        const int64_t G = g.d[KG_CV_GROUPS], Cg = C / G, Kg = K / G;
        full.d[KG_CV_GROUPS] = 1;
        assert_int_equal(kg_shape_check(nchw(), &g, &e), 0);
        double *x = random_array((size_t)kg_tensor_extents(&nchw()->in[0], &g, ext), &seed);
        double *w = random_array((size_t)(K * Cg * RS), &seed);
        double *wf = calloc((size_t)(K * C * RS), sizeof *wf);
        for (int64_t k = 0; k < K; k++)
            for (int64_t c = 0; c < Cg; c++)
                for (int64_t i = 0; i < RS; i++)
                    wf[(k * C + k / Kg * Cg + c) * RS + i] = w[(k * Cg + c) * RS + i];
        double *yg = run_ref(nchw(), &g, x, w), *yf = run_ref(nchw(), &full, x, wf);
        assert_close(yg, yf, kg_tensor_extents(&nchw()->out[0], &g, ext));
        free(x);
        free(w);
        free(wf);
        free(yg);
        free(yf);
    }
}

/* NCHW and NHWC give the same convolution of the same data. */
static void layouts_agree(void **state)
{
    (void)state;
    kg_shape s = shape_of((const int64_t[]){2, 4, 7, 6, 6, 3, 2, 2, 1, 2});
    int64_t ext[KG_MAX_RANK];
    unsigned seed = 11;
    const int64_t N = 2, C = 4, H = 7, W = 6, K = 6, R = 3, S = 2, Cg = 2;
    const int64_t P = kg_conv_p(&s), Q = kg_conv_q(&s);
    double *x = random_array((size_t)(N * C * H * W), &seed), *w = random_array((size_t)(K * Cg * R * S), &seed);
    double *xl = malloc(sizeof(double) * (size_t)(N * C * H * W)), *wl = malloc(sizeof(double) * (size_t)(K * Cg * R * S));
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t v = 0; v < W; v++)
                    xl[((n * H + h) * W + v) * C + c] = x[((n * C + c) * H + h) * W + v];
    for (int64_t k = 0; k < K; k++)
        for (int64_t c = 0; c < Cg; c++)
            for (int64_t r = 0; r < R; r++)
                for (int64_t q = 0; q < S; q++)
                    wl[((k * R + r) * S + q) * Cg + c] = w[((k * Cg + c) * R + r) * S + q];
    double *y = run_ref(nchw(), &s, x, w), *yl = run_ref(nhwc(), &s, xl, wl);
    assert_int_equal(kg_tensor_extents(&nhwc()->out[0], &s, ext), N * K * P * Q);
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++)
            for (int64_t p = 0; p < P; p++)
                for (int64_t q = 0; q < Q; q++) {
                    double a = y[((n * K + k) * P + p) * Q + q], b = yl[((n * P + p) * Q + q) * K + k];
                    if (fabs(a - b) > 1e-12)
                        fail_msg("y[%lld,%lld,%lld,%lld]: NCHW %.17g, NHWC %.17g", (long long)n, (long long)k,
                                 (long long)p, (long long)q, a, b);
                }
    free(x);
    free(w);
    free(xl);
    free(wl);
    free(y);
    free(yl);
}

static int v3_plan(const int64_t *d, cv3_plan *pl)
{
    return cv3_plan_make(d[KG_CV_N], d[KG_CV_C], d[KG_CV_H], d[KG_CV_W], d[KG_CV_K], d[KG_CV_R], d[KG_CV_S],
                         d[KG_CV_STRIDE], d[KG_CV_PAD], d[KG_CV_GROUPS], pl);
}

/* v3 takes the presets whose tiles are whole rows of C % 64, K % 128
 * convolutions, and leaves the rest to v2. */
static void v3_plan_takes(void **state)
{
    (void)state;
    static const struct {
        const char *preset;
        int takes, BN, BW, BH, KT, tiles;
    } want[] = {
        {"small", 0, 0, 0, 0, 0, 0}, /* Q = 56, K = 64 */
        {"medium", 1, 128, 64, 2, 18, 16 * 64 * 64 / 128},
        {"large", 1, 256, 128, 1, 36, 32 * 128 * 128 / 128},
        {"f1x1", 1, 256, 128, 1, 4, 32 * 128 * 128 / 128},
        {"f5x5", 1, 256, 128, 1, 100, 32 * 128 * 128 / 128},
        {"f7x7", 1, 256, 128, 1, 196, 32 * 128 * 128 / 128},
        {"dw", 0, 0, 0, 0, 0, 0}, /* groups */
        {"s2", 1, 256, 64, 2, 36, 32 * 64 * 64 / 128},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const kg_preset *pr = kg_preset_find(nchw(), want[i].preset);
        assert_non_null(pr);
        cv3_plan pl;
        int takes = v3_plan(pr->shape.d, &pl);
        if (takes != want[i].takes)
            fail_msg("%s: v3 %s it", want[i].preset, takes ? "takes" : "refuses");
        if (!takes)
            continue;
        assert_true(pl.BN == want[i].BN && pl.BW == want[i].BW && pl.BH == want[i].BH);
        assert_true(pl.KT == want[i].KT && pl.tiles == want[i].tiles);
        assert_true(pl.P == kg_conv_p(&pr->shape) && pl.Q == kg_conv_q(&pr->shape));
    }
    static const int64_t refused[][KG_CV_DIMS] = {
        {1, 32, 8, 128, 128, 3, 3, 1, 1, 1},  /* C % 64 */
        {1, 64, 8, 128, 64, 3, 3, 1, 1, 1},   /* K % 128 */
        {1, 64, 8, 96, 128, 3, 3, 1, 1, 1},   /* Q = 96: neither a multiple nor a divisor of 128 */
        {1, 64, 3, 64, 128, 3, 3, 1, 1, 1},   /* Q = 64 but P = 3 is not a multiple of 2 rows */
        {1, 128, 8, 128, 128, 3, 3, 1, 1, 2}, /* groups */
        {1, 64, 20, 1152, 128, 3, 3, 9, 1, 1}, /* stride 9: TMA strides stop at 8 */
        {1, 64, 8, 768, 128, 3, 3, 3, 1, 1},  /* Q = 256, stride 3: a 384-element box */
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        cv3_plan pl;
        if (v3_plan(refused[i], &pl))
            fail_msg("refused case %zu: v3 takes it", i);
    }
}

/* Runs v3 on the host: every tile, every reduction step, the A box read as
 * a TMA tiled load reads it (the map's extents and byte strides, the box
 * traversed innermost first with its element strides, ceil(box / stride)
 * elements a dimension, zeros outside the tensor), the B box from the
 * filter as [K][R S C], the product accumulated in double and stored where
 * cv3_y_index puts it; then every output written once and equal to the
 * direct convolution. The kernel's operands are x channels-last and w
 * KRSC: NCHW inputs are transposed first, as the kernel's copy does. */
static void v3_emulate(int is_nchw, const int64_t *d, unsigned *seed)
{
    kg_shape s = shape_of(d);
    kg_err e = {0, ""};
    cv3_plan pl;
    assert_int_equal(kg_shape_check(nchw(), &s, &e), 0);
    assert_int_equal(v3_plan(d, &pl), 1);
    const int64_t N = d[KG_CV_N], C = d[KG_CV_C], H = d[KG_CV_H], W = d[KG_CV_W], K = d[KG_CV_K];
    const int64_t R = d[KG_CV_R], S = d[KG_CV_S], P = kg_conv_p(&s), Q = kg_conv_q(&s), RSC = R * S * C;
    assert_true(pl.P == P && pl.Q == Q);
    double *x = random_array((size_t)(N * C * H * W), seed), *w = random_array((size_t)(K * RSC), seed);
    double *xl = x, *wl = w;
    if (is_nchw) {
        xl = malloc(sizeof(double) * (size_t)(N * C * H * W));
        wl = malloc(sizeof(double) * (size_t)(K * RSC));
        for (int64_t n = 0; n < N; n++)
            for (int64_t c = 0; c < C; c++)
                for (int64_t i = 0; i < H * W; i++)
                    xl[(n * H * W + i) * C + c] = x[(n * C + c) * H * W + i];
        for (int64_t k = 0; k < K; k++)
            for (int64_t c = 0; c < C; c++)
                for (int64_t i = 0; i < R * S; i++)
                    wl[(k * R * S + i) * C + c] = w[(k * C + c) * R * S + i];
    }
    uint64_t dims[4], str[3];
    uint32_t box[4], estr[4], cnt[4];
    cv3_x_map(pl, dims, str, box, estr);
    assert_true(box[0] * 2 == 128); /* one 128-byte swizzle row a pixel */
    for (int i = 0; i < 4; i++) {
        assert_true(box[i] >= 1 && box[i] <= 256 && estr[i] >= 1 && estr[i] <= 8);
        cnt[i] = i == 0 ? box[0] : (box[i] + estr[i] - 1) / estr[i]; /* TMA ignores estr[0] */
        assert_true(str[i < 3 ? i : 2] % 16 == 0);
    }
    /* the box fills the [128][64] A tile, and the stage's byte count is both boxes */
    assert_true(cnt[0] * cnt[1] * cnt[2] * cnt[3] == CV3_BM * CV3_BK);
    assert_true(cv3_stage_bytes(pl.BN) == (uint32_t)(cnt[0] * cnt[1] * cnt[2] * cnt[3] + pl.BN * CV3_BK) * 2);
    const int64_t ny = N * K * P * Q;
    double *y = calloc((size_t)ny, sizeof *y), *A = malloc(sizeof(double) * CV3_BM * CV3_BK);
    double *B = malloc(sizeof(double) * (size_t)pl.BN * CV3_BK), *acc = malloc(sizeof(double) * CV3_BM * (size_t)pl.BN);
    int *hits = calloc((size_t)ny, sizeof *hits);
    assert_true((int64_t)pl.tiles * CV3_BM * pl.BN == ny);
    for (int t = 0; t < pl.tiles; t++) {
        const cv3_tile tl = cv3_tile_of(pl, t);
        memset(acc, 0, sizeof(double) * CV3_BM * (size_t)pl.BN);
        for (int kt = 0; kt < pl.KT; kt++) {
            int ca[4], cb[2];
            cv3_a_coord(pl, tl, kt, ca);
            cv3_b_coord(pl, tl, kt, cb);
            for (int idx = 0; idx < CV3_BM * CV3_BK; idx++) {
                const int64_t i0 = idx % cnt[0], i1 = idx / cnt[0] % cnt[1];
                const int64_t i2 = idx / (cnt[0] * cnt[1]) % cnt[2], i3 = idx / (cnt[0] * cnt[1] * cnt[2]);
                const int64_t co[4] = {ca[0] + i0, ca[1] + i1 * estr[1], ca[2] + i2 * estr[2], ca[3] + i3 * estr[3]};
                int in = 1;
                for (int j = 0; j < 4; j++)
                    in &= co[j] >= 0 && co[j] < (int64_t)dims[j];
                A[idx] = in ? xl[(co[0] * 2 + co[1] * (int64_t)str[0] + co[2] * (int64_t)str[1] +
                                  co[3] * (int64_t)str[2]) / 2]
                            : 0.0;
            }
            assert_true(cb[0] >= 0 && cb[0] + CV3_BK <= RSC && cb[1] >= 0 && cb[1] + pl.BN <= K);
            for (int nl = 0; nl < pl.BN; nl++)
                for (int c = 0; c < CV3_BK; c++)
                    B[nl * CV3_BK + c] = wl[(cb[1] + nl) * RSC + cb[0] + c];
            for (int ml = 0; ml < CV3_BM; ml++)
                for (int nl = 0; nl < pl.BN; nl++) {
                    double sum = 0;
                    for (int c = 0; c < CV3_BK; c++)
                        sum += A[ml * CV3_BK + c] * B[nl * CV3_BK + c];
                    acc[ml * pl.BN + nl] += sum;
                }
        }
        for (int ml = 0; ml < CV3_BM; ml++)
            for (int nl = 0; nl < pl.BN; nl++) {
                const int64_t at = cv3_y_index(pl, tl, is_nchw, ml, nl);
                assert_true(at >= 0 && at < ny);
                y[at] = acc[ml * pl.BN + nl];
                hits[at]++;
                /* the epilogue's 16-byte vectors: 8 channels (NHWC) or 8
                 * pixels (NCHW) from an 8-aligned index, contiguous in y */
                if ((is_nchw ? ml : nl) % 8 == 0) {
                    assert_true(at % 8 == 0);
                    for (int v = 1; v < 8; v++)
                        assert_true(cv3_y_index(pl, tl, is_nchw, is_nchw ? ml + v : ml, is_nchw ? nl : nl + v) ==
                                    at + v);
                }
            }
    }
    double *ref = run_ref(is_nchw ? nchw() : nhwc(), &s, x, w);
    for (int64_t i = 0; i < ny; i++) {
        if (hits[i] != 1)
            fail_msg("%s %lld: y[%lld] written %d times", is_nchw ? "NCHW" : "NHWC", (long long)d[KG_CV_W],
                     (long long)i, hits[i]);
        if (fabs(y[i] - ref[i]) > 1e-9 * fmax(1.0, fabs(ref[i])))
            fail_msg("%s, shape %lldx%lldx%lldx%lldx%lldx%lldx%lldx%lld: y[%lld] = %.17g, direct %.17g",
                     is_nchw ? "NCHW" : "NHWC", (long long)N, (long long)C, (long long)H, (long long)W, (long long)K,
                     (long long)R, (long long)S, (long long)d[KG_CV_STRIDE], (long long)i, y[i], ref[i]);
    }
    if (is_nchw) {
        free(xl);
        free(wl);
    }
    free(x);
    free(w);
    free(y);
    free(A);
    free(B);
    free(acc);
    free(hits);
    free(ref);
}

static void v3_emulated_matches_direct(void **state)
{
    (void)state;
    static const int64_t cases[][KG_CV_DIMS] = {
        {2, 64, 16, 16, 128, 3, 3, 1, 1, 1},  /* 8 rows of 16 a tile */
        {1, 64, 3, 128, 256, 3, 3, 1, 1, 1},  /* a row a tile, BN 256 */
        {1, 64, 2, 256, 128, 3, 3, 1, 1, 1},  /* two tiles a row */
        {2, 64, 32, 32, 128, 3, 3, 2, 1, 1},  /* stride 2, 8 rows of 16 */
        {1, 64, 4, 256, 128, 3, 3, 2, 1, 1},  /* stride 2, a 256-element box of 128 */
        {1, 64, 2, 512, 128, 3, 3, 2, 1, 1},  /* stride 2, two tiles a row (q0 = 128) */
        {1, 64, 48, 24, 128, 3, 3, 3, 0, 1},  /* stride 3, 16 rows of 8 */
        {2, 128, 8, 16, 128, 1, 1, 1, 0, 1},  /* 1x1, two channel blocks */
        {1, 64, 8, 32, 128, 5, 5, 1, 2, 1},   /* 5x5 */
        {1, 64, 4, 32, 128, 7, 7, 1, 3, 1},   /* 7x7: windows mostly padding */
        {1, 64, 8, 16, 384, 3, 3, 1, 1, 1},   /* three channel tiles of 128 */
        {1, 128, 4, 32, 512, 3, 3, 1, 1, 1},  /* two channel tiles of 256 */
    };
    unsigned seed = 23;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int l = 0; l < 2; l++)
            v3_emulate(l, cases[i], &seed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parsed_shapes_and_extents), cmocka_unit_test(bad_shapes_are_refused),
        cmocka_unit_test(work_model_with_stride_and_padding), cmocka_unit_test(bound_scalars),
        cmocka_unit_test(extra_shapes_are_valid), cmocka_unit_test(groups_are_block_diagonal),
        cmocka_unit_test(layouts_agree), cmocka_unit_test(v3_plan_takes),
        cmocka_unit_test(v3_emulated_matches_direct),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
