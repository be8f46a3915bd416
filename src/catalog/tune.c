/* Configuration spaces: validation, text, enumeration, sampling (catalog/tune.h). */
#include "tune.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin_check.h"
#include "../base/text.h"

static int knob_name_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > 31 || !((s[0] >= 'a' && s[0] <= 'z') || s[0] == '_'))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
            return 0;
    return 1;
}

int kg_tunables_validate(const kgate_tunables *t, const kgate_plugin *p, const char *path, kg_err *err)
{
    if (!t)
        return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: %s() returned NULL", path, KGATE_TUNABLES_SYMBOL);
    if (t->abi_version != 1)
        return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: tunables of version %u; this kgate reads version 1", path,
                          t->abi_version);
    if (t->n > 1024 || (t->n && !t->tunables))
        return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: a tunables table of %u entries", path, t->n);
    for (uint32_t i = 0; i < t->n; i++) {
        const kgate_tunable *u = &t->tunables[i];
        if (!u->kernel || !kg_plugin_find(p, u->kernel))
            return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: tunable %u names no kernel of the table ('%.60s')", path, i,
                              u->kernel ? u->kernel : "(null)");
        for (uint32_t k = 0; k < i; k++)
            if (strcmp(t->tunables[k].kernel, u->kernel) == 0)
                return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: kernel '%s' has two tunables", path, u->kernel);
        if (!u->launch)
            return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: the tunable of '%s' has no launch function", path,
                              u->kernel);
        if (u->n_knobs < 1 || u->n_knobs > KG_MAX_KNOBS || !u->knobs)
            return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: the tunable of '%s' has %u knobs (1 to %d)", path,
                              u->kernel, u->n_knobs, KG_MAX_KNOBS);
        double size = 1;
        for (uint32_t k = 0; k < u->n_knobs; k++) {
            const kgate_knob *kb = &u->knobs[k];
            if (!knob_name_ok(kb->name))
                return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: '%s': knob %u's name is not [a-z_][a-z0-9_]* of at "
                                  "most 31 bytes", path, u->kernel, k);
            for (uint32_t q = 0; q < k; q++)
                if (strcmp(u->knobs[q].name, kb->name) == 0)
                    return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: '%s': knob '%s' appears twice", path, u->kernel,
                                      kb->name);
            if (kb->n_values < 1 || kb->n_values > KG_MAX_KNOB_VALUES || !kb->values)
                return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: '%s': knob '%s' has %u values (1 to %d)", path,
                                  u->kernel, kb->name, kb->n_values, KG_MAX_KNOB_VALUES);
            for (uint32_t a = 0; a < kb->n_values; a++)
                for (uint32_t b = 0; b < a; b++)
                    if (kb->values[a] == kb->values[b])
                        return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: '%s': knob '%s' lists %lld twice", path,
                                          u->kernel, kb->name, (long long)kb->values[a]);
            size *= kb->n_values;
        }
        if (size > 1099511627776.0)
            return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: '%s': a space of %.3g configurations (at most 2^40)", path,
                              u->kernel, size);
    }
    return 0;
}

const kgate_tunable *kg_tunable_find(const kgate_tunables *t, const char *name)
{
    for (uint32_t i = 0; t && i < t->n; i++)
        if (strcmp(t->tunables[i].kernel, name) == 0)
            return &t->tunables[i];
    return NULL;
}

void kg_space_of(const kgate_tunable *t, kg_space *s)
{
    memset(s, 0, sizeof *s);
    s->n_knobs = (int)t->n_knobs;
    for (int k = 0; k < s->n_knobs; k++) {
        snprintf(s->name[k], sizeof s->name[k], "%s", t->knobs[k].name);
        s->n_values[k] = (int)t->knobs[k].n_values;
        memcpy(s->values[k], t->knobs[k].values, sizeof(int64_t) * (size_t)s->n_values[k]);
    }
}

int kg_space_format(const kg_space *s, char *buf, size_t size)
{
    size_t u = 0;
    int cut = 0;
    buf[0] = '\0';
    for (int k = 0; k < s->n_knobs; k++) {
        cut |= kg_append(buf, size, &u, "%s%s=", k ? ";" : "", s->name[k]);
        for (int v = 0; v < s->n_values[k]; v++)
            cut |= kg_append(buf, size, &u, "%s%lld", v ? "|" : "", (long long)s->values[k][v]);
    }
    return cut ? -1 : 0;
}

