/* Device tensors for the worker: allocation as DLTensors, seeded inputs,
 * planted edge cases, output poisoning, input checksums, and the comparison
 * of an output against its fp64 reference (the rule in catalog/tolerance.h). */
#ifndef KG_TENSORS_H
#define KG_TENSORS_H

#include <kgate/plugin.h>

#include "../base/kg.h"
#include "../catalog/tolerance.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Allocates a contiguous device tensor; shape is copied. Free with
 * kg_tensor_free. The data is 256-byte aligned and has KG_GUARD_BYTES of
 * guard before it and at least that many after it, filled with the guard
 * byte (kg_tensor_guard_pattern, set before allocating). */
#define KG_GUARD_BYTES 65536
int kg_tensor_alloc(DLTensor *t, kg_dtype dt, int rank, const int64_t *ext, kg_err *err);
void kg_tensor_guard_pattern(unsigned char v);
/* Counts the guard bytes that changed before and after the tensor (a write
 * out of bounds); synchronizes s. */
int kg_tensor_guard_check(const DLTensor *t, int64_t *before, int64_t *after, kgate_stream s,
                          kg_err *err);
void kg_tensor_free(DLTensor *t);
int64_t kg_tensor_numel(const DLTensor *t);
size_t kg_tensor_nbytes(const DLTensor *t);
kg_dtype kg_tensor_dtype(const DLTensor *t);

/* Uniform values in [lo, hi) from Philox, seeded; enqueued on s. */
int kg_tensor_fill_uniform(DLTensor *t, double lo, double hi, uint64_t seed, kgate_stream s,
                           kg_err *err);
/* Values of distribution `dist` (kg_dist, catalog/op.h) from [lo, hi), the
 * tensor viewed as rows of `cols`; enqueued on s. */
int kg_tensor_fill_dist(DLTensor *t, int dist, double lo, double hi, int64_t cols, uint64_t seed,
                        kgate_stream s, kg_err *err);
/* Whole numbers uniform in [0, range) in an int32 or int64 tensor. */
int kg_tensor_fill_index(DLTensor *t, int64_t range, uint64_t seed, kgate_stream s, kg_err *err);
/* Index edges: element 0 the first valid index, element 1 the last, 2..5 a
 * run of one repeated index (needs 6 elements; fewer are left alone). */
int kg_tensor_plant_index_edges(DLTensor *t, int64_t range, kgate_stream s, kg_err *err);
/* Plants edge rows in a [rows, cols] view: row 0 a NaN, row 1 a +Inf, row 2
 * a -Inf, row 3 all equal (1.25), row 4 denormals, row 5 (when rows >= 6)
 * all -Inf. Needs rows >= 5. */
int kg_tensor_plant_edges(DLTensor *t, int64_t rows, int64_t cols, kgate_stream s, kg_err *err);
/* Fills with all-ones bytes (NaN in every float format). */
int kg_tensor_poison(DLTensor *t, kgate_stream s, kg_err *err);
/* Order-sensitive 64-bit checksum of the bytes; synchronizes s. */
int kg_tensor_checksum(const DLTensor *t, uint64_t *sum, kgate_stream s, kg_err *err);
/* Compares out against ref (device doubles, same element count); synchronizes s. */
int kg_tensor_compare(const DLTensor *out, const double *ref, const kg_tol *tol, kg_cmp *res,
                      kgate_stream s, kg_err *err);
/* The KG_CMP_ARG rule (catalog/op.h): out holds one index per row of x viewed
 * as [rows, cols]; ref one value per row. Synchronizes s. */
int kg_tensor_compare_arg(const DLTensor *out, const DLTensor *x, const double *ref, kg_cmp *res,
                          kgate_stream s, kg_err *err);
/* Copies a tensor to host doubles (n = numel). */
int kg_tensor_to_host(const DLTensor *t, double *host, kg_err *err);

#ifdef __cplusplus
}
#endif
#endif
