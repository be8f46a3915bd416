/* index_select: out[i, :] = src[idx[i], :] for i < I, gathering rows of
 * src[S,D], as torch.index_select(src, 0, idx).
 * Inputs: src (data dtype, uniform in [-2, 2)), idx[I] (the kernel's index
 * dtype, int64 or int32, whole numbers in [0, S)). Output: out[I,D] (data
 * dtype).
 * Scalars: none.
 * Work (kg_gather_work): the indices read, the I gathered rows read and
 * out written once: I x index size + 2 x I x D x element size bytes (not the
 * whole source table: rows never selected need not be read, and a row
 * selected twice counts twice); 0 FLOPs. No library path: no vendor library
 * has a row gather (cuDNN, cuBLASLt and CUB do not).
 * Edge rows: rows are copied, not computed: the NaN, +-Inf, equal and
 * denormal rows planted in src reappear unchanged wherever idx selects them
 * (the edge check plants idx[0] = 0, idx[1] = S - 1 and a run of duplicates).
 * An index outside [0, S) (PyTorch raises) gives a NaN row.
 * GPU reference: index_select.cu. */
#include <math.h>

#include "gather.h"

void kg_gather_work(const kg_op *op, const kg_shape *s, kg_types t, kg_work *w)
{
    (void)op;
    const double n = (double)s->d[2], row = (double)s->d[1] * (double)kg_dtype_size(t.data);
    w->bytes_read = n * (double)kg_dtype_size(t.index) + n * row;
    w->bytes_written = n * row;
    w->bytes = w->bytes_read + w->bytes_written;
    w->flops = 0;
}

void kg_gather_cpu(const double *const *in, const kg_shape *s, const kgate_params *p,
                   double *const *out)
{
    (void)p;
    int64_t rows = s->d[0], d = s->d[1], n = s->d[2];
    for (int64_t i = 0; i < n; i++) {
        double k = in[1][i];
        int ok = k >= 0 && k < (double)rows && k == floor(k);
        for (int64_t j = 0; j < d; j++)
            out[0][i * d + j] = ok ? in[0][(int64_t)k * d + j] : NAN;
    }
}

const kg_op kg_op_index_select = {
    .name = "index_select",
    .summary = "gather rows of a matrix by an index vector",
    .family = KG_FAMILY_ELEMENTWISE,
    .dims = "SxDxI",
    .n_dims = 3,
    .dtypes = {KG_FP16, KG_BF16, KG_FP32},
    .n_dtypes = 3,
    .presets = {{"small", {3, {4096, 512, 512}}},
                {"medium", {3, {16384, 1024, 2048}}},
                {"large", {3, {65536, 2048, 4096}}}},
    .n_presets = 3,
    .n_inputs = 2,
    .n_outputs = 1,
    .in = {{.name = "src", .rank = 2, .dim = {0, 1}, .lo = -2.0, .hi = 2.0},
           {.name = "idx", .rank = 1, .dim = {2}, .type = KG_T_INDEX, .gen = KG_GEN_INDEX,
            .range_dim = 0}},
    .out = {{.name = "out", .rank = 2, .dim = {2, 1}}},
    .n_scalars = 0,
    .dists = KG_D(WIDE) | KG_D(BLOCKS),
    .reduction = 0,
    .unit = KG_UNIT_FP32,
    .flops_per_elem = 0,
    .min_rows = 6,
    .work = kg_gather_work,
    .cpu_reference = kg_gather_cpu,
    .reference = kg_index_select_reference,
    .fast = "v2",
    .no_baseline_why = "no vendor library has a row gather (cuDNN, cuBLASLt and CUB do not)",
    .edge_semantics = "rows are copied, not computed: NaN, +-Inf, equal and denormal rows of src "
                      "reappear unchanged wherever idx selects them; an index outside [0, S) "
                      "gives a NaN row",
    /* src rows [0.5, -1.25], [NaN, +Inf], [3, -0.75]; idx [2, 0, 2, 1]: the
     * last row, the first, the last again (a duplicate), the NaN/Inf row */
    .example = {{3, {3, 2, 4}},
                {(const double[]){0.5, -1.25, NAN, INFINITY, 3, -0.75},
                 (const double[]){2, 0, 2, 1}},
                {(const double[]){3, -0.75, 0.5, -1.25, 3, -0.75, NAN, INFINITY}}},
};
