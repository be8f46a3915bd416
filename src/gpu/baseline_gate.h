/* The pointwise SiLU gate of the unfused library path of linear_activation
 * (baseline_cublaslt_gemm2.c), callable from C (baseline_gate.cu). */
#ifndef KG_BASELINE_GATE_H
#define KG_BASELINE_GATE_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include <kgate/plugin.h>

#include "../base/kg.h"

#ifdef __cplusplus
extern "C" {
#endif

/* out[i] = a[i] / (1 + exp(-a[i])) * b[i] for i < n, in fp32: a and b of
 * dtype in_dt (fp32, fp16 or bf16), out of dtype out_dt (fp16 or bf16).
 * Four elements a thread where n % 4 == 0 and the pointers allow 16-byte
 * (fp32) or 8-byte (16-bit) vectors, else one. Enqueued on s; returns the
 * launch's status (cudaErrorInvalidValue for another dtype). */
cudaError_t kg_silu_gate(kg_dtype in_dt, const void *a, const void *b, kg_dtype out_dt, void *out,
                         int64_t n, kgate_stream s);

#ifdef __cplusplus
}
#endif
#endif
