/* conv2d v3's tiling (kernels/conv2d.cu): which geometries take the Hopper
 * path, and every index it computes: a tile's output pixels and channels,
 * the TMA coordinates of the reduction step's A box (x as a 4-D tensor
 * [N][H][W][C]) and B box (the filter as a 2-D [K][R S C] matrix), the
 * tensor map's extents, strides, box and element strides, and where an
 * accumulator lands in y. Plain C, so that tests/test_conv2d.c emulates the
 * kernel on the host with these very functions (compiled there by the C
 * compiler, here by nvcc as __host__ __device__).
 *
 * The implicit GEMM: rows m = (n, p, q) output pixels, columns the K output
 * channels, reduction (r, s, c) over a channels-last x. A block tile is
 * CV3_BM = 128 pixels x BN channels (BN 256, or 128 when K % 256 != 0); a
 * reduction step is one filter tap (r, s) and one 64-channel block of C.
 * The 128 pixels of a tile are BH output rows of BW columns of one image,
 * BH BW = 128: a run of 128 columns of one row when Q % 128 == 0, else BH
 * whole rows when Q divides 128 and BH divides P. For step (r, s, cb) the
 * pixels' inputs are then one TMA box of x: channels [64 cb, 64 cb + 64),
 * columns q0 U + s - pad + U j (j < BW), rows p0 U + r - pad + U i (i < BH),
 * image n: the box {64, BW U, BH U, 1} with element strides {1, U, U, 1}
 * (TMA loads ceil(box / stride) elements a dimension) at signed
 * coordinates; elements outside x read as zero, which is the padding. The
 * box lands in shared memory as [BH][BW][64] = [128 rows][64]: row ml =
 * i BW + j is the tile's pixel m0 + ml. */
#ifndef KG_CONV2D_V3_H
#define KG_CONV2D_V3_H

#include <stdint.h>

#ifdef __CUDACC__
#define CV3_FN static __host__ __device__ __forceinline__
#else
#define CV3_FN static inline
#endif

enum { CV3_BM = 128, CV3_BK = 64 };

/* One convolution as v3 runs it. */
typedef struct {
    int N, C, H, W, K, R, S, U, pad, P, Q;
    int BN;      /* output channels a tile: 256, or 128 */
    int BW, BH;  /* a tile's pixels: BH output rows of BW columns, BW BH = 128 */
    int CB;      /* 64-channel blocks of C */
    int KT;      /* reduction steps: R S CB */
    int tiles_n; /* K / BN */
    int tiles;   /* N P Q / 128 row tiles times tiles_n */
} cv3_plan;

/* Fills *pl and returns 1 when v3 takes the geometry (groups == 1,
 * C % 64 == 0, K % 128 == 0, tiles of whole rows as above, boxes within
 * TMA's 256 elements and strides within its 8, every coordinate and tile
 * count within int); 0 otherwise. Pointer alignment is the caller's check. */
CV3_FN int cv3_plan_make(int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, int64_t R, int64_t S,
                         int64_t U, int64_t pad, int64_t G, cv3_plan *pl)
{
    const int64_t lim = 2147483647;
    if (G != 1 || N < 1 || C < 64 || C % 64 || K < 128 || K % 128 || R < 1 || S < 1 || U < 1 ||
        U > 8 || pad < 0 || H < 1 || W < 1 || N > lim || C > lim || H > lim || W > lim || K > lim ||
        R > lim || S > lim || pad > lim)
        return 0;
    if (H + 2 * pad < R || W + 2 * pad < S)
        return 0;
    const int64_t P = (H + 2 * pad - R) / U + 1, Q = (W + 2 * pad - S) / U + 1;
    int64_t BW, BH;
    if (Q % CV3_BM == 0) {
        BW = CV3_BM;
        BH = 1;
    } else if (CV3_BM % Q == 0 && P % (CV3_BM / Q) == 0) {
        BW = Q;
        BH = CV3_BM / Q;
    } else {
        return 0;
    }
    if (BW * U > 256 || BH * U > 256)
        return 0;
    const int64_t BN = K % 256 == 0 ? 256 : 128, M = N * P * Q;
    /* the signed box coordinates, the filter column kt * 64 + 63, tiles */
    if (P * U + R + pad > lim / 2 || Q * U + S + pad > lim / 2 || R * S * C > lim ||
        M / CV3_BM > lim / (K / BN) || M > INT64_MAX / K)
        return 0;
    /* TMA: strides below 2^40 bytes */
    if (H * W * C * 2 >= ((int64_t)1 << 40))
        return 0;
    pl->N = (int)N;
    pl->C = (int)C;
    pl->H = (int)H;
    pl->W = (int)W;
    pl->K = (int)K;
    pl->R = (int)R;
    pl->S = (int)S;
    pl->U = (int)U;
    pl->pad = (int)pad;
    pl->P = (int)P;
    pl->Q = (int)Q;
    pl->BN = (int)BN;
    pl->BW = (int)BW;
    pl->BH = (int)BH;
    pl->CB = (int)(C / 64);
    pl->KT = (int)(R * S * (C / 64));
    pl->tiles_n = (int)(K / BN);
    pl->tiles = (int)(M / CV3_BM * (K / BN));
    return 1;
}

