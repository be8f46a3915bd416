/* A candidate built against ABI version 1 (its table layout, spelled out
 * here, since include/kgate/plugin.h is version 2): kgate refuses it with a
 * line that says how to move on (docs/abi.md, "From version 1"). */
#include <stdint.h>

#include <dlpack/dlpack.h>

typedef struct {
    uint32_t struct_size;
    double eps;
    char *error;
    uint32_t error_size;
} v1_params;
typedef int (*v1_launch)(const DLTensor *, int, DLTensor *, int, const v1_params *, void *);
typedef struct {
    const char *name, *op, *dtype;
    int n_inputs, n_outputs;
    v1_launch launch;
    const char *summary;
} v1_kernel;
typedef struct {
    uint32_t abi_version, n_kernels;
    const v1_kernel *kernels;
} v1_plugin;

static int noop(const DLTensor *i, int ni, DLTensor *o, int no, const v1_params *p, void *s)
{
    (void)i, (void)ni, (void)o, (void)no, (void)p, (void)s;
    return 0;
}
static const v1_kernel kernels[] = {{"old", "softmax", "fp16", 1, 1, noop, "an ABI v1 kernel"}};
static const v1_plugin plugin = {1, 1, kernels};
const v1_plugin *kgate_plugin_v1(void) { return &plugin; }
