/* Tables that break one rule of ABI v2 each, chosen by DEFECT at build time:
 *   1  a layer_norm kernel that reads a scalar layer_norm does not have
 *   2  a layer_norm kernel that leaves out the required scalar eps
 *   3  an integer dtype where the operator takes floating data
 *   4  an index dtype for an operator without index inputs */
#include <kgate/plugin.h>

static int noop(const DLTensor *i, int ni, DLTensor *o, int no, const kgate_params *p, kgate_stream s)
{
    (void)i, (void)ni, (void)o, (void)no, (void)p, (void)s;
    return 0;
}

static const kgate_kernel kernels[] = {
#if DEFECT == 1
    {"ln", "layer_norm", "bf16", NULL, 3, 1, noop, NULL, "eps,epsilon", NULL},
#elif DEFECT == 2
    {"ln", "layer_norm", "bf16", NULL, 3, 1, noop, NULL, NULL, NULL},
#elif DEFECT == 3
    {"sm", "softmax", "int64", NULL, 1, 1, noop, NULL, NULL, NULL},
#else
    {"sm", "softmax", "fp16", "int32", 1, 1, noop, NULL, NULL, NULL},
#endif
};
static const kgate_plugin plugin = KGATE_PLUGIN(kernels);
const kgate_plugin *kgate_plugin_v2(void) { return &plugin; }