/* Tile t: image n, output rows [p0, p0 + BH), columns [q0, q0 + BW),
 * channels [k0, k0 + BN); its first GEMM row m0 = (n P + p0) Q + q0. The
 * channel tiles of one row tile are neighbours in t (they share the A
 * boxes in L2). */
typedef struct {
    int n, p0, q0, k0;
    int64_t m0;
} cv3_tile;

CV3_FN cv3_tile cv3_tile_of(cv3_plan pl, int t)
{
    cv3_tile tl;
    const int64_t tm = t / pl.tiles_n, PQ = (int64_t)pl.P * pl.Q;
    tl.k0 = (t - (int)tm * pl.tiles_n) * pl.BN;
    tl.m0 = tm * CV3_BM;
    tl.n = (int)(tl.m0 / PQ);
    const int64_t pq = tl.m0 - tl.n * PQ;
    tl.p0 = (int)(pq / pl.Q);
    tl.q0 = (int)(pq - (int64_t)tl.p0 * pl.Q);
    return tl;
}

/* The A box of reduction step kt = (r S + s) CB + cb: TMA coordinates
 * {c, w, h, n} of x [N][H][W][C] (innermost first), signed. */
CV3_FN void cv3_a_coord(cv3_plan pl, cv3_tile tl, int kt, int c[4])
{
    const int rs = kt / pl.CB, cb = kt - rs * pl.CB, r = rs / pl.S, s = rs - r * pl.S;
    c[0] = cb * CV3_BK;
    c[1] = tl.q0 * pl.U + s - pl.pad;
    c[2] = tl.p0 * pl.U + r - pl.pad;
    c[3] = tl.n;
}

/* The B box of step kt: {column, row} of the filter [K][R S C], K-major:
 * column (r S + s) C + 64 cb = 64 kt, rows [k0, k0 + BN). */
CV3_FN void cv3_b_coord(cv3_plan pl, cv3_tile tl, int kt, int c[2])
{
    (void)pl;
    c[0] = kt * CV3_BK;
    c[1] = tl.k0;
}

/* x's tensor map: extents {C, W, H, N}, byte strides of dimensions 1..3,
 * the box and the element strides (see the top). */
CV3_FN void cv3_x_map(cv3_plan pl, uint64_t dims[4], uint64_t strides[3], uint32_t box[4], uint32_t estr[4])
{
    dims[0] = (uint64_t)pl.C;
    dims[1] = (uint64_t)pl.W;
    dims[2] = (uint64_t)pl.H;
    dims[3] = (uint64_t)pl.N;
    strides[0] = (uint64_t)pl.C * 2;
    strides[1] = strides[0] * (uint64_t)pl.W;
    strides[2] = strides[1] * (uint64_t)pl.H;
    box[0] = CV3_BK;
    box[1] = (uint32_t)(pl.BW * pl.U);
    box[2] = (uint32_t)(pl.BH * pl.U);
    box[3] = 1;
    estr[0] = 1;
    estr[1] = (uint32_t)pl.U;
    estr[2] = (uint32_t)pl.U;
    estr[3] = 1;
}

/* Bytes one stage's two boxes bring (the mbarrier's transaction count). */
CV3_FN uint32_t cv3_stage_bytes(int BN) { return (uint32_t)(CV3_BM * CV3_BK + BN * CV3_BK) * 2; }

/* Where accumulator (ml, nl) of the tile (pixel m0 + ml, channel k0 + nl)
 * lands in y: [N][P][Q][K] (nchw 0) or [N][K][P][Q] (nchw 1). A tile's
 * pixels are consecutive in one image, so in NCHW a channel's 128 outputs
 * are contiguous. */
CV3_FN int64_t cv3_y_index(cv3_plan pl, cv3_tile tl, int nchw, int ml, int nl)
{
    if (!nchw)
        return (tl.m0 + ml) * pl.K + tl.k0 + nl;
    const int64_t PQ = (int64_t)pl.P * pl.Q;
    return ((int64_t)tl.n * pl.K + tl.k0 + nl) * PQ + (int64_t)tl.p0 * pl.Q + tl.q0 + ml;
}

#endif
