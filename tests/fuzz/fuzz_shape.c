/* Fuzz target: the shape parser, for every operator, and the named-scalar
 * parser. Each returns 0 with a valid shape or a usage error, never more. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/op.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    for (int i = 0; kg_ops[i]; i++) {
        kg_shape s;
        kg_err e = {0, ""};
        int rc = kg_shape_parse(kg_ops[i], text, &s, &e);
        if (rc == 0) {
            if (s.n != kg_ops[i]->n_dims)
                abort();
            for (int d = 0; d < s.n; d++)
                if (s.d[d] < 1 || s.d[d] > (1LL << 31))
                    abort();
        } else if (rc != KG_EXIT_USAGE) {
            abort();
        }
        kg_scalars sc;
        kg_err e2 = {0, ""};
        kg_scalars_default(kg_ops[i], &sc);
        rc = kg_scalars_set(kg_ops[i], &sc, text, &e2);
        if (rc != 0 && rc != KG_EXIT_USAGE)
            abort();
    }
    free(text);
    return 0;
}
