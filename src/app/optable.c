/* One option parser over a table (optable.h), shared by every command. */
#include "optable.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kg_opt_takes(const char *list, const char *cmd)
{
    size_t n = strlen(cmd);
    for (const char *p = list; (p = strstr(p, cmd)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return 1;
    return 0;
}

int kg_opt_number(const char *opt, const char *v, double lo, double hi, int whole, double *out, kg_err *err)
{
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    int ok = !errno && !*end && end != v && isfinite(d) && d >= lo && d <= hi;
    for (const char *c = v; ok && whole && *c; c++)
        ok = *c >= '0' && *c <= '9';
    for (const char *c = v; ok && !whole && *c; c++)
        ok = !(*c == 'x' || *c == 'X' || *c == 'n' || *c == 'N' || *c == 'i' || *c == 'I');
    if (!ok)
        return kg_err_set(err, KG_EXIT_USAGE, "%s: '%s' is not a %s in [%g, %g]", opt, v,
                          whole ? "whole number" : "decimal number", lo, hi);
    *out = d;
    return 0;
}

/* Option d given the value v. */
static int set_value(const kg_optdef *d, const char *v, void *ctx, kg_err *err)
{
    double x = 0;
    if (d->kind == KG_OPT_FN)
        return d->fn(ctx, d->name, v, err);
    if (d->kind == KG_OPT_STR) {
        const char *c = d->choices, *bar = c ? strchr(c, '|') : NULL;
        if (bar && !(strlen(v) == (size_t)(bar - c) && strncmp(v, c, (size_t)(bar - c)) == 0) &&
            strcmp(v, bar + 1) != 0)
            return kg_err_set(err, KG_EXIT_USAGE, "%s takes %.*s or %s, not '%s'", d->name, (int)(bar - c), c,
                              bar + 1, v);
        *(const char **)d->dst = v;
        return 0;
    }
    if (kg_opt_number(d->name, v, d->lo, d->hi, d->kind != KG_OPT_NUM, &x, err))
        return err->code;
    if (d->kind == KG_OPT_NUM)
        *(double *)d->dst = x;
    else if (d->kind == KG_OPT_INT)
        *(int *)d->dst = (int)x;
    else
        *(unsigned long long *)d->dst = (unsigned long long)x;
    return 0;
}

int kg_opt_one(const kg_optdef *t, size_t n, const char *cmd, int argc, char **argv, int *i, void *ctx,
               kg_err *err)
{
    const char *a = argv[*i], *inline_v = NULL;
    size_t k = 0, len = strcspn(a, "=");
    while (k < n && strcmp(a, t[k].name) != 0)
        k++;
    if (k == n && a[len] == '=') {
        for (k = 0; k < n && !(strlen(t[k].name) == len && strncmp(a, t[k].name, len) == 0); k++)
            ;
        inline_v = a + len + 1;
    }
    if (k == n)
        return kg_err_set(err, KG_EXIT_USAGE, "unknown option '%.*s' (try kgate help %s)", (int)len, a, cmd);
    const kg_optdef *d = &t[k];
    if (!kg_opt_takes(d->cmds, cmd))
        return kg_err_set(err, KG_EXIT_USAGE, "kgate %s does not take %s (try kgate help %s)", cmd, d->name, cmd);
    if ((d->kind == KG_OPT_FLAG || d->kind == KG_OPT_ACTION) && inline_v)
        return kg_err_set(err, KG_EXIT_USAGE, "%s takes no value", d->name);
    if (d->kind == KG_OPT_FLAG) {
        *(int *)d->dst = (int)d->lo;
        return 0;
    }
    if (d->kind == KG_OPT_ACTION)
        return d->fn(ctx, d->name, NULL, err);
    const char *v = inline_v ? inline_v : *i + 1 < argc ? argv[++*i] : NULL;
    if (!v)
        return kg_err_set(err, KG_EXIT_USAGE, "option %s needs a value", d->name);
    return set_value(d, v, ctx, err);
}
