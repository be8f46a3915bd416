/* What the Python worker host (python/kgate/_worker.py) checks before it
 * trusts its ctypes mirrors of kgate's structs: their sizes as this
 * libkgate.so was built. A mismatch stops the host with one line rather than
 * letting it pass a struct of the wrong layout. */
#include <stddef.h>
#include <string.h>

#include <kgate/plugin.h>

#include "../core/op.h"
#include "provider.h"

size_t kg_pyhost_sizeof(const char *what);
int kg_pyhost_op_arity(const char *op, int *n_inputs, int *n_outputs);

size_t kg_pyhost_sizeof(const char *what)
{
    static const struct {
        const char *name;
        size_t size;
    } sizes[] = {{"provider", sizeof(kg_provider)}, {"kernel", sizeof(kgate_kernel)},
                 {"table", sizeof(kgate_plugin)},   {"dltensor", sizeof(DLTensor)},
                 {"params", sizeof(kgate_params)}};
    for (size_t i = 0; what && i < sizeof sizes / sizeof sizes[0]; i++)
        if (strcmp(what, sizes[i].name) == 0)
            return sizes[i].size;
    return 0;
}

/* The tensor counts of catalog operator `op`: 0, or -1 when there is none. */
int kg_pyhost_op_arity(const char *op, int *n_inputs, int *n_outputs)
{
    const kg_op *o = op ? kg_op_find(op) : NULL;
    if (!o)
        return -1;
    *n_inputs = o->n_inputs;
    *n_outputs = o->n_outputs;
    return 0;
}
