/* Fuzz target: the results-JSON reader (kgate run shows recorded files;
 * later, kgate compare and explain read files from anywhere). Any text must
 * give a report or a file error, and a report must print and give its
 * HTML page (plots of whatever numbers it holds), Markdown and CSV. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/html_report.h"
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
            const kg_report *reps[1] = {&r};
            kg_report_print(&r, f, 1);
            if (kg_report_html(reps, 1, f, &e) || kg_report_markdown(reps, 1, f, &e) || kg_report_csv(reps, 1, f, &e))
                abort();
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
