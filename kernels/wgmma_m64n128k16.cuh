// wgmma m64n128k16 with fp32 accumulators, written out once (64 registers),
// for the GEMMs of kernels/ that need a 128-wide N tile or a K-major B.
#pragma once

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
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),\
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),\
      "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),\
      "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),\
      "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),\
      "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),\
      "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),\
      "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]) \
                 : "l"(da), "l"(db))
