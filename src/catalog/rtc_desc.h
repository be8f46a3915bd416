/* CUDA source candidates: the launch description a .cu file carries.
 *
 * A candidate may be CUDA C++ source compiled at run time with NVRTC (the
 * "cuda" provider, gpu/provider_rtc.c): device code only, its kernels
 * declared `extern "C" __global__`, and one block comment that starts with
 * `kgate:` holding a JSON array, one object a kernel:
 *
 *   {"name": "rtc_relu_fp16", "op": "relu", "dtype": "fp16",
 *    "function": "relu_fp16", "block": 256, "grid": "elements",
 *    "args": ["in0", "out0", "numel"], "summary": "one thread an element"}
 *
 * The rule:
 *   - name, op, dtype, function are required; name and function are
 *     identifiers of at most 63 characters, unique names;
 *   - block: threads a block, 1 to 1024;
 *   - grid: "elements" (ceil(numel(out0) / block) blocks), "rows" (one block
 *     a row of input 0: the product of its extents but the last), or three
 *     positive integers;
 *   - args, at most KG_RTC_MAX_ARGS, each one of: in<i>, out<i> (a device
 *     pointer), numel (elements of out0, int64), rows, cols (input 0 as a
 *     matrix: its last extent and the product of the others, int64),
 *     dim:in<i>:<d>, dim:out<i>:<d> (an extent, int64), scalar:<name>
 *     (a float), iscalar:<name> (an int64);
 *   - optional: index_dtype, smem (dynamic shared bytes, at most 227 KiB),
 *     scalars (the ones it reads, comma-separated, as kgate_kernel.scalars),
 *     summary.
 * At most KG_RTC_MAX_KERNELS kernels; anything else is a bad candidate
 * (exit 4) with one line naming the kernel and the field. */
#ifndef KG_RTC_DESC_H
#define KG_RTC_DESC_H

#include <stddef.h>
#include <stdint.h>

#include "../base/kg.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KG_RTC_MAX_KERNELS 16
#define KG_RTC_MAX_ARGS 16
#define KG_RTC_MAX_SOURCE (1u << 20) /* bytes of a .cu candidate */

typedef enum kg_rtc_arg_kind {
    KG_RTC_IN,      /* a pointer to input `index` */
    KG_RTC_OUT,     /* a pointer to output `index` */
    KG_RTC_NUMEL,   /* int64: elements of out0 */
    KG_RTC_ROWS,    /* int64: input 0's extents but the last, multiplied */
    KG_RTC_COLS,    /* int64: input 0's last extent */
    KG_RTC_DIM_IN,  /* int64: extent `dim` of input `index` */
    KG_RTC_DIM_OUT, /* int64: extent `dim` of output `index` */
    KG_RTC_SCALAR,  /* float: the named scalar */
    KG_RTC_ISCALAR, /* int64: the named scalar */
} kg_rtc_arg_kind;

typedef struct kg_rtc_arg {
    kg_rtc_arg_kind kind;
    int index, dim;
    char name[32]; /* scalars */
} kg_rtc_arg;

typedef struct kg_rtc_kernel {
    char name[64], op[64], dtype[8], index_dtype[8], function[64];
    char scalars[128], summary[256];
    int block;
    int grid_mode; /* 0 explicit, 1 elements, 2 rows */
    int grid[3];
    int smem;
    int n_args;
    kg_rtc_arg args[KG_RTC_MAX_ARGS];
} kg_rtc_kernel;

/* Finds the `kgate:` block comment in source (len bytes) and parses it
 * into k[0..*n). KG_EXIT_CANDIDATE with one line on any violation. */
int kg_rtc_parse(const char *source, size_t len, kg_rtc_kernel *k, int *n, kg_err *err);

/* The grid of kernel k for its call's extents: out0's element count and
 * input 0's rows; 0, or -1 when it does not fit in 2^31-1 blocks. */
int kg_rtc_grid(const kg_rtc_kernel *k, int64_t numel_out0, int64_t rows_in0, unsigned grid[3]);

#ifdef __cplusplus
}
#endif
#endif
