/* attention v3 (kernels/attention.cu): the index math and the per-thread
 * online-softmax steps, written once for the kernel and for its CPU test
 * (tests/test_attention_v3.c), which emulates a CTA on the host with these
 * very functions. C11 and CUDA; no state, no memory but the arrays passed.
 *
 * A CTA owns ATT3_BM = 128 query rows of one (batch, head): consumer
 * warpgroup cw (0 or 1) the 64 rows cw*64.., thread t (0..127) of it the
 * fragment rows below. Keys come in tiles of ATT3_BN = 128.
 *
 * Fragment layouts (PTX ISA, wgmma .m64nNk16; warp w = t/32 of the
 * warpgroup holds rows 16w..16w+15, g = (t%32)/4, q = t%4):
 * - accumulator D (f32, N/2 registers): register i is row 16w + g + 8*bit1(i),
 *   column 8*(i/4) + 2q + bit0(i);
 * - A in registers (16-bit, four 32-bit registers of two halves): register r,
 *   half h (0 the low one) is row 16w + g + 8*bit0(r), column 8*bit1(r) + 2q + h.
 * So the S accumulator registers 8kk..8kk+7 (columns 16kk..16kk+15) are,
 * pairwise, the A registers of P.V's k-step kk: no data moves between
 * threads (att3_p_acc).
 *
 * Shared memory: every tile is [rows][D] stored as D/64 boxes of [rows][64]
 * (128-byte rows, the 128-byte swizzle of the TMA copy and of the
 * descriptors; each box 1024-byte aligned). Offsets below are in elements
 * from the tile's start. */
#ifndef KG_ATTENTION_V3_H
#define KG_ATTENTION_V3_H

#include <math.h>

#ifdef __CUDACC__
#define ATT3_FN static __host__ __device__ __forceinline__
#else
#define ATT3_FN static inline
#endif
#ifdef __CUDA_ARCH__ /* the device pass (the host compiler knows no such pragma) */
#define ATT3_UNROLL _Pragma("unroll")
#else
#define ATT3_UNROLL
#endif

enum {
    ATT3_BM = 128,             /* query rows a CTA */
    ATT3_BN = 128,             /* keys a K/V tile */
    ATT3_WG_ROWS = 64,         /* query rows a consumer warpgroup */
    ATT3_S_REGS = ATT3_BN / 2, /* S accumulator registers a thread */
    ATT3_SBO = 1024,           /* descriptor: bytes between 8-row groups */
    ATT3_V_LBO = ATT3_BN * 64 * 2 /* descriptor of V (MN-major): bytes between 64-column boxes */
};

/* ------------------------------------------------------------ fragments */

/* Row (0..63 of the warpgroup's) and column of accumulator register i. */
ATT3_FN int att3_acc_row(int t, int i) { return 16 * (t / 32) + (t % 32) / 4 + 8 * ((i >> 1) & 1); }
ATT3_FN int att3_acc_col(int t, int i) { return 8 * (i >> 2) + 2 * (t % 4) + (i & 1); }

/* Row and column (0..15) of half h of A register r. */
ATT3_FN int att3_a_row(int t, int r) { return 16 * (t / 32) + (t % 32) / 4 + 8 * (r & 1); }
ATT3_FN int att3_a_col(int t, int r, int h) { return 8 * (r >> 1) + 2 * (t % 4) + h; }

/* The S accumulator register that is half h of A register r of P.V's
 * k-step kk (keys 16kk..16kk+15 of the tile). */
ATT3_FN int att3_p_acc(int kk, int r, int h) { return 8 * kk + 2 * r + h; }

/* --------------------------------------------------- descriptor starts */

/* Q (A of S = Q.K^T, K-major): warpgroup cw's 64 rows, k-step kk (columns
 * 16kk..16kk+15 of D): box kk/4, 32 bytes a k-step within the 128-byte row. */
ATT3_FN int att3_q_off(int cw, int kk) { return (kk / 4) * ATT3_BM * 64 + cw * ATT3_WG_ROWS * 64 + (kk % 4) * 16; }

/* K tile (B of S, K-major: [keys][D] rows are B's columns), k-step kk. */
ATT3_FN int att3_k_off(int kk) { return (kk / 4) * ATT3_BN * 64 + (kk % 4) * 16; }

/* V tile (B of O += P.V, MN-major: [keys][D] rows are B's k), k-step kk
 * (keys 16kk..16kk+15): 16 rows down the first box; the descriptor's
 * leading offset (ATT3_V_LBO) reaches the box of columns 64..127. */
ATT3_FN int att3_v_off(int kk) { return kk * 16 * 64; }

