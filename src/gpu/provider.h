/* Providers: where the worker's kernels come from.
 *
 * A candidate source becomes a provider behind one interface, so that the
 * worker's checks, timing and events are the same whatever wrote the kernel:
 *   - "so": a shared library with a kgate_plugin_v2 table (include/kgate/plugin.h),
 *     loaded with dlopen (catalog/plugin_check.h);
 *   - "cuda": a CUDA C++ source file compiled at run time with NVRTC, its
 *     launches described in a `kgate:` comment (provider_rtc.h, catalog/rtc_desc.h);
 *   - "python": a Python file whose KGATE_KERNELS list names callables; the
 *     worker then runs inside a Python process (python/kgate/_worker.py),
 *     which passes this struct, filled with ctypes callbacks, to
 *     kg_worker_main_with();
 *   - the library paths of an operator (cuBLASLt, cuDNN, CUB, PyTorch for
 *     problems outside the catalog) are the "library" side of the same
 *     contract: set up for given tensors, launch on a stream, tear down
 *     (gpu/baseline.h for the vendor ones).
 *
 * The rule for a provider: open() returns a table that the worker validates
 * exactly as it validates a shared library's (kg_plugin_validate); a launch
 * enqueues its work on the stream it is given; a kernel that returns its
 * results instead of writing them into the output buffers (a Python callable
 * that returns tensors) gets collect(), which the worker calls before every
 * comparison and never inside a timed call. Strings a provider hands back are
 * copied and bounded by the worker; nothing it says is trusted more than a
 * shared library's table. The struct is read by its struct_size, so fields
 * may be appended. */
#ifndef KG_PROVIDER_H
#define KG_PROVIDER_H

#include <stdint.h>

#include <kgate/plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kg_provider {
    uint32_t struct_size; /* sizeof(kg_provider) as the provider was built */
    const char *kind;     /* "so", "python" */
    void *self;           /* passed back to every call */
    /* Loads `source` and returns its kernel table in *table, valid until the
     * process ends. Returns 0, or an exit code (4: a bad candidate) with one
     * line in msg. */
    int (*open)(void *self, const char *source, const kgate_plugin **table, char *msg,
                uint32_t msg_size);
    /* Optional (NULL: every kernel writes its outputs in place). Copies the
     * results of kernel k's last call that was given the output buffers
     * `out` into them, on stream s. Returns 0; 1 when the results are wrong
     * in kind (a non-tensor, a wrong shape, dtype or device: msg says which);
     * another value for an error of the provider itself. */
    int (*collect)(void *self, const kgate_kernel *k, DLTensor *out, int n_out, kgate_stream s,
                   char *msg, uint32_t msg_size);

    /* A problem outside the catalog (catalog/problem.h); NULL for a provider
     * of catalog kernels only. describe() writes the problem's JSON into
     * json (at most size bytes), or leaves it empty when the candidate has
     * no problem of its own; it is called after open(), and the worker
     * registers the problem before it validates the table. */
    int (*describe)(void *self, char *json, uint32_t size, char *msg, uint32_t msg_size);
    /* Fills the problem's inputs, kgate's buffers `in`, from `seed`
     * (the same seed gives the same inputs). */
    int (*inputs)(void *self, uint64_t seed, DLTensor *in, int n_in, kgate_stream s, char *msg,
                  uint32_t msg_size);
    /* Writes the reference of inputs `in` as doubles: ref[o] holds numel(output o)
     * values; *scale gets the RMS of the reference outputs (catalog/problem.h's
     * atol scaling). Computed after the call it judges, like every reference. */
    int (*reference)(void *self, const DLTensor *in, int n_in, double *const *ref, int n_out,
                     kgate_stream s, double *scale, char *msg, uint32_t msg_size);
    /* The problem's library paths, as a kernel table (their names are the
     * paths': "torch", "torch.compile"); timed like the vendor paths of a
     * catalog operator. */
    int (*library)(void *self, const kgate_plugin **table, char *msg, uint32_t msg_size);
    /* Optional: the host seconds the last launch spent in the candidate's
     * own code, without the provider's glue (wrapping tensors, setting the
     * stream), or < 0 when unknown. The host-work rule (judge/verdict.h,
     * kg_host_charge) then charges the candidate, not the provider. The
     * provider runs in the candidate's process (a Python callable can rebind
     * the host's clock), so the worker believes it only between the host time
     * it measured around the call and that less KG_PROVIDER_GLUE_MAX_S. */
    double (*host_seconds)(void *self);
    /* Optional: PyTorch's library paths of a catalog operator ("torch", and
     * "torch.compile" when compile is set) as a kernel table; an empty table
     * when PyTorch has no call for it (kgate check --torch). */
    int (*torch_library)(void *self, const char *op, const char *dtype, const char *index_dtype, int compile,
                         const kgate_plugin **table, char *msg, uint32_t msg_size);
} kg_provider;

/* The most host time of a launch call a provider may say was its own glue
 * rather than the candidate's (host_seconds). */
#define KG_PROVIDER_GLUE_MAX_S 25e-6

/* The kernel a kernel job opens its candidate for, while open() runs; NULL
 * when listing a table or timing library paths. A provider may load only
 * that kernel's code (the Python host exports it as KGATE_KERNEL). */
const char *kg_worker_opening(void);

/* The built-in provider of shared libraries. */
const kg_provider *kg_provider_so(void);

#ifdef __cplusplus
}
#endif
#endif