int kg_space_parse(const char *text, kg_space *s, kg_err *err)
{
    char buf[KG_SPACE_TEXT];
    memset(s, 0, sizeof *s);
    if (!text || !text[0])
        return 0;
    if (strlen(text) >= sizeof buf)
        return kg_err_set(err, KG_EXIT_FAIL, "space: longer than %d bytes", KG_SPACE_TEXT - 1);
    snprintf(buf, sizeof buf, "%s", text);
    for (char *sv = NULL, *knob = strtok_r(buf, ";", &sv); knob; knob = strtok_r(NULL, ";", &sv)) {
        char *eq = strchr(knob, '=');
        if (!eq || s->n_knobs == KG_MAX_KNOBS)
            return kg_err_set(err, KG_EXIT_FAIL, "space: '%.40s' is not NAME=V|V|..", knob);
        *eq = '\0';
        int k = s->n_knobs;
        if (!knob_name_ok(knob))
            return kg_err_set(err, KG_EXIT_FAIL, "space: bad knob name '%.40s'", knob);
        snprintf(s->name[k], sizeof s->name[k], "%s", knob);
        for (char *sv2 = NULL, *v = strtok_r(eq + 1, "|", &sv2); v; v = strtok_r(NULL, "|", &sv2)) {
            char *end;
            long long x = strtoll(v, &end, 10);
            if (*end || end == v || s->n_values[k] == KG_MAX_KNOB_VALUES)
                return kg_err_set(err, KG_EXIT_FAIL, "space: knob '%s': bad value '%.20s'", s->name[k], v);
            s->values[k][s->n_values[k]++] = x;
        }
        if (!s->n_values[k])
            return kg_err_set(err, KG_EXIT_FAIL, "space: knob '%s' has no value", s->name[k]);
        s->n_knobs++;
    }
    return 0;
}

/* "64,128,256" (for an error) */
static void knob_values(const kg_space *s, int k, char *buf, size_t size)
{
    size_t u = 0;
    buf[0] = '\0';
    for (int v = 0; v < s->n_values[k]; v++)
        kg_append(buf, size, &u, "%s%lld", v ? "," : "", (long long)s->values[k][v]);
}

int kg_space_restrict(kg_space *s, const char *const *specs, int n, kg_err *err)
{
    int given[KG_MAX_KNOBS] = {0};
    for (int i = 0; i < n; i++) {
        char buf[512], list[600];
        if (strlen(specs[i]) >= sizeof buf)
            return kg_err_set(err, KG_EXIT_USAGE, "--knob '%.40s...': longer than %zu bytes", specs[i], sizeof buf - 1);
        snprintf(buf, sizeof buf, "%s", specs[i]);
        char *eq = strchr(buf, '=');
        size_t len = strlen(buf);
        if (!eq || eq == buf || !eq[1] || eq[1] == ',' || buf[len - 1] == ',' || strstr(eq, ",,"))
            return kg_err_set(err, KG_EXIT_USAGE, "--knob '%.80s': expected KNOB=V[,V...]", specs[i]);
        *eq = '\0';
        int k = 0;
        while (k < s->n_knobs && strcmp(s->name[k], buf) != 0)
            k++;
        if (k == s->n_knobs) {
            size_t u = 0;
            list[0] = '\0';
            for (int j = 0; j < s->n_knobs; j++)
                kg_append(list, sizeof list, &u, "%s%s", j ? ", " : "", s->name[j]);
            return kg_err_set(err, KG_EXIT_USAGE, "--knob %.80s: the space has no knob '%s' (its knobs: %s)", specs[i],
                              buf, list);
        }
        if (given[k]++)
            return kg_err_set(err, KG_EXIT_USAGE, "--knob %.80s: knob '%s' given twice", specs[i], buf);
        int keep[KG_MAX_KNOB_VALUES] = {0};
        for (char *sv = NULL, *v = strtok_r(eq + 1, ",", &sv); v; v = strtok_r(NULL, ",", &sv)) {
            char *end;
            errno = 0;
            long long x = strtoll(v, &end, 10);
            int j = 0;
            if (*end || end == v || !(isdigit((unsigned char)v[0]) || (v[0] == '-' && isdigit((unsigned char)v[1]))) ||
                errno == ERANGE)
                return kg_err_set(err, KG_EXIT_USAGE, "--knob %.80s: '%.20s' is not an integer", specs[i], v);
            while (j < s->n_values[k] && s->values[k][j] != x)
                j++;
            if (j == s->n_values[k]) {
                knob_values(s, k, list, sizeof list);
                return kg_err_set(err, KG_EXIT_USAGE, "--knob %.80s: knob '%s' does not take %lld (its values: %s)",
                                  specs[i], s->name[k], x, list);
            }
            if (keep[j]++)
                return kg_err_set(err, KG_EXIT_USAGE, "--knob %.80s: %lld given twice", specs[i], x);
        }
        int m = 0; /* at least one: the spec's form was checked above */
        for (int j = 0; j < s->n_values[k]; j++)
            if (keep[j])
                s->values[k][m++] = s->values[k][j];
        s->n_values[k] = m;
    }
    return 0;
}