/* ------------------------------------------------------------ schedule */

/* Block -> (batch*head, query tile): the heads in order, each one's query
 * tiles last first (causal: the heavy ones start first, the light ones fill
 * the tail; the blocks of a head run together, so its K and V stay in L2). */
ATT3_FN void att3_tile(int block, int n_qt, int *bh, int *qt)
{
    *bh = block / n_qt;
    *qt = n_qt - 1 - block % n_qt;
}

/* Key tiles query tile qt reads: all, or (causal) those holding a key
 * <= its last row. */
ATT3_FN int att3_n_kt(int qt, int n_qt, int causal)
{
    return causal ? (qt * ATT3_BM + ATT3_BM - 1) / ATT3_BN + 1 : n_qt * ATT3_BM / ATT3_BN;
}

/* Whether key tile kt holds keys past some row of query tile qt (causal). */
ATT3_FN int att3_needs_mask(int qt, int kt, int causal)
{
    return causal && kt * ATT3_BN + ATT3_BN - 1 > qt * ATT3_BM;
}

/* Whether key c of tile kt is hidden from row rr (0..127) of query tile qt. */
ATT3_FN int att3_hidden(int rr, int c, int qt, int kt, int causal)
{
    return causal && kt * ATT3_BN + c > qt * ATT3_BM + rr;
}

/* ------------------------------------------------------------- softmax */

/* 2^x: the MUFU instruction on the device (ex2.approx.ftz: 2^-Inf = 0,
 * 2^NaN = NaN, results below 2^-126 flush to 0), exp2f on the host. */
ATT3_FN float att3_exp2(float x)
{
#ifdef __CUDA_ARCH__
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
#else
    return exp2f(x);
#endif
}

/* The diagonal tile: hidden scores become -Inf (thread t of warpgroup cw). */
ATT3_FN void att3_mask(float *s, int t, int cw, int qt, int kt, int causal)
{
    ATT3_UNROLL
    for (int i = 0; i < ATT3_S_REGS; i++)
        if (att3_hidden(cw * ATT3_WG_ROWS + att3_acc_row(t, i), att3_acc_col(t, i), qt, kt, causal))
            s[i] = -INFINITY;
}

/* This thread's part of the new max of its two rows (mx[0]: row g, mx[1]:
 * row g+8), with the running max; the caller reduces it over the quad.
 * fmaxf skips NaN scores: they make NaN through exp2 below instead. */
ATT3_FN void att3_row_max(const float *s, const float *m_run, float *mx)
{
    mx[0] = m_run[0];
    mx[1] = m_run[1];
    ATT3_UNROLL
    for (int j = 0; j < ATT3_S_REGS / 4; j++) {
        mx[0] = fmaxf(mx[0], fmaxf(s[4 * j], s[4 * j + 1]));
        mx[1] = fmaxf(mx[1], fmaxf(s[4 * j + 2], s[4 * j + 3]));
    }
}

/* The online-softmax step, given the quad's max mx of each row (sl2 =
 * log2(e)/sqrt(D)): the scores become exp2(s sl2 - mx sl2) in place, l_run
 * (this thread's part of the row sum) and m_run move on, alpha is the factor
 * the O accumulators take. A row with no score above -Inf yet subtracts 0,
 * so its hidden keys weigh 2^-Inf = 0, not 2^(-Inf + Inf) = NaN; +Inf and
 * NaN scores still make NaN, as the reference's max-subtracted form does
 * (v2's rule). */
ATT3_FN void att3_softmax(float *s, const float *mx, float *m_run, float *l_run, float *alpha, float sl2)
{
    float ms[2], rs[2] = {0.f, 0.f};
    ATT3_UNROLL
    for (int r = 0; r < 2; r++) {
        ms[r] = mx[r] == -INFINITY ? 0.f : mx[r] * sl2;
        alpha[r] = att3_exp2(m_run[r] * sl2 - ms[r]);
        m_run[r] = mx[r];
    }
    ATT3_UNROLL
    for (int i = 0; i < ATT3_S_REGS; i++) {
        const int r = (i >> 1) & 1;
        s[i] = att3_exp2(fmaf(s[i], sl2, -ms[r]));
        rs[r] += s[i];
    }
    l_run[0] = l_run[0] * alpha[0] + rs[0];
    l_run[1] = l_run[1] * alpha[1] + rs[1];
}

/* O accumulators (n registers) times the factor of their row. */
ATT3_FN void att3_rescale(float *o, int n, const float *alpha)
{
    ATT3_UNROLL
    for (int i = 0; i < n; i++)
        o[i] *= alpha[(i >> 1) & 1];
}

#endif
