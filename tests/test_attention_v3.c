/* attention v3 (kernels/attention.cu) on the host: its index math and
 * softmax steps (kernels/attention_v3.h, the functions the kernel calls)
 * drive an emulation of every CTA of a small problem, compared with a direct
 * softmax(Q.K^T / sqrt(D)) . V in double precision.
 *
 * The emulation models the hardware the kernel relies on, as PTX documents
 * it and as the verified GEMMs of kernels/ use it:
 * - a TMA box [128][64] of 2-byte elements lands with the 128-byte swizzle:
 *   byte b of the (1024-aligned) box goes to b ^ (((b >> 7) & 7) << 4);
 * - a wgmma shared-memory descriptor with that swizzle reads, from its start
 *   address, a K-major operand's element (row, k) at start + (row/8) SBO +
 *   (row%8) 128 + 2k, an MN-major one's (k, n) at start + (n/64) LBO +
 *   (k/8) SBO + (k%8) 128 + 2 (n%64), both through the same swizzle;
 * - register fragments as attention_v3.h states (the accumulator and A
 *   layouts; checked here to be bijections, and P's A fragments to be S's
 *   accumulators).
 * What it cannot check: that the hardware really is this model (the GPU
 * test does), the mbarrier protocol, and the fp16/bf16 rounding of P. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../kernels/attention_v3.h"

enum { MAXD = 128, WG = 128 /* threads a warpgroup */ };

/* ---------------------------------------------------------- the model */

/* shared memory as elements, as the kernel's: the Q tile, the K ring, the V ring */
static float smem[(ATT3_BM + 4 * ATT3_BN) * MAXD];

static int k_at(int D, int stage) { return (ATT3_BM + stage * ATT3_BN) * D; }
static int v_at(int D, int stage) { return (ATT3_BM + (2 + stage) * ATT3_BN) * D; }

static unsigned swz(unsigned byte) { return byte ^ (((byte >> 7) & 7u) << 4); }

/* TMA: the [128][64] box at (column col0, row row0) of the row-major
 * [rows][D] tensor src into the box starting at element dst. */
static void tma_box(int dst, const double *src, int D, int row0, int col0)
{
    for (int r = 0; r < 128; r++)
        for (int c = 0; c < 64; c++)
            smem[swz((unsigned)(dst * 2 + r * 128 + c * 2)) / 2] = (float)src[(size_t)(row0 + r) * D + col0 + c];
}

/* A [128][D] tile as the kernel loads it: box b (columns 64b..) at b*128*64. */
static void load_tile(int dst, const double *src, int D, int row0)
{
    for (int b = 0; b < D / 64; b++)
        tma_box(dst + b * 128 * 64, src, D, row0, b * 64);
}

static float kmajor(int start, int row, int k)
{
    return smem[swz((unsigned)(start * 2 + (row / 8) * ATT3_SBO + (row % 8) * 128 + k * 2)) / 2];
}

static float mnmajor(int start, int lbo, int k, int n)
{
    return smem[swz((unsigned)(start * 2 + (n / 64) * lbo + (k / 8) * ATT3_SBO + (k % 8) * 128 + (n % 64) * 2)) / 2];
}

/* wgmma m64nNk16, A and B K-major from descriptors at element offsets
 * a_start and b_start; d[t][i] the accumulators of thread t (N/2 = nregs);
 * accumulate 0: D = A.B (scale-d 0). */
static void wgmma_ss(float (*d)[ATT3_S_REGS], int nregs, int a_start, int b_start, int accumulate)
{
    static double A[64][16], B[16][256];
    for (int m = 0; m < 64; m++)
        for (int k = 0; k < 16; k++)
            A[m][k] = kmajor(a_start, m, k);
    for (int k = 0; k < 16; k++)
        for (int n = 0; n < 2 * nregs; n++)
            B[k][n] = kmajor(b_start, n, k);
    for (int t = 0; t < WG; t++)
        for (int i = 0; i < nregs; i++) {
            const int m = att3_acc_row(t, i), n = att3_acc_col(t, i);
            double acc = accumulate ? d[t][i] : 0;
            for (int k = 0; k < 16; k++)
                acc += A[m][k] * B[k][n];
            d[t][i] = (float)acc;
        }
}

