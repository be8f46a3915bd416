/* Small CUDA helpers of the library paths, callable from C (baseline_cub.cu). */
#ifndef KG_BASELINE_CUB_H
#define KG_BASELINE_CUB_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include <kgate/plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

/* out[r] = idx[r] mod cols for r < rows, as int64: widens the 32-bit indices
 * cudnnReduceTensor writes (relative to the row or flattened over the whole
 * tensor: the remainder is the column either way). Enqueued on s; returns
 * the launch's status. */
cudaError_t kg_widen_row_index_u32(const uint32_t *idx, int64_t *out, int64_t rows, int64_t cols,
                                   kgate_stream s);

#ifdef __cplusplus
}
#endif
#endif
