/* Reading the ledger of recorded runs (store/ledger.h). */
#include "ledger.h"

#include <cjson/cJSON.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One line's entry, when it is a suite run on `gpu` newer than `best`
 * (an ISO date): its path into path and date into best. 0, or -1 when the
 * line is not a ledger entry. */
static int ledger_line(const char *line, const char *gpu, char *best, size_t best_size, char *path, size_t size)
{
    cJSON *o = cJSON_Parse(line);
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, "path"), *g = cJSON_GetObjectItemCaseSensitive(o, "gpu"),
                *d = cJSON_GetObjectItemCaseSensitive(o, "date"), *s = cJSON_GetObjectItemCaseSensitive(o, "suite"),
                *k = cJSON_GetObjectItemCaseSensitive(o, "kernels");
    int ok = cJSON_IsObject(o) && cJSON_IsString(p) && cJSON_IsString(g) && cJSON_IsString(d) && cJSON_IsBool(s);
    if (ok && cJSON_IsTrue(s) && strcmp(g->valuestring, gpu) == 0 && (!cJSON_IsNumber(k) || k->valuedouble > 0) &&
        strcmp(d->valuestring, best) >= 0 && strlen(p->valuestring) < size && strlen(d->valuestring) < best_size) {
        snprintf(best, best_size, "%s", d->valuestring);
        snprintf(path, size, "%s", p->valuestring);
    }
    cJSON_Delete(o);
    return ok ? 0 : -1;
}

int kg_ledger_newest_suite(const char *ledger, const char *gpu, char *path, size_t size, kg_err *err)
{
    FILE *f = fopen(ledger, "r");
    if (!f)
        return kg_err_set(err, KG_EXIT_IO, "%s: cannot read the ledger", ledger);
    char *line = malloc(KG_LEDGER_LINE_MAX + 2), best[64] = "", rel[PATH_MAX] = "";
    long n = 0;
    while (line && fgets(line, KG_LEDGER_LINE_MAX + 2, f)) {
        n++;
        size_t len = strlen(line);
        if (len > KG_LEDGER_LINE_MAX) {
            kg_err_set(err, KG_EXIT_IO, "%s: line %ld is longer than %d bytes: not a ledger", ledger, n,
                       KG_LEDGER_LINE_MAX);
            break;
        }
        if (len <= 1)
            continue;
        if (ledger_line(line, gpu, best, sizeof best, rel, sizeof rel)) {
            kg_err_set(err, KG_EXIT_IO, "%s: line %ld is not a ledger entry (path, gpu, date, suite)", ledger, n);
            break;
        }
    }
    if (!line)
        kg_err_set(err, KG_EXIT_IO, "%s: out of memory", ledger);
    free(line);
    fclose(f);
    if (err->code)
        return err->code;
    if (!rel[0])
        return kg_err_set(err, KG_EXIT_IO, "%s: no suite run on %s to compare against", ledger, gpu);
    char dir[PATH_MAX];
    if (!realpath(ledger, dir))
        return kg_err_set(err, KG_EXIT_IO, "%s: cannot resolve its path", ledger);
    char *top = dirname(dirname(dir)); /* the folder above the ledger's */
    if ((size_t)snprintf(path, size, "%s/%s", top, rel) >= size)
        return kg_err_set(err, KG_EXIT_IO, "%s: the path of %s is too long", ledger, rel);
    return 0;
}
