// linear_activation's GPU fp64 reference: 64x64 output tiles, both products
// a = x.W1^T and b = x.W3^T accumulated in fp64 from tiles of x, W1 and W3
// staged 16 deep in K, then out = a / (1 + exp(-a)) * b in fp64.
#include "ref.cuh"

// Written apart from the variants in kernels/linear_activation.cu.
template <typename T>
__global__ __launch_bounds__(256) void linact_reference(const T *X, const T *W1, const T *W3,
                                                         double *out, int64_t M, int64_t N,
                                                         int64_t K)
{
    __shared__ double Xs[16][64 + 1], W1s[16][64 + 1], W3s[16][64 + 1]; // [k][row]
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    for (int64_t m0 = (int64_t)blockIdx.y * 64; m0 < M; m0 += (int64_t)gridDim.y * 64) {
        const int64_t n0 = (int64_t)blockIdx.x * 64;
        double a[4][4] = {}, b[4][4] = {};
        for (int64_t k0 = 0; k0 < K; k0 += 16) {
            for (int i = threadIdx.x; i < 64 * 16; i += 256) {
                int r = i / 16, c = i % 16; // row r of the tile, column c of K
                bool kin = k0 + c < K;
                Xs[c][r] = kin && m0 + r < M ? ref_d(X[(m0 + r) * K + k0 + c]) : 0.0;
                W1s[c][r] = kin && n0 + r < N ? ref_d(W1[(n0 + r) * K + k0 + c]) : 0.0;
                W3s[c][r] = kin && n0 + r < N ? ref_d(W3[(n0 + r) * K + k0 + c]) : 0.0;
            }
            __syncthreads();
            for (int kk = 0; kk < 16; kk++)
                for (int i = 0; i < 4; i++) {
                    double xv = Xs[kk][ty + 16 * i];
                    for (int j = 0; j < 4; j++) {
                        a[i][j] += xv * W1s[kk][tx + 16 * j];
                        b[i][j] += xv * W3s[kk][tx + 16 * j];
                    }
                }
            __syncthreads();
        }
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) {
                int64_t r = m0 + ty + 16 * i, c = n0 + tx + 16 * j;
                if (r < M && c < N)
                    out[r * N + c] = a[i][j] / (1.0 + exp(-a[i][j])) * b[i][j];
            }
    }
}

extern "C" int kg_linear_activation_reference(const DLTensor *in, int n_in, double *const *refs,
                                              const kgate_params *p, kgate_stream st)
{
    (void)p;
    if (n_in != 3 || in[0].ndim != 2 || in[1].ndim != 2 || in[2].ndim != 2)
        return 1;
    cudaStream_t s = (cudaStream_t)st;
    int64_t M = in[0].shape[0], K = in[0].shape[1], N = in[1].shape[0];
    int64_t gy = (M + 63) / 64;
    dim3 grid((unsigned)((N + 63) / 64), (unsigned)(gy < 65535 ? gy : 65535));
    REF_DISPATCH(&in[0], (linact_reference<T><<<grid, 256, 0, s>>>(
                             (const T *)in[0].data, (const T *)in[1].data, (const T *)in[2].data,
                             refs[0], M, N, K)));
    return REF_LAUNCHED();
}
