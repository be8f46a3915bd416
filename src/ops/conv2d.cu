// The GPU fp64 references of conv2d (NCHW) and conv2d_nhwc: the
// convolution as one matrix product per channel group, rows m = (n, p, q),
// columns the group's output channels, summed over e = (c, r, s); 64x64
// output tiles in shared memory, 4x4 outputs per thread, fp64 products and
// sums. Every tensor is addressed through element strides, so one kernel
// serves both layouts.
//
// Written apart from the variants (kernels/conv2d.cu) on purpose: they
// loop per output, or gather from a channels-last copy padded to 8
// channels; this one reads the tensors as given through generic strides,
// summing in the layout's own order ((c, r, s) for NCHW, (r, s, c) for
// NHWC, so that neighbouring threads read neighbouring elements). Row and
// reduction indices are decoded once per block and chunk into shared
// memory: the gathers themselves do no division.
#include "ref.cuh"

namespace {

struct RefGeo {
    int64_t N, H, W, K, R, S, U, pad, G, P, Q, Cg, Kg;
    int64_t xs[4]; // x strides: n, c, h, w
    int64_t ws[4]; // w strides: k, c (within the group), r, s
    int64_t ys[4]; // y strides: n, k, p, q
    int cl;        // channels last: the sum runs over (r, s, c), c fastest
};

// A row or reduction index that is never inside the image.
#define REF_OUTSIDE (-((int64_t)1 << 40))

template <typename T>
__global__ __launch_bounds__(256) void conv_reference(const T *x, const T *w, double *y, RefGeo g)
{
    __shared__ double As[16][64 + 1]; // [reduction index][row]
    __shared__ double Bs[16][64 + 1]; // [reduction index][output channel within the tile]
    // per row m of the block: x offset of its window's corner (n, h0, w0),
    // the corner, and y's offset of (n, p, q); per reduction index e of a
    // chunk: (r, s), x's offset of (c, r, s) in its group, w's of (c, r, s)
    __shared__ int64_t row_x[64], row_y[64], red_x[16], red_w[16];
    __shared__ int64_t row_h[64], row_w[64], red_r[16], red_s[16];
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int64_t PQ = g.P * g.Q, M = g.N * PQ, red = g.Cg * g.R * g.S;
    const int64_t m0 = (int64_t)blockIdx.x * 64, ntiles = (g.Kg + 63) / 64;
    if (threadIdx.x < 64) {
        const int64_t m = m0 + threadIdx.x;
        const int64_t n = m / PQ, p = (m / g.Q) % g.P, q = m % g.Q;
        const int64_t h0 = p * g.U - g.pad, w0 = q * g.U - g.pad;
        row_x[threadIdx.x] = n * g.xs[0] + h0 * g.xs[2] + w0 * g.xs[3];
        row_y[threadIdx.x] = n * g.ys[0] + p * g.ys[2] + q * g.ys[3];
        row_h[threadIdx.x] = m < M ? h0 : REF_OUTSIDE;
        row_w[threadIdx.x] = w0;
    }
    for (int64_t gy = blockIdx.y; gy < g.G * ntiles; gy += gridDim.y) {
        const int64_t grp = gy / ntiles, k0 = (gy % ntiles) * 64;
        double acc[4][4] = {};
        for (int64_t e0 = 0; e0 < red; e0 += 16) {
            __syncthreads(); // the chunk before is done with red_* and the tiles
            if (threadIdx.x < 16) {
                const int64_t e = e0 + threadIdx.x;
                int64_t c, r, s;
                if (g.cl) {
                    c = e % g.Cg;
                    s = e / g.Cg % g.S;
                    r = e / (g.Cg * g.S);
                } else {
                    s = e % g.S;
                    r = e / g.S % g.R;
                    c = e / (g.S * g.R);
                }
                red_x[threadIdx.x] = (grp * g.Cg + c) * g.xs[1] + r * g.xs[2] + s * g.xs[3];
                red_w[threadIdx.x] = c * g.ws[1] + r * g.ws[2] + s * g.ws[3];
                red_r[threadIdx.x] = e < red ? r : REF_OUTSIDE;
                red_s[threadIdx.x] = s;
            }
            __syncthreads();
            for (int i = threadIdx.x; i < 1024; i += 256) {
                const int kk = i % 16, row = i / 16; // neighbouring threads: neighbouring e
                const int64_t h = row_h[row] + red_r[kk], v = row_w[row] + red_s[kk];
                As[kk][row] = h >= 0 && h < g.H && v >= 0 && v < g.W ? ref_d(x[row_x[row] + red_x[kk]]) : 0.0;
                const int64_t ko = k0 + row; // row: the output channel here
                Bs[kk][row] = red_r[kk] != REF_OUTSIDE && ko < g.Kg
                                  ? ref_d(w[(grp * g.Kg + ko) * g.ws[0] + red_w[kk]])
                                  : 0.0;
            }
            __syncthreads();
#pragma unroll
            for (int kk = 0; kk < 16; kk++) {
                double a[4], b[4];
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    a[i] = As[kk][ty * 4 + i];
                    b[i] = Bs[kk][tx * 4 + i];
                }
#pragma unroll
                for (int i = 0; i < 4; i++)
#pragma unroll
                    for (int j = 0; j < 4; j++)
                        acc[i][j] += a[i] * b[j];
            }
        }
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) {
                const int row = ty * 4 + i;
                const int64_t ko = k0 + tx * 4 + j;
                if (row_h[row] != REF_OUTSIDE && ko < g.Kg)
                    y[row_y[row] + (grp * g.Kg + ko) * g.ys[1]] = acc[i][j];
            }
    }
}