double kg_space_size(const kg_space *s)
{
    double n = s->n_knobs ? 1 : 0;
    for (int k = 0; k < s->n_knobs; k++)
        n *= s->n_values[k];
    return n;
}

void kg_space_config(const kg_space *s, uint64_t index, int64_t *cfg)
{
    for (int k = s->n_knobs - 1; k >= 0; k--) {
        cfg[k] = s->values[k][index % (uint64_t)s->n_values[k]];
        index /= (uint64_t)s->n_values[k];
    }
}

int kg_config_format(const kg_space *s, const int64_t *cfg, char *buf, size_t size)
{
    size_t u = 0;
    int cut = 0;
    buf[0] = '\0';
    for (int k = 0; k < s->n_knobs; k++)
        cut |= kg_append(buf, size, &u, "%s%s=%lld", k ? "," : "", s->name[k], (long long)cfg[k]);
    return cut ? -1 : 0;
}

int kg_config_check(const kg_space *s, const int64_t *cfg, int n, char *msg, size_t size)
{
    if (n != s->n_knobs) {
        snprintf(msg, size, "%d value(s) for %d knob(s)", n, s->n_knobs);
        return 0;
    }
    for (int k = 0; k < n; k++) {
        int ok = 0;
        for (int v = 0; v < s->n_values[k] && !ok; v++)
            ok = s->values[k][v] == cfg[k];
        if (!ok) {
            snprintf(msg, size, "knob '%s' = %lld is not one of its values", s->name[k], (long long)cfg[k]);
            return 0;
        }
    }
    return 1;
}

static int by_index(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

int kg_space_pick(const kg_space *s, long budget, long cap, unsigned long long seed, uint64_t **idx, long *n,
                  kg_err *err)
{
    double size = kg_space_size(s);
    *idx = NULL;
    *n = 0;
    if (size < 1)
        return kg_err_set(err, KG_EXIT_USAGE, "the configuration space is empty");
    if (budget <= 0 && size > (double)cap)
        return kg_err_set(err, KG_EXIT_USAGE, "%.0f configurations: give --budget N to time a sample", size);
    long want = budget > 0 && (double)budget < size ? budget : (long)size;
    uint64_t *v = malloc(sizeof *v * (size_t)want);
    if (!v)
        return kg_err_set(err, KG_EXIT_ENV, "out of memory");
    if ((double)want == size) {
        for (long i = 0; i < want; i++)
            v[i] = (uint64_t)i;
    } else {
        /* distinct draws; the sample is small against the space */
        unsigned long long st = seed ? seed : 0x6b67617465ull;
        long got = 0;
        while (got < want) {
            uint64_t x = (uint64_t)(kg_splitmix64(&st) % (unsigned long long)size), dup = 0;
            for (long i = 0; i < got && !dup; i++)
                dup = v[i] == x;
            if (!dup)
                v[got++] = x;
        }
        qsort(v, (size_t)want, sizeof *v, by_index);
    }
    *idx = v;
    *n = want;
    return 0;
}
