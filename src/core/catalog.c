/* Registry lookups and shape parsing. */
#include "op.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

const kg_op *kg_op_find(const char *name)
{
    for (int i = 0; name && kg_ops[i]; i++)
        if (strcmp(kg_ops[i]->name, name) == 0)
            return kg_ops[i];
    return NULL;
}

int kg_op_has_dtype(const kg_op *op, kg_dtype dt)
{
    for (int i = 0; i < op->n_dtypes; i++)
        if (op->dtypes[i] == dt)
            return 1;
    return 0;
}

const kg_preset *kg_preset_find(const kg_op *op, const char *name)
{
    for (int i = 0; i < op->n_presets; i++)
        if (strcmp(op->presets[i].name, name) == 0)
            return &op->presets[i];
    return NULL;
}

int kg_shape_parse(const kg_op *op, const char *text, kg_shape *out, kg_err *err)
{
    const kg_preset *p = kg_preset_find(op, text);
    if (p) {
        *out = p->shape;
        return 0;
    }
    kg_shape s = {0, {0}};
    const char *c = text;
    while (*c) {
        if (!isdigit((unsigned char)*c) || s.n == KG_MAX_DIMS)
            goto bad;
        errno = 0;
        char *end;
        long long v = strtoll(c, &end, 10);
        if (errno || v <= 0 || v > (1LL << 31))
            goto bad;
        s.d[s.n++] = v;
        c = end;
        if (*c == 'x') {
            c++;
            if (!*c)
                goto bad;
        } else if (*c) {
            goto bad;
        }
    }
    if (s.n == 1 && op->n_dims > 1)
        for (s.n = 1; s.n < op->n_dims; s.n++)
            s.d[s.n] = s.d[0];
    if (s.n != op->n_dims)
        goto bad;
    *out = s;
    return 0;
bad:
    return kg_err_set(err, KG_EXIT_USAGE,
                      "bad shape '%s' for %s: expected %s (positive integers), one number for all "
                      "extents, or a preset (small, medium, large%s)",
                      text, op->name, op->dims, op->n_presets > 3 ? ", ..." : "");
}

int64_t kg_tensor_extents(const kg_tensor_spec *t, const kg_shape *s, int64_t *ext)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) {
        ext[i] = s->d[t->dim[i]];
        n *= ext[i];
    }
    return n;
}

void kg_input0_matrix(const kg_op *op, const kg_shape *s, int64_t *rows, int64_t *cols)
{
    int64_t ext[3];
    int64_t n = kg_tensor_extents(&op->in[0], s, ext);
    *cols = ext[op->in[0].rank - 1];
    *rows = n / *cols;
}