// The geometry of a call: extents from the tensors, stride, padding and
// groups from the scalars. Returns 0, or 1 when they do not agree.
int ref_geometry(const DLTensor *in, int nhwc, const kgate_params *p, RefGeo *g)
{
    const int64_t *xe = in[0].shape, *we = in[1].shape;
    if (in[0].ndim != 4 || in[1].ndim != 4)
        return 1;
    int64_t C = nhwc ? xe[3] : xe[1];
    g->N = xe[0];
    g->H = nhwc ? xe[1] : xe[2];
    g->W = nhwc ? xe[2] : xe[3];
    g->K = we[0];
    g->R = nhwc ? we[1] : we[2];
    g->S = nhwc ? we[2] : we[3];
    g->Cg = nhwc ? we[3] : we[1];
    g->U = (int64_t)kgate_scalar_get(p, "stride", 0);
    g->pad = (int64_t)kgate_scalar_get(p, "pad", -1);
    g->G = (int64_t)kgate_scalar_get(p, "groups", 0);
    if (g->U < 1 || g->pad < 0 || g->G < 1 || g->Cg * g->G != C || g->K % g->G ||
        g->H + 2 * g->pad < g->R || g->W + 2 * g->pad < g->S)
        return 1;
    g->Kg = g->K / g->G;
    g->P = (g->H + 2 * g->pad - g->R) / g->U + 1;
    g->Q = (g->W + 2 * g->pad - g->S) / g->U + 1;
    const int64_t H = g->H, W = g->W, R = g->R, S = g->S, Cg = g->Cg, K = g->K, P = g->P, Q = g->Q;
    const int64_t xs_nchw[4] = {C * H * W, H * W, W, 1}, xs_nhwc[4] = {H * W * C, 1, W * C, C};
    const int64_t ws_kcrs[4] = {Cg * R * S, R * S, S, 1}, ws_krsc[4] = {R * S * Cg, 1, S * Cg, Cg};
    const int64_t ys_nchw[4] = {K * P * Q, P * Q, Q, 1}, ys_nhwc[4] = {P * Q * K, 1, Q * K, K};
    g->cl = nhwc;
    for (int i = 0; i < 4; i++) {
        g->xs[i] = nhwc ? xs_nhwc[i] : xs_nchw[i];
        g->ws[i] = nhwc ? ws_krsc[i] : ws_kcrs[i];
        g->ys[i] = nhwc ? ys_nhwc[i] : ys_nchw[i];
    }
    return 0;
}

int conv_reference_launch(const DLTensor *in, int n_in, double *const *refs, const kgate_params *p,
                          kgate_stream st, int nhwc)
{
    RefGeo g;
    if (n_in != 2 || ref_geometry(in, nhwc, p, &g))
        return 1;
    const int64_t M = g.N * g.P * g.Q, ny = g.G * ((g.Kg + 63) / 64);
    dim3 grid((unsigned)((M + 63) / 64), (unsigned)(ny < 65535 ? ny : 65535));
    cudaStream_t s = (cudaStream_t)st;
    REF_DISPATCH(&in[0], (conv_reference<T><<<grid, 256, 0, s>>>((const T *)in[0].data,
                                                                  (const T *)in[1].data, refs[0], g)));
    return REF_LAUNCHED();
}

} // namespace

extern "C" int kg_conv2d_reference(const DLTensor *in, int n_in, double *const *refs,
                                   const kgate_params *p, kgate_stream st)
{
    return conv_reference_launch(in, n_in, refs, p, st, 0);
}

extern "C" int kg_conv2d_nhwc_reference(const DLTensor *in, int n_in, double *const *refs,
                                        const kgate_params *p, kgate_stream st)
{
    return conv_reference_launch(in, n_in, refs, p, st, 1);
}