/* wgmma m64nNk16, A from registers (a[t][r][h]), B MN-major from the
 * descriptor at element b_start with leading offset lbo bytes; accumulates. */
static void wgmma_rs(float (*d)[MAXD / 2], int nregs, float (*a)[4][2], int b_start, int lbo)
{
    static double A[64][16], B[16][256];
    int seen[64][16];
    memset(seen, 0, sizeof seen);
    for (int t = 0; t < WG; t++)
        for (int r = 0; r < 4; r++)
            for (int h = 0; h < 2; h++) {
                const int m = att3_a_row(t, r), k = att3_a_col(t, r, h);
                A[m][k] = a[t][r][h];
                seen[m][k]++;
            }
    for (int m = 0; m < 64; m++)
        for (int k = 0; k < 16; k++)
            assert_int_equal(seen[m][k], 1);
    for (int k = 0; k < 16; k++)
        for (int n = 0; n < 2 * nregs; n++)
            B[k][n] = mnmajor(b_start, lbo, k, n);
    for (int t = 0; t < WG; t++)
        for (int i = 0; i < nregs; i++) {
            const int m = att3_acc_row(t, i), n = att3_acc_col(t, i);
            double acc = d[t][i];
            for (int k = 0; k < 16; k++)
                acc += A[m][k] * B[k][n];
            d[t][i] = (float)acc;
        }
}

/* ------------------------------------------------------- the emulation */

typedef struct {
    float s[WG][ATT3_S_REGS];
    float o[WG][MAXD / 2];
    float m_run[WG][2], l_run[WG][2];
    float p[ATT3_BN / 16][WG][4][2]; /* P's A fragments, by k-step */
} wg_state;

static wg_state wgs[2];

/* The kernel's S = Q . K^T of warpgroup cw from K stage ks. */
static void issue_qk(int cw, int D, int ks)
{
    for (int kk = 0; kk < D / 16; kk++)
        wgmma_ss(wgs[cw].s, ATT3_S_REGS, att3_q_off(cw, kk), k_at(D, ks) + att3_k_off(kk), kk > 0);
}

/* The kernel's O += P . V of warpgroup cw from V stage vs. */
static void issue_pv(int cw, int D, int vs)
{
    for (int kk = 0; kk < ATT3_BN / 16; kk++)
        wgmma_rs(wgs[cw].o, D / 2, wgs[cw].p[kk], v_at(D, vs) + att3_v_off(kk), ATT3_V_LBO);
}

/* The kernel's softmax_step for key tile kt, every thread of warpgroup cw
 * (the quad's butterfly max as its two shuffles). */
static void softmax_step(int cw, int D, int qt, int kt, int causal, float sl2)
{
    wg_state *w = &wgs[cw];
    float mx[WG][2], m1[WG][2], alpha[WG][2];
    for (int t = 0; t < WG; t++) {
        if (att3_needs_mask(qt, kt, causal))
            att3_mask(w->s[t], t, cw, qt, kt, causal);
        att3_row_max(w->s[t], w->m_run[t], mx[t]);
    }
    for (int t = 0; t < WG; t++)
        for (int r = 0; r < 2; r++)
            m1[t][r] = fmaxf(mx[t][r], mx[t ^ 1][r]);
    for (int t = 0; t < WG; t++)
        for (int r = 0; r < 2; r++)
            mx[t][r] = fmaxf(m1[t][r], m1[t ^ 2][r]);
    for (int t = 0; t < WG; t++) {
        att3_softmax(w->s[t], mx[t], w->m_run[t], w->l_run[t], alpha[t], sl2);
        att3_rescale(w->o[t], D / 2, alpha[t]);
        for (int kk = 0; kk < ATT3_BN / 16; kk++)
            for (int r = 0; r < 4; r++)
                for (int h = 0; h < 2; h++)
                    w->p[kk][t][r][h] = w->s[t][att3_p_acc(kk, r, h)];
    }
}

