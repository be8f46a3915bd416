/* The correctness rule, shared by the CPU and the GPU comparison.
 *
 * For every output element, with ref the fp64 reference:
 *   - ref is NaN                       -> out must be NaN
 *   - ref rounds to +-Inf in the output dtype (|ref| >= inf_threshold)
 *                                      -> out must be the same infinity
 *   - otherwise                        -> out finite and
 *                                         |out - ref| <= atol + rtol * |ref|
 * and over all elements where both are finite,
 *   rel_l2 = ||out - ref||_2 / ||ref||_2 <= l2_max
 * (||ref|| = 0 falls back to the absolute norm), so an all-zero or constant
 * output can never pass even where atol alone would admit it.
 *
 * Tolerances (the paper's, section III-C): fp32 1e-5, fp16 1e-3, bf16 1e-2,
 * doubled for operators that reduce (and for fp32 long sums, kg_op_tol);
 * atol = rtol = l2_max = that value.
 *
 * Outputs that are long sums of products (matmul, convolution: kg_op.tol_rms,
 * and every problem) carry rounding error that grows with
 * the magnitude of the sum's partials, not with the element: an element of
 * a 16384-long dot product that cancels to 0.03 has the absolute error of
 * its neighbours of 40. For them atol is multiplied by the RMS of the finite
 * reference values where that exceeds 1 (kg_tol_scale); rtol and the rel_l2
 * bound stay, so a kernel that is wrong everywhere still fails. Attention's
 * output is not one: a convex combination of V rows, bounded by them
 * (src/ops/attention.c). */
#ifndef KG_TOLERANCE_H
#define KG_TOLERANCE_H

#include <math.h>
#include <stdint.h>

#include "../base/kg.h"

#ifdef __CUDACC__
#define KG_HD __host__ __device__
#else
#define KG_HD
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kg_tol {
    double atol, rtol, l2_max;
    double inf_threshold; /* smallest |x| that rounds to Inf in the output dtype */
} kg_tol;

/* Outcome of one element. */
enum { KG_CMP_PASS = 0, KG_CMP_TOL = 1, KG_CMP_NAN = 2, KG_CMP_INF = 3 };

KG_HD static inline int kg_cmp_elem(double out, double ref, const kg_tol *t)
{
    if (ref != ref)
        return out != out ? KG_CMP_PASS : KG_CMP_NAN;
    if (out != out)
        return KG_CMP_NAN;
    if (ref >= t->inf_threshold || ref <= -t->inf_threshold) {
        double inf = ref > 0 ? 1.0 / 0.0 : -1.0 / 0.0;
        return out == inf ? KG_CMP_PASS : KG_CMP_INF;
    }
    if (out - out != 0) /* out is +-Inf, ref finite */
        return KG_CMP_INF;
    double d = out - ref;
    double a = ref < 0 ? -ref : ref;
    if (d < 0)
        d = -d;
    return d <= t->atol + t->rtol * a ? KG_CMP_PASS : KG_CMP_TOL;
}

#define KG_CMP_FIRST 8
/* Accumulated comparison of one output tensor. */
typedef struct kg_cmp {
    int64_t n, n_fail, n_nan, n_inf;
    double sq_err, sq_ref, max_abs_err;
    int n_first;                      /* recorded mismatches, up to KG_CMP_FIRST */
    int64_t first_idx[KG_CMP_FIRST];
    double first_out[KG_CMP_FIRST], first_ref[KG_CMP_FIRST];
    double max_scaled_err; /* max |out - ref| / (1 + |ref|) over finite pairs (inf for a NaN
                            * or Inf where the reference is finite): what an allclose with
                            * atol = rtol = x bounds by x (KernelBench's gate, at 1e-2) */
    double rel_l2; /* set by kg_cmp_finish */
    int pass;      /* set by kg_cmp_finish */
} kg_cmp;

/* Tolerance of a dtype; `reduction` doubles it. */
kg_tol kg_tol_for(kg_dtype out_dtype, int reduction);

/* atol of an operator with long sums, given the RMS of its reference. */
static inline void kg_tol_scale(kg_tol *t, double ref_rms)
{
    if (ref_rms > 1 && ref_rms == ref_rms && ref_rms - ref_rms == 0)
        t->atol *= ref_rms;
}

/* RMS of the finite reference values that a comparison saw. */
static inline double kg_cmp_ref_rms(const kg_cmp *r)
{
    return r->n > 0 ? sqrt(r->sq_ref / (double)r->n) : 0;
}

/* Compares n host values (out, ref) and finishes the result. */
void kg_cmp_host(const double *out, const double *ref, int64_t n, const kg_tol *t, kg_cmp *r);

/* Computes rel_l2 and pass from the accumulated fields. */
void kg_cmp_finish(kg_cmp *r, const kg_tol *t);

/* One line: "3 of 1048576 elements out of tolerance (first: [17] got 1.5 want 1.2; ...)". */
void kg_cmp_describe(const kg_cmp *r, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
