// wgmma m64nNk16 with the A operand in registers (the "RS" form) and an
// MN-major (transposed) B from a shared-memory descriptor, fp32 accumulators,
// written out once for each N the kernels of kernels/ use (attention v3's
// O += P.V: P in registers, V row-major [keys, D], N = D = 64 or 128).
#pragma once

#include "wgmma_acc.cuh"

// D[64xN] += A[64x16] . B[16xN]: A as four 32-bit registers a[0..3] of two
// 16-bit elements each (low half first), in the wgmma A-fragment layout:
// warp w of the warpgroup holds rows 16w..16w+15 as mma.m16n8k16's A, with
// g = lane/4, q = lane%4: a[0] row g, columns 2q and 2q+1; a[1] row g+8;
// a[2] row g, columns 8+2q and 8+2q+1; a[3] row g+8, the same columns.
// B MN-major (row-major [K,N]: imm-trans-b 1); scale-d 1 (accumulate).
// PTX_TYPE is f16 or bf16.
#define KG_WGMMA_RS_M64N64K16(PTX_TYPE, d, a, db)                                   \
    asm volatile("{\n"                                                            \
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32." PTX_TYPE "." PTX_TYPE " " \
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "  \
                 "{%32, %33, %34, %35}, %36, 1, 1, 1, 1;\n"                 \
                 "}\n"                                                             \
                 : KG_WGMMA_ACC32(d, 0) \
                 : "r"((a)[0]), "r"((a)[1]), "r"((a)[2]), "r"((a)[3]), "l"(db))

#define KG_WGMMA_RS_M64N128K16(PTX_TYPE, d, a, db)                                   \
    asm volatile("{\n"                                                            \
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32." PTX_TYPE "." PTX_TYPE " " \
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "  \
                 "{%64, %65, %66, %67}, %68, 1, 1, 1, 1;\n"                 \
                 "}\n"                                                             \
                 : KG_WGMMA_ACC64(d, 0) \
                 : "r"((a)[0]), "r"((a)[1]), "r"((a)[2]), "r"((a)[3]), "l"(db))
