/* What the cuBLASLt matmul baselines share (baseline_cublaslt.c,
 * baseline_cublaslt_gemm2.c): the CUDA data type of a kgate dtype, the
 * heuristic query with kgate's workspace, and the choice among its answers
 * by timing each through the timing engine.
 * The rule: every cuBLASLt matmul path asks the heuristic for its top
 * KG_LT_ALGOS algorithms with a KG_LT_WORKSPACE workspace and keeps the
 * fastest that runs, so that no path is judged by the heuristic's first
 * guess. */
#ifndef KG_BASELINE_CUBLASLT_COMMON_H
#define KG_BASELINE_CUBLASLT_COMMON_H

#include <cublasLt.h>

#include <kgate/plugin.h>

#include "../base/kg.h"

#define KG_LT_WORKSPACE (64u << 20)
#define KG_LT_ALGOS 8

/* CUDA_R_16F, CUDA_R_16BF, else CUDA_R_32F. */
cudaDataType_t kg_lt_type(kg_dtype dt);

/* Up to KG_LT_ALGOS heuristic answers for D = op(A) op(B) (+ C) with a
 * KG_LT_WORKSPACE workspace, into res; *found of them. None is an error
 * (KG_EXIT_ENV) naming `what`. */
int kg_lt_heuristics(cublasLtHandle_t h, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t la,
                     cublasLtMatrixLayout_t lb, cublasLtMatrixLayout_t lc,
                     cublasLtMatrixLayout_t ld, const char *what,
                     cublasLtMatmulHeuristicResult_t res[KG_LT_ALGOS], int *found, kg_err *err);

/* Times launch(ctx) on s once per answer, with *slot (the algorithm the
 * launch uses) set to that answer's; leaves the fastest in *slot and returns
 * its index, or -1 (an error naming the count) when none ran. */
int kg_lt_fastest(const cublasLtMatmulHeuristicResult_t *res, int found, cublasLtMatmulAlgo_t *slot,
                  int (*launch)(void *ctx, kgate_stream s, kg_err *err), void *ctx,
                  kgate_stream s, kg_err *err);

#endif
