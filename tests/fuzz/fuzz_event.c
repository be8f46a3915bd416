/* Fuzz target: the worker protocol's parsers, which read what an untrusted
 * worker (and candidate code inside it) writes: kg_event_parse must return 0
 * or a violation and free what it allocated; kg_job_from_json 0 or a usage
 * error. A parsed event serializes and parses back. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    kg_event ev;
    kg_err e = {0, ""};
    int rc = kg_event_parse(text, &ev, &e);
    if (rc == 0) {
        char *again = kg_event_to_json(&ev);
        kg_event ev2;
        kg_err e2 = {0, ""};
        if (!again || kg_event_parse(again, &ev2, &e2) != 0 || ev2.kind != ev.kind)
            abort();
        kg_event_free(&ev2);
        free(again);
        kg_event_free(&ev);
    } else if (rc != KG_EXIT_FAIL) {
        abort();
    }
    kg_job j;
    kg_err e3 = {0, ""};
    rc = kg_job_from_json(text, &j, &e3);
    if (rc != 0 && rc != KG_EXIT_USAGE)
        abort();
    free(text);
    return 0;
}
