// wgmma m64n128k16 with fp32 accumulators, written out once (64 registers),
// for the GEMMs of kernels/ that need a 128-wide N tile or a K-major B.
#pragma once

#include "wgmma_acc.cuh"

// D[64x128] += A[64x16] . B[16x128], A K-major and B from shared-memory
// descriptors; TNSP_B is "1" for an MN-major (row-major [K,N]) B and "0" for
// a K-major one (row-major [N,K], used transposed). PTX_TYPE is f16 or bf16.
#define KG_WGMMA_M64N128K16(PTX_TYPE, TNSP_B, d, da, db) KG_WGMMA_M64N128K16_SD(PTX_TYPE, TNSP_B, "1", d, da, db)

// The same with scale-d given: "1" accumulates, "0" overwrites (D = A . B,
// D's old values unread).
#define KG_WGMMA_M64N128K16_SD(PTX_TYPE, TNSP_B, SCALE_D, d, da, db)               \
    asm volatile("{\n"                                                            \
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32." PTX_TYPE "." PTX_TYPE " " \
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "  \
                 "%64, %65, " SCALE_D ", 1, 1, 0, " TNSP_B ";\n"                              \
                 "}\n"                                                             \
                 : KG_WGMMA_ACC64(d, 0) \
                 : "l"(da), "l"(db))
