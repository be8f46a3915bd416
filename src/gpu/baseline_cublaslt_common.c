/* The pieces the cuBLASLt matmul baselines share (baseline_cublaslt_common.h). */
#include "baseline_cublaslt_common.h"

#include "check.h"
#include "timer.h"

cudaDataType_t kg_lt_type(kg_dtype dt)
{
    return dt == KG_FP16 ? CUDA_R_16F : dt == KG_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

int kg_lt_heuristics(cublasLtHandle_t h, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t la,
                     cublasLtMatrixLayout_t lb, cublasLtMatrixLayout_t lc,
                     cublasLtMatrixLayout_t ld, const char *what,
                     cublasLtMatmulHeuristicResult_t res[KG_LT_ALGOS], int *found, kg_err *err)
{
    cublasLtMatmulPreference_t pref = NULL;
    uint64_t ws = KG_LT_WORKSPACE;
    *found = 0;
    KG_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
    KG_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                   &ws, sizeof ws));
    KG_CUBLAS(cublasLtMatmulAlgoGetHeuristic(h, op, la, lb, lc, ld, pref, KG_LT_ALGOS, res, found));
    if (*found == 0)
        kg_err_set(err, KG_EXIT_ENV, "cuBLASLt found no algorithm for %s", what);
out:
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    return err->code;
}

/* The timing engine's callback around a path's own launch. */
typedef struct lt_timed {
    int (*launch)(void *ctx, kgate_stream s, kg_err *err);
    void *ctx;
} lt_timed;

static int lt_timed_cb(void *p, int set, kgate_stream s, kg_err *err)
{
    (void)set;
    lt_timed *t = p;
    return t->launch(t->ctx, s, err);
}

int kg_lt_fastest(const cublasLtMatmulHeuristicResult_t *res, int found, cublasLtMatmulAlgo_t *slot,
                  int (*launch)(void *ctx, kgate_stream s, kg_err *err), void *ctx,
                  kgate_stream s, kg_err *err)
{
    lt_timed t = {launch, ctx};
    int best = -1;
    double best_t = 1e30;
    for (int i = 0; i < found; i++) {
        kg_timer_cfg tc;
        kg_timing tm;
        kg_err e2 = {0, ""};
        kg_timer_defaults(&tc);
        tc.stop.min_samples = 5;
        tc.stop.min_gpu_s = 0.02;
        tc.stop.max_wall_s = 1.0;
        tc.stop.max_samples = 200;
        tc.warmup = 1;
        tc.batch_below_s = 0;
        *slot = res[i].algo;
        if (kg_time(&tc, lt_timed_cb, &t, s, &tm, &e2) == 0 && tm.st.median < best_t) {
            best_t = tm.st.median;
            best = i;
        }
    }
    if (best < 0) {
        kg_err_set(err, KG_EXIT_ENV, "none of %d cuBLASLt algorithms ran", found);
        return -1;
    }
    *slot = res[best].algo;
    return best;
}
