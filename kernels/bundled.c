/* The bundled suite as a kgate candidate: every variant in kernels/, listed
 * naive first so that `kgate run` can report the cliff (t_naive / t_fast). */
#include <kgate/plugin.h>

#define KERNEL(name) \
    int name(const DLTensor *, int, DLTensor *, int, const kgate_params *, kgate_stream);
KERNEL(kg_matmul_v1_fp16)
KERNEL(kg_matmul_v2_fp16)
KERNEL(kg_matmul_v1_bf16)
KERNEL(kg_matmul_v2_bf16)
KERNEL(kg_layer_norm_v1_bf16)
KERNEL(kg_layer_norm_v2_bf16)
KERNEL(kg_softmax_v1_fp16)
KERNEL(kg_softmax_v2_fp16)

static const kgate_kernel kernels[] = {
    {"matmul_v1_fp16", "matmul", "fp16", 2, 1, kg_matmul_v1_fp16, "64x64 tile, fp32 FMA, no tensor cores"},
    {"matmul_v2_fp16", "matmul", "fp16", 2, 1, kg_matmul_v2_fp16, "TMA + wgmma, warp-specialized, 4 stages"},
    {"matmul_v1_bf16", "matmul", "bf16", 2, 1, kg_matmul_v1_bf16, "64x64 tile, fp32 FMA, no tensor cores"},
    {"matmul_v2_bf16", "matmul", "bf16", 2, 1, kg_matmul_v2_bf16, "TMA + wgmma, warp-specialized, 4 stages"},
    {"layer_norm_v1_bf16", "layer_norm", "bf16", 3, 1, kg_layer_norm_v1_bf16, "serial row reduction, fp32 round trip (RC0a)"},
    {"layer_norm_v2_bf16", "layer_norm", "bf16", 3, 1, kg_layer_norm_v2_bf16, "row in registers, 16-byte I/O, shuffle reductions"},
    {"softmax_v1_fp16", "softmax", "fp16", 1, 1, kg_softmax_v1_fp16, "serial row reduction, full row in shared memory"},
    {"softmax_v2_fp16", "softmax", "fp16", 1, 1, kg_softmax_v2_fp16, "row in registers, 16-byte I/O, shuffle reductions"},
};

static const kgate_plugin plugin = {KGATE_ABI_VERSION, sizeof kernels / sizeof kernels[0], kernels};

const kgate_plugin *kgate_plugin_v1(void) { return &plugin; }
