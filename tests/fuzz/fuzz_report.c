/* Fuzz target: the results-JSON reader (kgate run shows recorded files;
 * later, kgate compare and explain read files from anywhere). Any text must
 * give a report or a file error, and a report must print. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    kg_report r;
    kg_err e = {0, ""};
    int rc = kg_report_from_json(text, "fuzz", &r, &e);
    if (rc == 0) {
        FILE *f = fopen("/dev/null", "w");
        if (f) {
            kg_report_print(&r, f, 1);
            fclose(f);
        }
        char *j = kg_report_to_json(&r);
        free(j);
    } else if (rc != KG_EXIT_IO) {
        abort();
    }
    kg_report_free(&r);
    free(text);
    return 0;
}
