/* The remembered library choices (choice_cache.h): a small TSV file. */
#include "choice_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../catalog/roofs_io.h"
#include "../base/text.h"

int kg_choice_path(char *buf, size_t size, kg_err *err)
{
    return kg_cache_file("choices.tsv", buf, size, err);
}

/* Splits "key\tindex\tcount" in place; 0 when well formed. */
static int parse(char *line, char **key, int *index, int *count)
{
    char *t1 = strchr(line, '\t'), *t2, *end;
    if (!t1 || t1 == line)
        return -1;
    *t1 = '\0';
    t2 = strchr(t1 + 1, '\t');
    if (!t2)
        return -1;
    long a = strtol(t1 + 1, &end, 10);
    if (end != t2 || a < 0 || a > 1000000)
        return -1;
    long b = strtol(t2 + 1, &end, 10);
    if ((*end != '\n' && *end != '\0') || b < 0 || b > 1000000)
        return -1;
    *key = line;
    *index = (int)a;
    *count = (int)b;
    return 0;
}

int kg_choice_get(const char *path, const char *key, int *index, int *count)
{
    FILE *f = fopen(path, "r");
    char line[KG_CHOICE_KEY + 64];
    int found = 1;
    if (!f)
        return 1;
    while (fgets(line, sizeof line, f)) {
        char *k;
        int a, b;
        if (!strchr(line, '\n') && !feof(f)) { /* longer than any key: skip the rest */
            int c;
            while ((c = fgetc(f)) != EOF && c != '\n')
                ;
            continue;
        }
        if (parse(line, &k, &a, &b) == 0 && strcmp(k, key) == 0) {
            *index = a;
            *count = b;
            found = 0; /* the last line of a key wins */
        }
    }
    fclose(f);
    return found;
}

int kg_choice_put(const char *path, const char *key, int index, int count, kg_err *err)
{
    size_t klen = strlen(key);
    if (klen == 0 || klen >= KG_CHOICE_KEY || strpbrk(key, "\t\n") || index < 0 || count < 0)
        return kg_err_set(err, KG_EXIT_IO, "choice cache: a key must be 1 to %d bytes without tabs or newlines",
                          KG_CHOICE_KEY - 1);
    /* the lines kept: every well-formed one but the key's, newest last */
    size_t cap = (size_t)KG_CHOICE_MAX * (KG_CHOICE_KEY + 32), len = 0;
    char *text = malloc(cap), line[KG_CHOICE_KEY + 64];
    char **starts = calloc(KG_CHOICE_MAX, sizeof *starts);
    int n = 0;
    if (!text || !starts) {
        free(text);
        free(starts);
        return kg_err_set(err, KG_EXIT_IO, "choice cache: out of memory");
    }
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) {
        char *k;
        int a, b;
        if (!strchr(line, '\n') && !feof(f)) {
            int c;
            while ((c = fgetc(f)) != EOF && c != '\n')
                ;
            continue;
        }
        if (parse(line, &k, &a, &b) || strcmp(k, key) == 0)
            continue;
        if (n == KG_CHOICE_MAX - 1) { /* full: drop the oldest */
            size_t drop = (size_t)(starts[1] - text);
            memmove(text, starts[1], len - drop);
            len -= drop;
            for (int i = 1; i < n; i++)
                starts[i - 1] = starts[i] - drop;
            n--;
        }
        starts[n++] = text + len;
        kg_append(text, cap, &len, "%s\t%d\t%d\n", k, a, b); /* cap fits KG_CHOICE_MAX lines */
    }
    if (f)
        fclose(f);
    int rc = kg_append(text, cap, &len, "%s\t%d\t%d", key, index, count) /* the writer ends the line */
                 ? kg_err_set(err, KG_EXIT_IO, "choice cache: %s: the lines do not fit", path)
                 : kg_write_file_atomic(path, text, err);
    free(text);
    free(starts);
    return rc;
}
