/* The table of library paths: one row a path, found by name; and the trial
 * run every setup makes. */
#include "baseline.h"

#include <cuda_runtime_api.h>
#include <string.h>

#include "check.h"

extern const kg_baseline kg_baseline_cublaslt, kg_baseline_cudnn_softmax,
    kg_baseline_cudnn_layer_norm;
/* baseline_cudnn_ops.c (legacy cuDNN) */
extern const kg_baseline kg_baseline_cudnn_optensor_add, kg_baseline_cudnn_optensor_mul,
    kg_baseline_cudnn_activation_relu, kg_baseline_cudnn_log_softmax, kg_baseline_cudnn_reduce_max,
    kg_baseline_cudnn_reduce_avg, kg_baseline_cudnn_reduce_argmax, kg_baseline_cudnn_transform;
/* baseline_cudnn_graph.c (cuDNN graph API) */
extern const kg_baseline kg_baseline_cudnn_pointwise_add, kg_baseline_cudnn_pointwise_mul,
    kg_baseline_cudnn_pointwise_relu, kg_baseline_cudnn_pointwise_leaky_relu,
    kg_baseline_cudnn_rms_norm;
/* baseline_cudnn_conv.c (cuDNN graph API convolution forward, NCHW and NHWC) */
extern const kg_baseline kg_baseline_cudnn_conv, kg_baseline_cudnn_conv_nhwc;
/* baseline_cub.cu */
extern const kg_baseline kg_baseline_cub_argmax, kg_baseline_cub_max, kg_baseline_cub_mean,
    kg_baseline_cub_logsumexp;
/* baseline_cudnn_sdpa.c (cuDNN fused attention) */
extern const kg_baseline kg_baseline_cudnn_sdpa;
/* baseline_cublaslt.c (matrix transform) */
extern const kg_baseline kg_baseline_cublaslt_transpose, kg_baseline_cublaslt_geam;
/* baseline_cublaslt_gemm2.c (batched matmul, linear + SiLU gate) */
extern const kg_baseline kg_baseline_cublaslt_batched, kg_baseline_cublaslt_linact,
    kg_baseline_cublaslt_linact_h;

static const kg_baseline *const table[] = {
    &kg_baseline_cublaslt,
    &kg_baseline_cudnn_softmax,
    &kg_baseline_cudnn_layer_norm,
    &kg_baseline_cudnn_optensor_add,
    &kg_baseline_cudnn_optensor_mul,
    &kg_baseline_cudnn_pointwise_add,
    &kg_baseline_cudnn_pointwise_mul,
    &kg_baseline_cudnn_pointwise_relu,
    &kg_baseline_cudnn_pointwise_leaky_relu,
    &kg_baseline_cudnn_activation_relu,
    &kg_baseline_cudnn_log_softmax,
    &kg_baseline_cudnn_reduce_max,
    &kg_baseline_cudnn_reduce_avg,
    &kg_baseline_cudnn_reduce_argmax,
    &kg_baseline_cub_argmax,
    &kg_baseline_cub_max,
    &kg_baseline_cub_mean,
    &kg_baseline_cub_logsumexp,
    &kg_baseline_cublaslt_transpose,
    &kg_baseline_cudnn_transform,
    &kg_baseline_cublaslt_geam,
    &kg_baseline_cudnn_rms_norm,
    &kg_baseline_cublaslt_batched,
    &kg_baseline_cublaslt_linact,
    &kg_baseline_cublaslt_linact_h,
    &kg_baseline_cudnn_sdpa,
    &kg_baseline_cudnn_conv,
    &kg_baseline_cudnn_conv_nhwc,
};

const kg_baseline *kg_baseline_at(int i)
{
    return i >= 0 && (size_t)i < sizeof table / sizeof table[0] ? table[i] : NULL;
}

const kg_baseline *kg_baseline_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i]->name, name) == 0)
            return table[i];
    return NULL;
}

int kg_baseline_trial(int (*launch)(void *ctx, kgate_stream s, kg_err *err), void *ctx,
                      kgate_stream s, kg_err *err)
{
    if (launch(ctx, s, err))
        return err->code;
    KG_CUDA(cudaStreamSynchronize((cudaStream_t)s));
    KG_CUDA(cudaGetLastError());
    return 0;
out:
    return err->code;
}

int64_t kg_divisor_upto(int64_t n, int64_t cap)
{
    for (int64_t d = n < cap ? n : cap; d > 1; d--)
        if (n % d == 0)
            return d;
    return 1;
}
