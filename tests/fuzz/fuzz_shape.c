/* Fuzz target: the shape parser, for every operator, and the named-scalar
 * parser. Each returns 0 with a valid shape (every output non-empty) or a
 * usage error, never more. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/op.h"

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
            /* extents are positive, or what the operator's own rule admits
             * (a convolution's padding of 0), and the shape passes that rule */
            kg_err e3 = {0, ""};
            int64_t lo = kg_ops[i]->check_shape ? 0 : 1, ext[KG_MAX_RANK];
            if (s.n != kg_ops[i]->n_dims || kg_shape_check(kg_ops[i], &s, &e3))
                abort();
            for (int d = 0; d < s.n; d++)
                if (s.d[d] < lo || s.d[d] > (1LL << 31))
                    abort();
            for (int t = 0; t < kg_ops[i]->n_outputs; t++)
                if (kg_tensor_extents(&kg_ops[i]->out[t], &s, ext) < 1)
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