/* The producer's copy of key tile kt into stage kt & 1 of both rings. */
static void produce(const double *K, const double *V, int D, int key0, int kt)
{
    load_tile(k_at(D, kt & 1), K, D, key0 + kt * ATT3_BN);
    load_tile(v_at(D, kt & 1), V, D, key0 + kt * ATT3_BN);
}

/* Every CTA of the kernel, one after another, each as the kernel runs it:
 * its turns in order (warpgroup 0's, then 1's), every thread of each; the
 * producer copies a tile into its stage before the turn that first reads it
 * (the stage's previous tile is then consumed). O [bh][S][D]. */
static void emulate(const double *Q, const double *K, const double *V, double *O, int bh_n, int S, int D,
                    int causal)
{
    const int n_qt = S / ATT3_BM, nro = D / 2;
    const float sl2 = (float)(1.4426950408889634 / sqrt((double)D));
    int *written = calloc((size_t)bh_n * S * D, sizeof *written);
    assert_non_null(written);
    for (int block = 0; block < bh_n * n_qt; block++) {
        int bh, qt;
        att3_tile(block, n_qt, &bh, &qt);
        const int n_kt = att3_n_kt(qt, n_qt, causal);
        const int row0 = bh * S + qt * ATT3_BM, key0 = bh * S;
        load_tile(0, Q, D, row0);
        for (int cw = 0; cw < 2; cw++)
            for (int t = 0; t < WG; t++) {
                for (int i = 0; i < nro; i++)
                    wgs[cw].o[t][i] = 0.f;
                wgs[cw].m_run[t][0] = wgs[cw].m_run[t][1] = -INFINITY;
                wgs[cw].l_run[t][0] = wgs[cw].l_run[t][1] = 0.f;
            }
        produce(K, V, D, key0, 0);
        for (int cw = 0; cw < 2; cw++) {
            issue_qk(cw, D, 0);
            softmax_step(cw, D, qt, 0, causal, sl2);
        }
        for (int kt = 0; kt + 1 < n_kt; kt++) {
            produce(K, V, D, key0, kt + 1);
            for (int cw = 0; cw < 2; cw++) {
                issue_pv(cw, D, kt & 1);
                issue_qk(cw, D, (kt + 1) & 1);
                softmax_step(cw, D, qt, kt + 1, causal, sl2);
            }
        }
        for (int cw = 0; cw < 2; cw++)
            issue_pv(cw, D, (n_kt - 1) & 1);
        for (int cw = 0; cw < 2; cw++) {
            wg_state *w = &wgs[cw];
            float l1[WG][2], l2[WG][2];
            for (int t = 0; t < WG; t++)
                for (int r = 0; r < 2; r++)
                    l1[t][r] = w->l_run[t][r] + w->l_run[t ^ 1][r];
            for (int t = 0; t < WG; t++)
                for (int r = 0; r < 2; r++)
                    l2[t][r] = l1[t][r] + l1[t ^ 2][r];
            for (int t = 0; t < WG; t++)
                for (int i = 0; i < nro; i++) {
                    const size_t row = (size_t)row0 + cw * ATT3_WG_ROWS + att3_acc_row(t, i);
                    const int col = att3_acc_col(t, i);
                    O[row * D + col] = w->o[t][i] * (1.f / l2[t][(i >> 1) & 1]);
                    written[row * D + col]++;
                }
        }
    }
    for (size_t e = 0; e < (size_t)bh_n * S * D; e++)
        assert_int_equal(written[e], 1);
    free(written);
}

/* The definition (as src/ops/attention.c's CPU reference): the
 * NaN-propagating max of the visible scores, then exp(s - max). */
