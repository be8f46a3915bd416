// The fp32 accumulator operands of the wgmma asm statements in kernels/
// (wgmma_m64n128k16.cuh, wgmma_m64n256k16.cuh, wgmma_rs.cuh), written once:
// KG_WGMMA_ACCn(d, i) lists d[i] .. d[i + n - 1] as "+f" operands, in order.
#pragma once

#define KG_WGMMA_ACC8(d, i)                                                                           \
    "+f"((d)[(i) + 0]), "+f"((d)[(i) + 1]), "+f"((d)[(i) + 2]), "+f"((d)[(i) + 3]), "+f"((d)[(i) + 4]), \
        "+f"((d)[(i) + 5]), "+f"((d)[(i) + 6]), "+f"((d)[(i) + 7])
#define KG_WGMMA_ACC32(d, i) \
    KG_WGMMA_ACC8(d, i), KG_WGMMA_ACC8(d, (i) + 8), KG_WGMMA_ACC8(d, (i) + 16), KG_WGMMA_ACC8(d, (i) + 24)
#define KG_WGMMA_ACC64(d, i) KG_WGMMA_ACC32(d, i), KG_WGMMA_ACC32(d, (i) + 32)
#define KG_WGMMA_ACC128(d, i) KG_WGMMA_ACC64(d, i), KG_WGMMA_ACC64(d, (i) + 64)
