/* Data types and shapes: names, sizes, DLPack codes (base/kg.h). */
#include "kg.h"

#include "text.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    size_t size;
    uint8_t code, bits;
} dtypes[] = {
#define X(e, s, b, c, bits) {s, b, c, bits},
    KG_DTYPES(X)
#undef X
};

const char *kg_dtype_name(kg_dtype t)
{
    return (unsigned)t < KG_DTYPE_COUNT ? dtypes[t].name : "?";
}

size_t kg_dtype_size(kg_dtype t)
{
    return (unsigned)t < KG_DTYPE_COUNT ? dtypes[t].size : 0;
}

int kg_dtype_parse(const char *s, kg_dtype *out)
{
    for (int i = 0; i < KG_DTYPE_COUNT; i++)
        if (s && strcmp(s, dtypes[i].name) == 0) {
            *out = (kg_dtype)i;
            return 0;
        }
    return -1;
}

void kg_dtype_dlpack(kg_dtype t, uint8_t *code, uint8_t *bits)
{
    *code = dtypes[t].code;
    *bits = dtypes[t].bits;
}

int kg_dtype_is_int(kg_dtype t) { return t == KG_I32 || t == KG_I64; }

char *kg_shape_format(const kg_shape *s, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < s->n; i++)
        kg_append(buf, size, &used, "%s%lld", i ? "x" : "", (long long)s->d[i]);
    return buf;
}