static void reference(const double *Q, const double *K, const double *V, double *O, int bh_n, int S, int D,
                      int causal)
{
    const double scale = 1.0 / sqrt((double)D);
    double *sc = malloc(sizeof(double) * S);
    assert_non_null(sc);
    for (int h = 0; h < bh_n; h++)
        for (int i = 0; i < S; i++) {
            const double *q = Q + ((size_t)h * S + i) * D;
            double *o = O + ((size_t)h * S + i) * D;
            const int n = causal ? i + 1 : S;
            double mx = -INFINITY, sum = 0;
            for (int j = 0; j < n; j++) {
                const double *k = K + ((size_t)h * S + j) * D;
                double acc = 0;
                for (int d = 0; d < D; d++)
                    acc += q[d] * k[d];
                sc[j] = acc * scale;
                mx = sc[j] > mx || sc[j] != sc[j] ? sc[j] : mx;
            }
            for (int d = 0; d < D; d++)
                o[d] = 0;
            for (int j = 0; j < n; j++) {
                const double e = exp(sc[j] - mx);
                sum += e;
                for (int d = 0; d < D; d++)
                    o[d] += e * V[((size_t)h * S + j) * D + d];
            }
            for (int d = 0; d < D; d++)
                o[d] /= sum;
        }
    free(sc);
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;

/* k/64 for an integer k in [lo*64, hi*64): exact in fp16 and bf16. */
static double draw(double lo, double hi)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    const int span = (int)((hi - lo) * 64);
    return lo + (double)((rng >> 33) % (uint64_t)span) / 64.0;
}

typedef struct {
    int bh, S, D, causal, edges;
} problem;

/* Emulation against the reference; edges plants NaN/Inf Q rows (and makes
 * K's column 0 positive, so a row [-Inf, 0, ...] scores -Inf everywhere). */
static void check(problem pb)
{
    const size_t n = (size_t)pb.bh * pb.S * pb.D;
    double *Q = malloc(n * sizeof *Q), *K = malloc(n * sizeof *K), *V = malloc(n * sizeof *V);
    double *got = malloc(n * sizeof *got), *want = malloc(n * sizeof *want);
    assert_true(Q && K && V && got && want);
    for (size_t e = 0; e < n; e++) {
        Q[e] = draw(-2, 2);
        K[e] = draw(-2, 2);
        V[e] = draw(-1, 1);
    }
    int planted[4] = {-1, -1, -1, -1};
    if (pb.edges) {
        for (size_t r = 0; r < n / pb.D; r++)
            K[r * pb.D] = draw(0.5, 2);
        /* rows in the first and a later query tile (of head 0 and the last head) */
        planted[0] = 5;                                   /* NaN */
        planted[1] = pb.S + 130;                          /* +Inf */
        planted[2] = 200;                                 /* -Inf: every score -Inf */
        planted[3] = (pb.bh - 1) * pb.S + pb.S - 1;       /* an all-zero row: uniform */
        Q[(size_t)planted[0] * pb.D + 3] = NAN;
        Q[(size_t)planted[1] * pb.D + 7] = INFINITY;
        for (int d = 0; d < pb.D; d++) {
            Q[(size_t)planted[2] * pb.D + d] = d == 0 ? -INFINITY : 0;
            Q[(size_t)planted[3] * pb.D + d] = 0;
        }
    }
    emulate(Q, K, V, got, pb.bh, pb.S, pb.D, pb.causal);
    reference(Q, K, V, want, pb.bh, pb.S, pb.D, pb.causal);
    size_t bad = 0, nans = 0;
    double worst = 0;
    for (size_t e = 0; e < n; e++) {
        if (want[e] != want[e]) {
            nans++;
            if (got[e] == got[e] && bad++ < 5)
                print_error("S=%d D=%d causal=%d: O[%zu] = %g, want NaN\n", pb.S, pb.D, pb.causal, e, got[e]);
            continue;
        }
        const double err = fabs(got[e] - want[e]);
        worst = err > worst ? err : worst;
        if (!(err <= 2e-5 + 1e-5 * fabs(want[e])) && bad++ < 5)
            print_error("S=%d D=%d causal=%d: O[%zu] (row %zu, col %zu) = %.9g, want %.9g\n", pb.S, pb.D,
                        pb.causal, e, e / pb.D, e % pb.D, got[e], want[e]);
    }
    if (pb.edges)
        assert_int_equal(nans, 3 * (size_t)pb.D); /* the NaN, +Inf and -Inf rows */
    else
        assert_int_equal(nans, 0);
    printf("# S=%d D=%d causal=%d edges=%d: max |err| %.3g\n", pb.S, pb.D, pb.causal, pb.edges, worst);
    assert_int_equal(bad, 0);
    free(Q);
    free(K);
    free(V);
    free(got);
    free(want);
}

