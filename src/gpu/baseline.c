/* The table of library paths: one row a path, found by name. */
#include "baseline.h"

#include <string.h>

extern const kg_baseline kg_baseline_cublaslt, kg_baseline_cudnn_softmax,
    kg_baseline_cudnn_layer_norm;

static const kg_baseline *const table[] = {
    &kg_baseline_cublaslt,
    &kg_baseline_cudnn_softmax,
    &kg_baseline_cudnn_layer_norm,
};

const kg_baseline *kg_baseline_at(int i)
{
    return i >= 0 && (size_t)i < sizeof table / sizeof table[0] ? table[i] : NULL;
}

const kg_baseline *kg_baseline_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i]->name, name) == 0)
            return table[i];
    return NULL;
}
