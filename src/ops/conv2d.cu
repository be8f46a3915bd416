// The GPU fp64 references of conv2d (NCHW) and conv2d_nhwc: the
// convolution as one matrix product per channel group, rows m = (n, p, q),
// columns the group's output channels, summed over e = (c, r, s); 64x64
// output tiles in shared memory, 4x4 outputs per thread, fp64 products and
// sums. Every tensor is addressed through element strides, so one kernel
// serves both layouts.
//
// Written apart from the variants (kernels/conv2d.cu) on purpose: they
// gather in (r, s, c) order from a channels-last copy, or loop per output;
// this one walks (c, r, s) with generic strides and skips nothing but what
// lies outside the input.
#include "ref.cuh"

namespace {

struct RefGeo {
    int64_t N, H, W, K, R, S, U, pad, G, P, Q, Cg, Kg;
    int64_t xs[4]; // x strides: n, c, h, w
    int64_t ws[4]; // w strides: k, c (within the group), r, s
    int64_t ys[4]; // y strides: n, k, p, q
};

template <typename T>
__global__ __launch_bounds__(256) void conv_reference(const T *x, const T *w, double *y, RefGeo g)
{
    __shared__ double As[16][64 + 1]; // [reduction index][row]
    __shared__ double Bs[16][64];     // [reduction index][output channel within the tile]
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int64_t PQ = g.P * g.Q, M = g.N * PQ, RS = g.R * g.S, red = g.Cg * RS;
    const int64_t m0 = (int64_t)blockIdx.x * 64, ntiles = (g.Kg + 63) / 64;
    for (int64_t gy = blockIdx.y; gy < g.G * ntiles; gy += gridDim.y) {
        const int64_t grp = gy / ntiles, k0 = (gy % ntiles) * 64;
        double acc[4][4] = {};
        for (int64_t e0 = 0; e0 < red; e0 += 16) {
            for (int i = threadIdx.x; i < 1024; i += 256) {
                int64_t m = m0 + i / 16, e = e0 + i % 16;
                double a = 0.0;
                if (m < M && e < red) {
                    int64_t n = m / PQ, p = (m / g.Q) % g.P, q = m % g.Q;
                    int64_t c = e / RS, r = (e / g.S) % g.R, s = e % g.S;
                    int64_t h = p * g.U - g.pad + r, v = q * g.U - g.pad + s;
                    if (h >= 0 && h < g.H && v >= 0 && v < g.W)
                        a = ref_d(x[n * g.xs[0] + (grp * g.Cg + c) * g.xs[1] + h * g.xs[2] + v * g.xs[3]]);
                }
                As[i % 16][i / 16] = a;
                int64_t eb = e0 + i / 64, kk = k0 + i % 64;
                double b = 0.0;
                if (eb < red && kk < g.Kg) {
                    int64_t c = eb / RS, r = (eb / g.S) % g.R, s = eb % g.S;
                    b = ref_d(w[(grp * g.Kg + kk) * g.ws[0] + c * g.ws[1] + r * g.ws[2] + s * g.ws[3]]);
                }
                Bs[i / 64][i % 64] = b;
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
            __syncthreads();
        }
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) {
                int64_t m = m0 + ty * 4 + i, kk = k0 + tx * 4 + j;
                if (m >= M || kk >= g.Kg)
                    continue;
                int64_t n = m / PQ, p = (m / g.Q) % g.P, q = m % g.Q;
                y[n * g.ys[0] + (grp * g.Kg + kk) * g.ys[1] + p * g.ys[2] + q * g.ys[3]] = acc[i][j];
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