/* ------------------------------------------------------------- the tests */

/* Each layout puts every element of its matrix in exactly one place. */
static void fragment_layouts_are_bijections(void **state)
{
    (void)state;
    for (int N = 64; N <= 128; N += 64) {
        static int seen[64][128];
        memset(seen, 0, sizeof seen);
        for (int t = 0; t < WG; t++)
            for (int i = 0; i < N / 2; i++) {
                const int m = att3_acc_row(t, i), n = att3_acc_col(t, i);
                assert_true(m >= 0 && m < 64 && n >= 0 && n < N);
                seen[m][n]++;
                /* the pair (i, i+1) of an even i: one row, adjacent columns (the epilogue's 4-byte stores) */
                if (i % 2 == 0) {
                    assert_int_equal(att3_acc_row(t, i + 1), m);
                    assert_int_equal(att3_acc_col(t, i + 1), n + 1);
                }
            }
        for (int m = 0; m < 64; m++)
            for (int n = 0; n < N; n++)
                assert_int_equal(seen[m][n], 1);
    }
    int seen_a[64][16];
    memset(seen_a, 0, sizeof seen_a);
    for (int t = 0; t < WG; t++)
        for (int r = 0; r < 4; r++)
            for (int h = 0; h < 2; h++)
                seen_a[att3_a_row(t, r)][att3_a_col(t, r, h)]++;
    for (int m = 0; m < 64; m++)
        for (int k = 0; k < 16; k++)
            assert_int_equal(seen_a[m][k], 1);
    /* warp w holds rows 16w..16w+15 in both layouts (the quad reductions
     * stay within a warp: lanes t^1 and t^2 share the rows) */
    for (int t = 0; t < WG; t++)
        for (int i = 0; i < ATT3_S_REGS; i++) {
            assert_int_equal(att3_acc_row(t, i) / 16, t / 32);
            assert_int_equal(att3_acc_row(t ^ 1, i), att3_acc_row(t, i));
            assert_int_equal(att3_acc_row(t ^ 2, i), att3_acc_row(t, i));
        }
}

/* P's A fragment of k-step kk is the S accumulators of keys 16kk..16kk+15,
 * held by the same thread. */
static void p_fragments_are_s_accumulators(void **state)
{
    (void)state;
    for (int t = 0; t < WG; t++)
        for (int kk = 0; kk < ATT3_BN / 16; kk++)
            for (int r = 0; r < 4; r++)
                for (int h = 0; h < 2; h++) {
                    const int i = att3_p_acc(kk, r, h);
                    assert_true(i >= 0 && i < ATT3_S_REGS);
                    assert_int_equal(att3_acc_row(t, i), att3_a_row(t, r));
                    assert_int_equal(att3_acc_col(t, i), 16 * kk + att3_a_col(t, r, h));
                }
}

/* Descriptor starts: 16-byte aligned, and the box (or 8-row group) they
 * start in 1024-byte aligned, so the swizzle phase is the TMA copy's. */
