// A relu fp16 candidate with a configuration space, for `kgate tune`:
//   block  = 64|128|256|512 threads a block
//   passes = 1|2|4|8: the kernel computes the result `passes` times (each
//            pass rewrites the same values): correct, and slower with every
//            pass, so the known best configuration has passes = 1
// valid() refuses block = 512 with passes = 8 ("cannot run this shape", to
// exercise skipping). Built with DEFECT=n, a broken tunables table instead
// (tests/tune.sh): 1 a knob named twice, 2 a tunable of a kernel the table
// lacks, 3 a knob with no values, 4 a version other than 1.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <kgate/plugin.h>

__global__ void relu_passes(const __half *x, __half *y, int64_t n, int passes)
{
    for (int p = 0; p < passes; p++)
        for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
            y[i] = __hgt(x[i], __float2half(0.f)) || __hisnan(x[i]) ? x[i] : __float2half(0.f);
}

static int64_t numel(const DLTensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++)
        n *= t->shape[i];
    return n;
}

static int run(const DLTensor *in, DLTensor *out, int block, int passes, kgate_stream s)
{
    int64_t n = numel(&in[0]);
    int64_t blocks = (n + block - 1) / block;
    if (blocks > 132 * 32)
        blocks = 132 * 32;
    relu_passes<<<(unsigned)(blocks ? blocks : 1), block, 0, (cudaStream_t)s>>>((const __half *)in[0].data,
                                                                                (__half *)out[0].data, n, passes);
    return cudaGetLastError() != cudaSuccess;
}

static int relu_default(const DLTensor *in, int ni, DLTensor *out, int no, const kgate_params *p, kgate_stream s)
{
    (void)ni;
    (void)no;
    (void)p;
    return run(in, out, 256, 4, s); /* an untuned default: four passes */
}

static int relu_config(const DLTensor *in, int ni, DLTensor *out, int no, const kgate_params *p,
                       const int64_t *config, kgate_stream s)
{
    (void)ni;
    (void)no;
    (void)p;
    return run(in, out, (int)config[0], (int)config[1], s);
}

static int valid(const int64_t *config, const int64_t *extents, int n)
{
    (void)extents;
    (void)n;
    return !(config[0] == 512 && config[1] == 8);
}

static const kgate_kernel kernels[] = {
    {"relu_tuned", "relu", "fp16", NULL, 1, 1, relu_default, "relu, block and passes tunable", NULL, NULL},
    {"relu_plain", "relu", "fp16", NULL, 1, 1, relu_default, "relu, no space", NULL, NULL},
};
static const kgate_plugin plugin = KGATE_PLUGIN(kernels);

static const int64_t blocks[] = {64, 128, 256, 512};
static const int64_t passes[] = {1, 2, 4, 8};
#ifndef DEFECT
#define DEFECT 0
#endif
static const kgate_knob knobs[] = {
    {"block", 4, blocks},
    {DEFECT == 1 ? "block" : "passes", DEFECT == 3 ? 0u : 4u, passes},
};
static const kgate_tunable tunables[] = {
    {DEFECT == 2 ? "relu_missing" : "relu_tuned", 2, knobs, relu_config, valid},
};
static const kgate_tunables tt = {DEFECT == 4 ? 2u : 1u, 1, tunables};

extern "C" __attribute__((visibility("default"))) const kgate_plugin *kgate_plugin_v2(void) { return &plugin; }
extern "C" __attribute__((visibility("default"))) const kgate_tunables *kgate_tunables_v1(void) { return &tt; }
