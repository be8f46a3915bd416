// A CUDA source candidate that does not compile: its kernel fails its first
// call with NVRTC's first error (CRASH), the others of a run go on.
/* kgate: [{"name": "rtc_broken_fp32", "op": "relu", "dtype": "fp32", "function": "broken",
            "block": 128, "grid": "elements", "args": ["in0", "out0", "numel"]}] */
extern "C" __global__ void broken(const float *x, float *y, long long n)
{
    y[0] = undeclared_name + x[0];
}
