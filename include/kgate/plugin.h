/* kgate candidate ABI, version 1.
 *
 * A candidate is a shared library that exports one function,
 *
 *     const kgate_plugin *kgate_plugin_v1(void);
 *
 * returning a table of kernels. kgate never loads a candidate into its own
 * process: a worker process dlopen()s the library, validates the table, and
 * calls each kernel's launch function with DLPack tensors that live on the
 * GPU. A launch function must enqueue all of its work on `stream` and return
 * without synchronizing; it returns 0 on success and non-zero on failure
 * (kgate reports the code and, if set, the message from `error`).
 *
 * This header needs only <dlpack/dlpack.h>; it does not include CUDA headers
 * (a cudaStream_t is passed as kgate_stream, the same pointer type).
 * See docs/abi.md for the contract in full and a complete example.
 */
#ifndef KGATE_PLUGIN_H
#define KGATE_PLUGIN_H

#include <stdint.h>
#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KGATE_ABI_VERSION 1u
#define KGATE_PLUGIN_SYMBOL "kgate_plugin_v1"

/* Same type as cudaStream_t / CUstream. */
typedef struct CUstream_st *kgate_stream;

/* Operator parameters. Fields an operator does not use are ignored. */
typedef struct kgate_params {
    uint32_t struct_size; /* sizeof(kgate_params) as kgate was built */
    double eps;           /* layer_norm: variance epsilon */
    char *error;          /* optional: a buffer the kernel may fill with a message */
    uint32_t error_size;  /* size of `error` in bytes */
} kgate_params;

/* Launch: inputs and outputs are in the order the operator's signature
 * lists them (`kgate ops`). Tensors are contiguous, row-major, on the GPU. */
typedef int (*kgate_launch_fn)(const DLTensor *inputs, int n_inputs,
                               DLTensor *outputs, int n_outputs,
                               const kgate_params *params, kgate_stream stream);

typedef struct kgate_kernel {
    const char *name;     /* unique within the table, [A-Za-z0-9_.-]+ */
    const char *op;       /* catalog operator, e.g. "layer_norm" */
    const char *dtype;    /* "fp16", "bf16" or "fp32" */
    int n_inputs;         /* must match the operator's signature */
    int n_outputs;
    kgate_launch_fn launch;
    const char *summary;  /* one line: what this variant does; may be NULL */
} kgate_kernel;

typedef struct kgate_plugin {
    uint32_t abi_version; /* KGATE_ABI_VERSION */
    uint32_t n_kernels;
    const kgate_kernel *kernels;
} kgate_plugin;

typedef const kgate_plugin *(*kgate_plugin_entry_fn)(void);

#ifdef __cplusplus
}
#endif
#endif /* KGATE_PLUGIN_H */
