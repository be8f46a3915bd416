/* kgate candidate ABI, version 2.
 *
 * A candidate is a shared library that exports one function,
 *
 *     const kgate_plugin *kgate_plugin_v2(void);
 *
 * returning a table of kernels. kgate never loads a candidate into its own
 * process: a worker process dlopen()s the library, validates the table, and
 * calls each kernel's launch function with DLPack tensors that live on the
 * GPU. A launch function must enqueue all of its work on `stream` and return
 * without synchronizing; it returns 0 on success and non-zero on failure
 * (kgate reports the code and, if set, the message from `error`).
 *
 * What changed from version 1: operator scalars travel by name (eps,
 * negative_slope, ignore_index, ...) instead of one `eps` field; a kernel
 * says which scalars it reads; index tensors (int32/int64) and integer
 * outputs exist; the table records the size of its kernel records so that
 * later fields can be appended. kgate refuses version-1 tables with a
 * one-line message (docs/abi.md, "From version 1").
 *
 * This header needs only <dlpack/dlpack.h>; it does not include CUDA headers
 * (a cudaStream_t is passed as kgate_stream, the same pointer type).
 * See docs/abi.md for the contract in full and a complete example. */
#ifndef KGATE_PLUGIN_H
#define KGATE_PLUGIN_H

#include <stdint.h>
#include <string.h>
#include "dlpack/dlpack.h" /* installed: beside this file (include/kgate/dlpack) */

#ifdef __cplusplus
extern "C" {
#endif

#define KGATE_ABI_VERSION 2u
#define KGATE_PLUGIN_SYMBOL "kgate_plugin_v2"

/* Same type as cudaStream_t / CUstream. */
typedef struct CUstream_st *kgate_stream;

/* One named scalar of the operator. Integer scalars (dim, ignore_index) are
 * whole numbers held exactly in the double. */
typedef struct kgate_scalar {
    const char *name;
    double value;
} kgate_scalar;

/* What a launch receives besides the tensors. kgate passes every scalar the
 * operator declares (`kgate ops` lists them with their defaults); a trial
 * may use values other than the defaults, so read them, do not assume. */
typedef struct kgate_params {
    uint32_t struct_size;        /* sizeof(kgate_params) as kgate was built */
    uint32_t n_scalars;
    const kgate_scalar *scalars; /* n_scalars entries */
    char *error;                 /* optional: a buffer the kernel may fill with a message */
    uint32_t error_size;         /* size of `error` in bytes */
} kgate_params;

/* The value of scalar `name`, or `fallback` when the operator has none. */
static inline double kgate_scalar_get(const kgate_params *p, const char *name, double fallback)
{
    for (uint32_t i = 0; p && i < p->n_scalars; i++)
        if (p->scalars[i].name && strcmp(p->scalars[i].name, name) == 0)
            return p->scalars[i].value;
    return fallback;
}

/* Launch: inputs and outputs are in the order the operator's signature
 * lists them (`kgate ops`). Tensors are contiguous, row-major, on the GPU. */
typedef int (*kgate_launch_fn)(const DLTensor *inputs, int n_inputs,
                               DLTensor *outputs, int n_outputs,
                               const kgate_params *params, kgate_stream stream);

typedef struct kgate_kernel {
    const char *name;        /* unique within the table, [A-Za-z0-9_.-]+ */
    const char *op;          /* catalog operator, e.g. "layer_norm" */
    const char *dtype;       /* element type of the data tensors: "fp16", "bf16", "fp32" */
    const char *index_dtype; /* index inputs: "int32" or "int64"; NULL means int64 */
    int n_inputs;            /* must match the operator's signature */
    int n_outputs;
    kgate_launch_fn launch;
    const char *summary;     /* one line: what this variant does; may be NULL */
    const char *scalars;     /* the scalars the kernel reads, comma-separated
                                ("eps"); every one the operator marks required
                                must be named; NULL or "" for none */
    /* Optional: whether the kernel handles a shape (the operator's extents,
     * in `kgate ops` order). NULL means every shape. kgate checks every
     * kernel at extra shapes beyond the timed one (unaligned, tiny, unnamed);
     * a kernel that declares a shape unsupported is not checked there, and a
     * timed shape it declares unsupported is SKIPPED; both are reported. */
    int (*supports)(const int64_t *extents, int n_extents);
} kgate_kernel;

typedef struct kgate_plugin {
    uint32_t abi_version; /* KGATE_ABI_VERSION */
    uint32_t kernel_size; /* sizeof(kgate_kernel) as the candidate was built */
    uint32_t n_kernels;
    const kgate_kernel *kernels;
} kgate_plugin;

/* Fills a table header: KGATE_PLUGIN(kernels) for a static array. */
#define KGATE_PLUGIN(array) \
    {KGATE_ABI_VERSION, (uint32_t)sizeof(kgate_kernel), (uint32_t)(sizeof(array) / sizeof((array)[0])), (array)}

typedef const kgate_plugin *(*kgate_plugin_entry_fn)(void);

/* ------------------------------------------------------------------------
 * Optional: configuration spaces (`kgate tune`, docs/tune.md).
 *
 * A candidate may also export
 *
 *     const kgate_tunables *kgate_tunables_v1(void);
 *
 * naming, for some of its kernels, integer knobs with their allowed values
 * (BLOCK_M, num_stages, ...) and a launch that takes one value per knob.
 * `kgate tune` times every valid configuration, or a budgeted sample, with
 * the same checks and engine as `kgate check`. A configuration is the knobs'
 * values in the order the kernel lists its knobs. */
#define KGATE_TUNABLES_SYMBOL "kgate_tunables_v1"

typedef struct kgate_knob {
    const char *name;      /* [a-z_][a-z0-9_]*, unique within the kernel */
    uint32_t n_values;     /* 1 to 64 */
    const int64_t *values; /* the allowed values, distinct */
} kgate_knob;

/* Launch with a configuration (config[i] is knob i's value). A non-zero
 * return is an error of the kernel, as for kgate_launch_fn. */
typedef int (*kgate_launch_config_fn)(const DLTensor *inputs, int n_inputs, DLTensor *outputs,
                                      int n_outputs, const kgate_params *params,
                                      const int64_t *config, kgate_stream stream);

typedef struct kgate_tunable {
    const char *kernel;     /* the name of a kernel of the table */
    uint32_t n_knobs;       /* 1 to 16 */
    const kgate_knob *knobs;
    kgate_launch_config_fn launch;
    /* Optional: whether a configuration can run this shape (shared memory,
     * divisibility); an invalid one is skipped, not failed. NULL: all can. */
    int (*valid)(const int64_t *config, const int64_t *extents, int n_extents);
} kgate_tunable;

typedef struct kgate_tunables {
    uint32_t abi_version;  /* 1 */
    uint32_t n;
    const kgate_tunable *tunables;
} kgate_tunables;

typedef const kgate_tunables *(*kgate_tunables_entry_fn)(void);

#ifdef __cplusplus
}
#endif
#endif /* KGATE_PLUGIN_H */
