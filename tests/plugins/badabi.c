/* A candidate from a future ABI. */
#include <kgate/plugin.h>

static int noop(const DLTensor *i, int ni, DLTensor *o, int no, const kgate_params *p, kgate_stream s)
{
    (void)i, (void)ni, (void)o, (void)no, (void)p, (void)s;
    return 0;
}
static const kgate_kernel kernels[] = {{"k", "softmax", "fp16", 1, 1, noop, NULL}};
static const kgate_plugin plugin = {99, 1, kernels};
const kgate_plugin *kgate_plugin_v1(void) { return &plugin; }
