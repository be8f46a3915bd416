/* A candidate whose kernel declares the wrong number of tensors. */
#include <kgate/plugin.h>

static int noop(const DLTensor *i, int ni, DLTensor *o, int no, const kgate_params *p, kgate_stream s)
{
    (void)i, (void)ni, (void)o, (void)no, (void)p, (void)s;
    return 0;
}
static const kgate_kernel kernels[] = {{"ln", "layer_norm", "bf16", NULL, 2, 1, noop, NULL, "eps", NULL}};
static const kgate_plugin plugin = KGATE_PLUGIN(kernels);
const kgate_plugin *kgate_plugin_v2(void) { return &plugin; }
