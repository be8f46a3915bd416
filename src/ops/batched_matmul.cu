// batched_matmul's GPU fp64 reference: for each batch (blockIdx.z, strided),
// 64x64 output tiles staged through shared memory 32 deep in K, 4x4 outputs
// per thread, fp64 products and sums.
#include "ref.cuh"

// Written apart from the variants in kernels/batched_matmul.cu: a bug shared
// by the reference and a variant would pass the check.
template <typename T>
__global__ __launch_bounds__(256) void bmm_reference(const T *A, const T *B, double *C,
                                                      int64_t batch, int64_t M, int64_t N,
                                                      int64_t K)
{
    __shared__ double As[32][64 + 1]; // As[k][m]
    __shared__ double Bs[32][64 + 1]; // Bs[k][n]
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    for (int64_t b = blockIdx.z; b < batch; b += gridDim.z)
        for (int64_t m0 = (int64_t)blockIdx.y * 64; m0 < M; m0 += (int64_t)gridDim.y * 64) {
            const int64_t n0 = (int64_t)blockIdx.x * 64;
            const T *a = A + b * M * K, *bm = B + b * K * N;
            double acc[4][4] = {};
            for (int64_t k0 = 0; k0 < K; k0 += 32) {
                for (int i = threadIdx.x; i < 64 * 32; i += 256) {
                    int r = i / 32, c = i % 32; // A: row r of the tile, column c of K
                    As[c][r] = m0 + r < M && k0 + c < K ? ref_d(a[(m0 + r) * K + k0 + c]) : 0.0;
                    int kr = i / 64, nc = i % 64; // B: row kr of K, column nc of the tile
                    Bs[kr][nc] =
                        k0 + kr < K && n0 + nc < N ? ref_d(bm[(k0 + kr) * N + n0 + nc]) : 0.0;
                }
                __syncthreads();
                for (int kk = 0; kk < 32; kk++)
                    for (int i = 0; i < 4; i++)
                        for (int j = 0; j < 4; j++)
                            acc[i][j] += As[kk][ty + 16 * i] * Bs[kk][tx + 16 * j];
                __syncthreads();
            }
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++) {
                    int64_t r = m0 + ty + 16 * i, c = n0 + tx + 16 * j;
                    if (r < M && c < N)
                        C[(b * M + r) * N + c] = acc[i][j];
                }
        }
}

extern "C" int kg_batched_matmul_reference(const DLTensor *in, int n_in, double *const *refs,
                                           const kgate_params *p, kgate_stream st)
{
    (void)p;
    if (n_in != 2 || in[0].ndim != 3 || in[1].ndim != 3)
        return 1;
    cudaStream_t s = (cudaStream_t)st;
    int64_t batch = in[0].shape[0], M = in[0].shape[1], K = in[0].shape[2], N = in[1].shape[2];
    int64_t gy = (M + 63) / 64, gz = batch;
    dim3 grid((unsigned)((N + 63) / 64), (unsigned)(gy < 65535 ? gy : 65535),
              (unsigned)(gz < 65535 ? gz : 65535));
    REF_DISPATCH(&in[0], (bmm_reference<T><<<grid, 256, 0, s>>>(
                             (const T *)in[0].data, (const T *)in[1].data, refs[0], batch, M, N, K)));
    return REF_LAUNCHED();
}
