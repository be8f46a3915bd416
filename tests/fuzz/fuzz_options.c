/* Fuzz target: the CLI option parser. The input is split at NUL bytes and
 * newlines into argv; kg_options_parse must return 0 or a usage error,
 * never crash, read out of bounds or leave a message unterminated. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "app/options.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1), *argv[64];
    int argc = 0;
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    argv[argc++] = "kgate";
    for (char *p = buf, *start = buf; p <= buf + size && argc < 63; p++)
        if (p == buf + size || *p == '\0' || *p == '\n') {
            *p = '\0';
            argv[argc++] = start;
            start = p + 1;
        }
    argv[argc] = NULL;
    kg_options o;
    kg_err e = {0, ""};
    int rc = kg_options_parse(argc, argv, &o, &e);
    if (rc != 0 && rc != KG_EXIT_USAGE)
        abort();
    if (rc && (!e.msg[0] || strlen(e.msg) >= sizeof e.msg))
        abort();
    free(buf);
    return 0;
}
