/* Fuzz target: the Nsight Compute CSV reader (core/ncu_csv.h), which reads a
 * file the user hands to kgate explain --from-ncu: it must return 0 or a
 * usage error, never read past the text (given without a NUL), and keep at
 * most max kernels. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/ncu_csv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static kg_kfacts k[4];
    char *text = malloc(size ? size : 1); /* exact size: ASan sees any overread */
    if (!text)
        return 0;
    memcpy(text, data, size);
    int n = -1;
    char warn[256];
    kg_err e = {0, ""};
    int rc = kg_ncu_csv_parse(text, size, k, 4, &n, warn, sizeof warn, &e);
    if ((rc != 0 && rc != KG_EXIT_USAGE && rc != KG_EXIT_ENV) || n < 0 || n > 4 || (rc && n != 0))
        abort();
    free(text);
    return 0;
}
