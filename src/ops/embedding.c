/* embedding: out[n, :] = table[idx[n], :] for n < N, looking rows of
 * table[V,D] up by token id, as torch.nn.functional.embedding(idx, table)
 * (no padding_idx, no max_norm).
 * Inputs: table (data dtype, uniform in [-2, 2)), idx[N] (the kernel's index
 * dtype, int64 or int32, whole numbers in [0, V)). Output: out[N,D] (data
 * dtype).
 * Scalars: none.
 * Work (kg_gather_work, index_select.c): the ids read, the N looked-up rows
 * read and out written once: N x index size + 2 x N x D x element size bytes
 * (not the whole table: rows never looked up need not be read, and a
 * repeated id counts every time); 0 FLOPs. No library path: no vendor library has an
 * embedding lookup (cuDNN, cuBLASLt and CUB do not).
 * Edge rows: rows are copied, not computed: the NaN, +-Inf, equal and
 * denormal rows planted in the table reappear unchanged wherever an id
 * selects them (the edge check plants idx[0] = 0, idx[1] = V - 1 and a run
 * of duplicates). An id outside [0, V) (PyTorch raises) gives a NaN row.
 * References: index_select's (gather.h): an embedding lookup is the same
 * row gather. */
#include <math.h>

#include "gather.h"

const kg_op kg_op_embedding = {
    .name = "embedding",
    .summary = "embedding lookup: rows of a table by token id",
    .family = KG_FAMILY_ELEMENTWISE,
    .dims = "VxDxN",
    .n_dims = 3,
    .dtypes = {KG_FP16, KG_BF16, KG_FP32},
    .n_dtypes = 3,
    .presets = {{"small", {3, {8192, 256, 8192}}},
                {"medium", {3, {32768, 512, 32768}}},
                {"large", {3, {131072, 1024, 131072}}}},
    .n_presets = 3,
    .n_inputs = 2,
    .n_outputs = 1,
    .in = {{.name = "table", .rank = 2, .dim = {0, 1}, .lo = -2.0, .hi = 2.0},
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
    .no_baseline_why = "no vendor library has an embedding lookup (cuDNN, cuBLASLt and CUB do "
                       "not)",
    .edge_semantics = "rows are copied, not computed: NaN, +-Inf, equal and denormal rows of the "
                      "table reappear unchanged wherever an id selects them; an id outside "
                      "[0, V) gives a NaN row",
    /* table rows [0.5, -1.25], [-Inf, 0.1], [1.5, NaN], [-3, 2.75]; ids
     * [3, 1, 3, 0, 2]: the last row, the -Inf row, the last again (a
     * duplicate), the first, the NaN row (0.1 is the double nearest 1/10) */
    .example = {{3, {4, 2, 5}},
                {(const double[]){0.5, -1.25, -INFINITY, 0.10000000000000001, 1.5, NAN, -3, 2.75},
                 (const double[]){3, 1, 3, 0, 2}},
                {(const double[]){-3, 2.75, -INFINITY, 0.10000000000000001, -3, 2.75, 0.5, -1.25,
                                  1.5, NAN}}},
};
