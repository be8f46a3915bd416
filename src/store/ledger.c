/* Reading the ledger of recorded runs (store/ledger.h). */
#include "ledger.h"

#include <cjson/cJSON.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The newest suite run found so far: its date, path, and the commit that
 * holds it when an archive record says it left the tree ("" when not). */
typedef struct {
    char date[64], path[PATH_MAX], archived[48];
} ledger_best;

/* An archive record ({"archived": PATH, "commit": SHA}): 1 when `o` is one
 * (noting the commit when PATH is the best run's), 0 when it is not. */
static int ledger_archive(const cJSON *o, ledger_best *b)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "archived"), *c = cJSON_GetObjectItemCaseSensitive(o, "commit");
    if (!cJSON_IsString(a) || !cJSON_IsString(c) || strlen(c->valuestring) != 40 ||
        strspn(c->valuestring, "0123456789abcdef") != 40)
        return 0;
    if (strcmp(a->valuestring, b->path) == 0)
        snprintf(b->archived, sizeof b->archived, "%s", c->valuestring);
    return 1;
}

/* One line: an entry that is a suite run on `gpu` with kernels, as new as
 * the best so far (an ISO date; the later line wins a tie), becomes the
 * best; an archive record is noted. 0, or -1 when the line is neither. */
static int ledger_line(const char *line, const char *gpu, ledger_best *b)
{
    cJSON *o = cJSON_Parse(line);
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, "path"), *g = cJSON_GetObjectItemCaseSensitive(o, "gpu"),
                *d = cJSON_GetObjectItemCaseSensitive(o, "date"), *s = cJSON_GetObjectItemCaseSensitive(o, "suite"),
                *k = cJSON_GetObjectItemCaseSensitive(o, "kernels");
    int entry = cJSON_IsObject(o) && cJSON_IsString(p) && cJSON_IsString(g) && cJSON_IsString(d) && cJSON_IsBool(s);
    int ok = entry || (cJSON_IsObject(o) && ledger_archive(o, b));
    if (entry && cJSON_IsTrue(s) && strcmp(g->valuestring, gpu) == 0 && (!cJSON_IsNumber(k) || k->valuedouble > 0) &&
        strcmp(d->valuestring, b->date) >= 0 && strlen(p->valuestring) < sizeof b->path &&
        strlen(d->valuestring) < sizeof b->date) {
        snprintf(b->date, sizeof b->date, "%s", d->valuestring);
        snprintf(b->path, sizeof b->path, "%s", p->valuestring);
        b->archived[0] = '\0';
    }
    cJSON_Delete(o);
    return ok ? 0 : -1;
}

/* The best run's path, resolved against the folder above the ledger's,
 * into path; or why there is none to compare against. */
static int ledger_resolve(const char *ledger, const char *gpu, const ledger_best *b, char *path, size_t size,
                          kg_err *err)
{
    if (!b->path[0])
        return kg_err_set(err, KG_EXIT_IO, "%s: no suite run on %s to compare against", ledger, gpu);
    if (b->archived[0])
        return kg_err_set(err, KG_EXIT_IO,
                          "%s: the newest suite run on %s, %s, left the tree (archived at commit %.12s): "
                          "git show %s:%s >A.json, then kgate compare A.json B.json", ledger, gpu, b->path,
                          b->archived, b->archived, b->path);
    char dir[PATH_MAX];
    if (!realpath(ledger, dir))
        return kg_err_set(err, KG_EXIT_IO, "%s: cannot resolve its path", ledger);
    char *top = dirname(dirname(dir)); /* the folder above the ledger's */
    if ((size_t)snprintf(path, size, "%s/%s", top, b->path) >= size)
        return kg_err_set(err, KG_EXIT_IO, "%s: the path of %s is too long", ledger, b->path);
    return 0;
}

int kg_ledger_newest_suite(const char *ledger, const char *gpu, char *path, size_t size, kg_err *err)
{
    FILE *f = fopen(ledger, "r");
    if (!f)
        return kg_err_set(err, KG_EXIT_IO, "%s: cannot read the ledger", ledger);
    char *line = malloc(KG_LEDGER_LINE_MAX + 2);
    ledger_best *b = calloc(1, sizeof *b);
    long n = 0;
    while (line && b && fgets(line, KG_LEDGER_LINE_MAX + 2, f)) {
        n++;
        size_t len = strlen(line);
        if (len > KG_LEDGER_LINE_MAX) {
            kg_err_set(err, KG_EXIT_IO, "%s: line %ld is longer than %d bytes: not a ledger", ledger, n,
                       KG_LEDGER_LINE_MAX);
            break;
        }
        if (len <= 1)
            continue;
        if (ledger_line(line, gpu, b)) {
            kg_err_set(err, KG_EXIT_IO,
                       "%s: line %ld is not a ledger entry (path, gpu, date, suite) nor an archive record "
                       "(archived, commit)", ledger, n);
            break;
        }
    }
    if (!line || !b)
        kg_err_set(err, KG_EXIT_IO, "%s: out of memory", ledger);
    free(line);
    fclose(f);
    if (!err->code)
        ledger_resolve(ledger, gpu, b, path, size, err);
    free(b);
    return err->code;
}
