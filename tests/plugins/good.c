/* A valid candidate table built without CUDA: `noop` does nothing (so its
 * output stays poisoned: INCORRECT on a GPU) and `errs` returns an error. */
#include <stdio.h>

#include <kgate/plugin.h>

static int noop(const DLTensor *i, int ni, DLTensor *o, int no, const kgate_params *p, kgate_stream s)
{
    (void)i, (void)ni, (void)o, (void)no, (void)p, (void)s;
    return 0;
}

static int errs(const DLTensor *i, int ni, DLTensor *o, int no, const kgate_params *p, kgate_stream s)
{
    (void)i, (void)ni, (void)o, (void)no, (void)s;
    if (p->error)
        snprintf(p->error, p->error_size, "this kernel always fails");
    return 7;
}

static const kgate_kernel kernels[] = {
    {"noop", "softmax", "fp16", NULL, 1, 1, noop, "writes nothing", NULL, NULL},
    {"errs", "softmax", "fp16", NULL, 1, 1, errs, "returns an error", NULL, NULL},
};
static const kgate_plugin plugin = KGATE_PLUGIN(kernels);
const kgate_plugin *kgate_plugin_v2(void) { return &plugin; }