static void descriptor_starts_are_aligned(void **state)
{
    (void)state;
    for (int D = 64; D <= 128; D += 64)
        for (int kk = 0; kk < D / 16; kk++) {
            for (int cw = 0; cw < 2; cw++) {
                assert_int_equal(att3_q_off(cw, kk) * 2 % 16, 0);
                assert_int_equal((att3_q_off(cw, kk) - (kk % 4) * 16) * 2 % 1024, 0);
                assert_true(att3_q_off(cw, kk) + (kk % 4 == 3 ? 16 : 0) <= ATT3_BM * D);
            }
            assert_int_equal((att3_k_off(kk) - (kk % 4) * 16) * 2 % 1024, 0);
        }
    for (int kk = 0; kk < ATT3_BN / 16; kk++)
        assert_int_equal(att3_v_off(kk) * 2 % 1024, 0);
    /* tiles of the kernel's shared memory are whole boxes */
    assert_int_equal(ATT3_V_LBO % 1024, 0);
    assert_int_equal(ATT3_BM * 64 * 2 % 1024, 0);
}

/* Every (head, query tile) is one block; the causal key tiles are exactly
 * those with a visible key; masks only where some key is hidden. */
static void schedule_covers_every_tile(void **state)
{
    (void)state;
    for (int n_qt = 1; n_qt <= 32; n_qt++) {
        const int bh_n = 3;
        int *seen = calloc((size_t)bh_n * n_qt, sizeof *seen);
        assert_non_null(seen);
        for (int b = 0; b < bh_n * n_qt; b++) {
            int bh, qt;
            att3_tile(b, n_qt, &bh, &qt);
            assert_true(bh >= 0 && bh < bh_n && qt >= 0 && qt < n_qt);
            seen[bh * n_qt + qt]++;
            if (b % n_qt == 0)
                assert_int_equal(qt, n_qt - 1); /* a head's heaviest tile first */
        }
        for (int i = 0; i < bh_n * n_qt; i++)
            assert_int_equal(seen[i], 1);
        free(seen);
        for (int causal = 0; causal < 2; causal++)
            for (int qt = 0; qt < n_qt; qt++) {
                const int n_kt = att3_n_kt(qt, n_qt, causal);
                assert_true(n_kt >= 1 && n_kt <= n_qt * ATT3_BM / ATT3_BN);
                for (int kt = 0; kt < n_qt * ATT3_BM / ATT3_BN; kt++) {
                    int any_visible = 0, any_hidden = 0;
                    for (int rr = 0; rr < ATT3_BM; rr++)
                        for (int c = 0; c < ATT3_BN; c++) {
                            const int h = att3_hidden(rr, c, qt, kt, causal);
                            any_hidden |= h;
                            any_visible |= !h;
                            assert_int_equal(h, causal && kt * ATT3_BN + c > qt * ATT3_BM + rr);
                        }
                    assert_int_equal(kt < n_kt, any_visible);
                    if (kt < n_kt)
                        assert_int_equal(att3_needs_mask(qt, kt, causal), any_hidden);
                    /* each consumer warpgroup sees a key of every tile it reads
                     * (no row of 64 wholly masked: its running max stays finite) */
                    if (kt < n_kt)
                        for (int cw = 0; cw < 2; cw++)
                            assert_false(att3_hidden(cw * ATT3_WG_ROWS, 0, qt, kt, causal));
                }
            }
    }
}

static void cta_emulation_matches_softmax(void **state)
{
    (void)state;
    const problem cases[] = {
        {2, 256, 64, 0, 0},  {2, 256, 64, 1, 0},  {2, 256, 128, 0, 0}, {2, 256, 128, 1, 0},
        {1, 384, 64, 1, 0},  {1, 384, 128, 0, 0}, {1, 384, 128, 1, 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        check(cases[c]);
}

/* NaN, +Inf and all -Inf rows give NaN rows, as the reference; a zero row
 * attends uniformly. */
static void edge_rows(void **state)
{
    (void)state;
    check((problem){2, 256, 64, 1, 1});
    check((problem){2, 256, 128, 0, 1});
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fragment_layouts_are_bijections), cmocka_unit_test(p_fragments_are_s_accumulators),
        cmocka_unit_test(descriptor_starts_are_aligned),   cmocka_unit_test(schedule_covers_every_tile),
        cmocka_unit_test(cta_emulation_matches_softmax),   cmocka_unit_test(edge_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
