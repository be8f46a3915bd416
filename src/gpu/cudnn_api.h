/* cuDNN, loaded at run time. kgate starts without cuDNN; when the library is
 * missing or too old, the cuDNN baselines report `unsupported` and the
 * bundled kernels stand in (flagged baseline-fallback). */
#ifndef KG_CUDNN_API_H
#define KG_CUDNN_API_H

#include <cudnn.h>

#include "../base/kg.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The functions kgate calls, with the header's own prototypes. */
#define KG_CUDNN_FNS(X)                                                                         \
    X(cudnnGetVersion) X(cudnnGetErrorString) X(cudnnGetLastErrorString) X(cudnnCreate)          \
    X(cudnnDestroy) X(cudnnSetStream) X(cudnnCreateTensorDescriptor)                             \
    X(cudnnDestroyTensorDescriptor) X(cudnnSetTensor4dDescriptor) X(cudnnSoftmaxForward)         \
    X(cudnnBackendCreateDescriptor) X(cudnnBackendDestroyDescriptor) X(cudnnBackendSetAttribute) \
    X(cudnnBackendGetAttribute) X(cudnnBackendFinalize) X(cudnnBackendExecute)                 \
    X(cudnnSetTensorNdDescriptor) X(cudnnCreateOpTensorDescriptor)                              \
    X(cudnnSetOpTensorDescriptor) X(cudnnDestroyOpTensorDescriptor) X(cudnnOpTensor)             \
    X(cudnnCreateActivationDescriptor) X(cudnnSetActivationDescriptor)                          \
    X(cudnnDestroyActivationDescriptor) X(cudnnActivationForward)                               \
    X(cudnnCreateReduceTensorDescriptor) X(cudnnSetReduceTensorDescriptor)                      \
    X(cudnnDestroyReduceTensorDescriptor) X(cudnnGetReductionIndicesSize)                       \
    X(cudnnGetReductionWorkspaceSize) X(cudnnReduceTensor) X(cudnnTransformTensor)

typedef struct kg_cudnn_api {
    void *lib;
#define X(f) __typeof__(&f) f;
    KG_CUDNN_FNS(X)
#undef X
} kg_cudnn_api;

/* cuDNN's element type for a kgate data dtype (fp16, bf16, else fp32). */
static inline cudnnDataType_t kg_cudnn_type(kg_dtype dt)
{
    return dt == KG_FP16 ? CUDNN_DATA_HALF : dt == KG_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}

/* Loads libcudnn.so.9 (once). NULL and an error (KG_EXIT_ENV) naming the
 * library or the missing symbol when it cannot. */
const kg_cudnn_api *kg_cudnn_load(kg_err *err);
/* The loaded table, or NULL before a successful kg_cudnn_load. */
const kg_cudnn_api *kg_cudnn_loaded(void);

#ifdef __cplusplus
}
#endif
#endif
