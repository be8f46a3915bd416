// A CUDA source candidate (docs/abi.md): relu in fp16 and fp32, compiled by
// NVRTC at run time. The kgate comment is its launch description.
#include <cuda_fp16.h>

/* kgate: [
  {"name": "rtc_relu_fp16", "op": "relu", "dtype": "fp16", "function": "relu_fp16",
   "block": 256, "grid": "elements", "args": ["in0", "out0", "numel"],
   "summary": "one thread an element, __hmax with 0"},
  {"name": "rtc_relu_fp32", "op": "relu", "dtype": "fp32", "function": "relu_fp32",
   "block": 256, "grid": [1024, 1, 1], "args": ["in0", "out0", "numel"],
   "summary": "a grid-stride loop over 1024 blocks"}
] */

extern "C" __global__ void relu_fp16(const __half *x, __half *y, long long n)
{
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) {
        __half v = x[i];
        y[i] = __hisnan(v) ? v : __hmax(v, __float2half(0.0f)); // NaN stays NaN, as torch.relu
    }
}

extern "C" __global__ void relu_fp32(const float *x, float *y, long long n)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        float v = x[i];
        y[i] = v != v ? v : fmaxf(v, 0.0f);
    }
}
