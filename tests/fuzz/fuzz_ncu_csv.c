/* Fuzz target: the Nsight Compute CSV reader (diagnose/ncu_csv.h), which reads
 * exports a user brings from anywhere. Any bytes (not NUL-terminated) must
 * give kernels or a usage error; what it fills must hold together: counts in
 * range, names and the warn line terminated, metric values finite. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose/ncu_csv.h"

#define MAXK 4

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static kg_kfacts k[MAXK];
    char warn[200];
    kg_err e = {0, ""};
    int n = -1;
    int rc = kg_ncu_csv_parse((const char *)data, size, k, MAXK, &n, warn, sizeof warn, &e);
    if (rc != 0) {
        if (rc != KG_EXIT_USAGE || n != 0 || !e.msg[0])
            abort();
        return 0;
    }
    if (n < 0 || n > MAXK || memchr(warn, '\0', sizeof warn) == NULL || strchr(warn, '\n'))
        abort();
    for (int i = 0; i < n; i++) {
        if (!memchr(k[i].name, '\0', sizeof k[i].name) || k[i].launches != 1 || k[i].n_m < 0 ||
            k[i].n_m > KG_KMETRICS_MAX || !memchr(k[i].limiter, '\0', sizeof k[i].limiter))
            abort();
        for (int j = 0; j < k[i].n_m; j++)
            if (!memchr(k[i].m[j].name, '\0', sizeof k[i].m[j].name) || !strstr(k[i].m[j].name, "__") ||
                !isfinite(k[i].m[j].value))
                abort();
    }
    return 0;
}
