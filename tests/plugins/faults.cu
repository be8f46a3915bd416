// Misbehaving softmax candidates for the GPU tests, in the order they run:
//   illegal  writes through a wild pointer    -> CRASH
//   spin     never returns                     -> TIMEOUT
//   zeros    writes zeros                      -> INCORRECT
//   mutate   right answer, but scribbles on x  -> INCORRECT
//   sidestream  right answer, computed on a stream of its own that the given
//            stream then waits for: the work escapes the timing -> IMPOSSIBLE
//   racy     rows256 without the barrier between reading the row max and
//            reusing its shared slots: usually right, a shared-memory race
//            that only --memcheck (racecheck) names -> INCORRECT there
//   simple   a plain correct kernel            -> runs after all of the above
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <kgate/plugin.h>

__global__ void wild(__half *p) { p[(size_t)threadIdx.x * 1000000007ull] = __float2half(1.f); }
__global__ void forever(volatile int *flag)
{
    while (*flag == 0) {
    }
}
__global__ void fill_zero(__half *y, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] = __float2half(0.f);
}
__global__ void simple(__half *x, __half *y, int cols, int scribble)
{
    __half *xr = x + (size_t)blockIdx.x * cols;
    __half *yr = y + (size_t)blockIdx.x * cols;
    __shared__ float red[2];
    if (threadIdx.x == 0) {
        float m = -INFINITY, s = 0;
        for (int j = 0; j < cols; j++)
            m = fmaxf(m, __half2float(xr[j]));
        for (int j = 0; j < cols; j++)
            s += expf(__half2float(xr[j]) - m);
        red[0] = m;
        red[1] = s;
    }
    __syncthreads();
    for (int j = threadIdx.x; j < cols; j += blockDim.x)
        yr[j] = __float2half(expf(__half2float(xr[j]) - red[0]) / red[1]);
    __syncthreads();
    if (scribble && threadIdx.x == 0)
        xr[0] = __float2half(0.f);
}

// One block per row, block-wide max and sum; `racy` drops one barrier.
__global__ void rows256(const __half *x, __half *y, int cols, int racy)
{
    __shared__ float red[256];
    const __half *r = x + (size_t)blockIdx.x * cols;
    __half *o = y + (size_t)blockIdx.x * cols;
    float m = -INFINITY, s = 0;
    for (int j = threadIdx.x; j < cols; j += 256)
        m = fmaxf(m, __half2float(r[j]));
    red[threadIdx.x] = m;
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) {
        if (threadIdx.x < k)
            red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + k]);
        __syncthreads();
    }
    m = red[0];
    if (!racy)
        __syncthreads();
    for (int j = threadIdx.x; j < cols; j += 256)
        s += expf(__half2float(r[j]) - m);
    red[threadIdx.x] = s;
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) {
        if (threadIdx.x < k)
            red[threadIdx.x] += red[threadIdx.x + k];
        __syncthreads();
    }
    s = red[0];
    for (int j = threadIdx.x; j < cols; j += 256)
        o[j] = __float2half(expf(__half2float(r[j]) - m) / s);
}

static int dims(const DLTensor *t, int *rows, int *cols)
{
    *rows = (int)t->shape[0];
    *cols = (int)t->shape[1];
    return 0;
}

extern "C" {
static int k_illegal(const DLTensor *i, int, DLTensor *o, int, const kgate_params *, kgate_stream s)
{
    (void)i;
    wild<<<1, 256, 0, (cudaStream_t)s>>>((__half *)o[0].data);
    return (int)cudaGetLastError();
}
static int k_spin(const DLTensor *, int, DLTensor *, int, const kgate_params *, kgate_stream s)
{
    static int *flag;
    if (!flag && cudaMalloc(&flag, sizeof(int)) == cudaSuccess)
        cudaMemset(flag, 0, sizeof(int));
    forever<<<1, 1, 0, (cudaStream_t)s>>>(flag);
    return (int)cudaGetLastError();
}
static int k_zeros(const DLTensor *i, int, DLTensor *o, int, const kgate_params *, kgate_stream s)
{
    int r, c;
    dims(&i[0], &r, &c);
    fill_zero<<<264, 256, 0, (cudaStream_t)s>>>((__half *)o[0].data, (size_t)r * c);
    return (int)cudaGetLastError();
}
static int k_simple_impl(const DLTensor *i, DLTensor *o, kgate_stream s, int scribble)
{
    int r, c;
    dims(&i[0], &r, &c);
    simple<<<r, 256, 0, (cudaStream_t)s>>>((__half *)i[0].data, (__half *)o[0].data, c, scribble);
    return (int)cudaGetLastError();
}
static int k_mutate(const DLTensor *i, int, DLTensor *o, int, const kgate_params *, kgate_stream s)
{
    return k_simple_impl(i, o, s, 1);
}
static int k_sidestream(const DLTensor *i, int, DLTensor *o, int, const kgate_params *, kgate_stream st)
{
    static cudaStream_t side;
    static cudaEvent_t in_ready, out_ready;
    cudaStream_t s = (cudaStream_t)st;
    int r, c;
    if (!side && (cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) ||
                  cudaEventCreateWithFlags(&in_ready, cudaEventDisableTiming) ||
                  cudaEventCreateWithFlags(&out_ready, cudaEventDisableTiming)))
        return (int)cudaGetLastError();
    dims(&i[0], &r, &c);
    cudaEventRecord(in_ready, s);
    cudaStreamWaitEvent(side, in_ready, 0);
    rows256<<<r, 256, 0, side>>>((const __half *)i[0].data, (__half *)o[0].data, c, 0);
    cudaEventRecord(out_ready, side);
    cudaStreamWaitEvent(s, out_ready, 0);
    return (int)cudaGetLastError();
}
static int k_racy(const DLTensor *i, int, DLTensor *o, int, const kgate_params *, kgate_stream s)
{
    int r, c;
    dims(&i[0], &r, &c);
    rows256<<<r, 256, 0, (cudaStream_t)s>>>((const __half *)i[0].data, (__half *)o[0].data, c, 1);
    return (int)cudaGetLastError();
}
static int k_simple(const DLTensor *i, int, DLTensor *o, int, const kgate_params *, kgate_stream s)
{
    return k_simple_impl(i, o, s, 0);
}

static const kgate_kernel kernels[] = {
    {"illegal", "softmax", "fp16", NULL, 1, 1, k_illegal, "wild pointer write", NULL, NULL},
    {"spin", "softmax", "fp16", NULL, 1, 1, k_spin, "never finishes", NULL, NULL},
    {"zeros", "softmax", "fp16", NULL, 1, 1, k_zeros, "all-zero output", NULL, NULL},
    {"mutate", "softmax", "fp16", NULL, 1, 1, k_mutate, "modifies its input", NULL, NULL},
    {"sidestream", "softmax", "fp16", NULL, 1, 1, k_sidestream, "correct, on a stream of its own", NULL, NULL},
    {"racy", "softmax", "fp16", NULL, 1, 1, k_racy, "a shared-memory race (one barrier missing)", NULL, NULL},
    {"simple", "softmax", "fp16", NULL, 1, 1, k_simple, "one thread per row, correct", NULL, NULL},
};
static const kgate_plugin plugin = KGATE_PLUGIN(kernels);
const kgate_plugin *kgate_plugin_v2(void) { return &plugin; }
}
