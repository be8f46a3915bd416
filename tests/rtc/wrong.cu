// A CUDA source candidate that compiles and is wrong (it doubles): INCORRECT.
/* kgate: [{"name": "rtc_relu_wrong_fp32", "op": "relu", "dtype": "fp32", "function": "relu_wrong",
            "block": 128, "grid": "elements", "args": ["in0", "out0", "numel"]}] */
extern "C" __global__ void relu_wrong(const float *x, float *y, long long n)
{
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = 2.0f * fmaxf(x[i], 0.0f);
}
