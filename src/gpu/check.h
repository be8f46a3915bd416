/* One checking macro per API family. Each records the call text, file, line
 * and the library's own error string in `err` (a kg_err *) and jumps to the
 * function's single cleanup label `out`. Only the CLI decides to exit. */
#ifndef KG_CHECK_H
#define KG_CHECK_H

#include <cuda_runtime_api.h>

#include "../base/kg.h"

#define KG_CUDA(call)                                                                       \
    do {                                                                                    \
        cudaError_t rc_ = (call);                                                           \
        if (rc_ != cudaSuccess) {                                                           \
            kg_err_set(err, KG_EXIT_ENV, "%s failed at %s:%d: %s (%s)", #call, __FILE__,    \
                       __LINE__, cudaGetErrorString(rc_), cudaGetErrorName(rc_));           \
            goto out;                                                                       \
        }                                                                                   \
    } while (0)

#define KG_CUBLAS(call)                                                                     \
    do {                                                                                    \
        cublasStatus_t rc_ = (call);                                                        \
        if (rc_ != CUBLAS_STATUS_SUCCESS) {                                                 \
            kg_err_set(err, KG_EXIT_ENV, "%s failed at %s:%d: %s", #call, __FILE__, __LINE__, \
                       cublasLtGetStatusString(rc_));                                       \
            goto out;                                                                       \
        }                                                                                   \
    } while (0)

#define KG_CUDNN(call)                                                                      \
    do {                                                                                    \
        cudnnStatus_t rc_ = (call);                                                         \
        if (rc_ != CUDNN_STATUS_SUCCESS) {                                                  \
            char last_[256] = "";                                                           \
            kg_cudnn_loaded()->cudnnGetLastErrorString(last_, sizeof last_);                \
            kg_err_set(err, KG_EXIT_ENV, "%s failed at %s:%d: %s%s%s", #call, __FILE__,     \
                       __LINE__, kg_cudnn_loaded()->cudnnGetErrorString(rc_),               \
                       last_[0] ? ": " : "", last_);                                        \
            goto out;                                                                       \
        }                                                                                   \
    } while (0)

#define KG_NVML(nvml, call)                                                                 \
    do {                                                                                    \
        nvmlReturn_t rc_ = (call);                                                          \
        if (rc_ != NVML_SUCCESS) {                                                          \
            kg_err_set(err, KG_EXIT_ENV, "%s failed at %s:%d: %s", #call, __FILE__, __LINE__, \
                       (nvml)->ErrorString ? (nvml)->ErrorString(rc_) : "?");              \
            goto out;                                                                       \
        }                                                                                   \
    } while (0)

#define KG_CUPTI(call)                                                                      \
    do {                                                                                    \
        CUptiResult rc_ = (call);                                                           \
        if (rc_ != CUPTI_SUCCESS) {                                                         \
            const char *s_ = "?";                                                           \
            cuptiGetResultString(rc_, &s_);                                                 \
            kg_err_set(err, KG_EXIT_ENV, "%s failed at %s:%d: %s", #call, __FILE__, __LINE__, s_); \
            goto out;                                                                       \
        }                                                                                   \
    } while (0)

#endif
