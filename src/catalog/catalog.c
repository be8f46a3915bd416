/* Registry lookups, shape parsing, work models and named scalars. */
#include "op.h"
#include "../base/text.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *family_names[] = {
#define X(e, s) s,
    KG_FAMILIES(X)
#undef X
};

static const char *dist_names[] = {
#define X(e, s) s,
    KG_DISTS(X)
#undef X
};

const char *kg_dist_name(kg_dist d) { return (unsigned)d < KG_DIST_COUNT ? dist_names[d] : "?"; }

const char *kg_family_name(kg_family f)
{
    return (unsigned)f < KG_FAMILY_COUNT ? family_names[f] : "?";
}

/* the lookup of operators registered at run time (kg_op_set_runtime_find) */
static const kg_op *(*runtime_find)(const char *name);

void kg_op_set_runtime_find(const kg_op *(*find)(const char *name)) { runtime_find = find; }

const kg_op *kg_op_find(const char *name)
{
    for (int i = 0; name && kg_ops[i]; i++)
        if (strcmp(kg_ops[i]->name, name) == 0)
            return kg_ops[i];
    return name && runtime_find ? runtime_find(name) : NULL;
}

int kg_op_has_dtype(const kg_op *op, kg_dtype dt)
{
    for (int i = 0; i < op->n_dtypes; i++)
        if (op->dtypes[i] == dt)
            return 1;
    return 0;
}

int kg_op_suite_dtypes(const kg_op *op)
{
    return op->n_suite_dtypes > 0 && op->n_suite_dtypes <= op->n_dtypes ? op->n_suite_dtypes : 1;
}

const kg_preset *kg_preset_find(const kg_op *op, const char *name)
{
    for (int i = 0; i < op->n_presets; i++)
        if (strcmp(op->presets[i].name, name) == 0)
            return &op->presets[i];
    return NULL;
}

const kg_scalar_spec *kg_op_scalar(const kg_op *op, const char *name)
{
    for (int i = 0; i < op->n_scalars; i++)
        if (strcmp(op->scalars[i].name, name) == 0)
            return &op->scalars[i];
    return NULL;
}

int kg_op_scalar_extent(const kg_op *op, const char *name)
{
    for (int i = 0; i < op->n_scalars && i < KG_MAX_SCALARS; i++)
        if (strcmp(op->scalars[i].name, name) == 0)
            return op->bound_extent[i] > 0 ? op->bound_extent[i] - 1 : -1;
    return -1;
}

kg_tol kg_op_tol(const kg_op *op, kg_dtype dt)
{
    return kg_tol_for(dt, op->reduction || op->tol_rounded || (op->tol_rms && dt == KG_FP32));
}

int kg_op_has_index(const kg_op *op)
{
    for (int i = 0; i < op->n_inputs; i++)
        if (op->in[i].type == KG_T_INDEX)
            return 1;
    return 0;
}

int kg_shape_parse(const kg_op *op, const char *text, kg_shape *out, kg_err *err)
{
    const kg_preset *p = kg_preset_find(op, text);
    if (p) {
        /* presets are trusted (tests/test_catalog.c parses each), except
         * where a hook defines validity: there they are checked too */
        if (op->check_shape && kg_shape_check(op, &p->shape, err))
            return err->code;
        *out = p->shape;
        return 0;
    }
    kg_shape s = {0, {0}};
    const char *c = text;
    while (*c) {
        if (!isdigit((unsigned char)*c) || s.n == KG_MAX_DIMS)
            goto bad;
        errno = 0;
        char *end;
        long long v = strtoll(c, &end, 10);
        if (errno || v < 0 || (v == 0 && !op->check_shape) || v > (1LL << 31))
            goto bad;
        s.d[s.n++] = v;
        c = end;
        if (*c == 'x') {
            c++;
            if (!*c)
                goto bad;
        } else if (*c) {
            goto bad;
        }
    }
    if (s.n == 1 && op->n_dims > 1)
        for (s.n = 1; s.n < op->n_dims; s.n++)
            s.d[s.n] = s.d[0];
    if (s.n != op->n_dims)
        goto bad;
    if (kg_shape_check(op, &s, err))
        return err->code;
    *out = s;
    return 0;
bad:;
    char names[160] = "";
    size_t u = 0;
    for (int i = 0; i < op->n_presets; i++)
        kg_append(names, sizeof names, &u, "%s%s", i ? ", " : "", op->presets[i].name);
    return kg_err_set(err, KG_EXIT_USAGE,
                      "bad shape '%s' for %s: expected %s (positive integers), one number for all "
                      "extents, or a preset (%s)",
                      text, op->name, op->dims, names);
}

const char *kg_op_dim_name(const kg_op *op, int i, char *buf, size_t size)
{
    const char *c = op->dims;
    for (int k = 0; k < i && c; k++) {
        c = strchr(c, 'x');
        c = c ? c + 1 : NULL;
    }
    if (!c) {
        snprintf(buf, size, "d%d", i);
        return buf;
    }
    const char *e = strchr(c, 'x');
    size_t n = e ? (size_t)(e - c) : strlen(c);
    snprintf(buf, size, "%.*s", (int)n, c);
    return buf;
}

/* The extents of t at s, without their product (which may not fit before
 * kg_shape_check has looked at them). */
static void tensor_ext(const kg_tensor_spec *t, const kg_shape *s, int64_t *ext)
{
    if (t->derive && !t->fixed) {
        t->derive(s, ext);
        return;
    }
    for (int i = 0; i < t->rank; i++)
        ext[i] = t->fixed ? t->ext[i] : s->d[t->dim[i]];
}

int kg_shape_check(const kg_op *op, const kg_shape *s, kg_err *err)
{
    char txt[160], why[300] = "";
    int64_t lo = op->check_shape ? 0 : 1;
    kg_shape_format(s, txt, sizeof txt);
    if (s->n != op->n_dims)
        return kg_err_set(err, KG_EXIT_USAGE, "shape %s for %s: expected %d extents (%s)", txt,
                          op->name, op->n_dims, op->dims);
    for (int i = 0; i < s->n; i++)
        if (s->d[i] < lo || s->d[i] > (1LL << 31)) {
            char dn[32];
            return kg_err_set(err, KG_EXIT_USAGE, "shape %s for %s: extent %s = %lld is not in [%lld, 2^31]",
                              txt, op->name, kg_op_dim_name(op, i, dn, sizeof dn), (long long)s->d[i],
                              (long long)lo);
        }
    if (op->check_shape) {
        kg_shape copy = *s;
        if (op->check_shape(op, &copy, 0, why, sizeof why))
            return kg_err_set(err, KG_EXIT_USAGE, "bad %s shape %s (%s): %s", op->name, txt, op->dims,
                              why[0] ? why : "invalid");
    }
    /* every tensor must stay addressable with 64-bit offsets and below 2^40 elements */
    for (int i = 0; i < op->n_inputs + op->n_outputs; i++) {
        const kg_tensor_spec *t = i < op->n_inputs ? &op->in[i] : &op->out[i - op->n_inputs];
        int64_t ext[KG_MAX_RANK];
        double n = 1;
        tensor_ext(t, s, ext);
        for (int k = 0; k < t->rank; k++)
            n *= (double)ext[k];
        if (n > 1099511627776.0)
            return kg_err_set(err, KG_EXIT_USAGE, "shape %s for %s: tensor %s would hold %.3g elements",
                              txt, op->name, t->name, n);
    }
    return 0;
}

int64_t kg_tensor_extents(const kg_tensor_spec *t, const kg_shape *s, int64_t *ext)
{
    int64_t n = 1;
    tensor_ext(t, s, ext);
    for (int i = 0; i < t->rank; i++)
        n *= ext[i];
    return n;
}

kg_dtype kg_tensor_dtype_of(const kg_tensor_spec *t, kg_types types)
{
    return t->type == KG_T_DATA ? types.data : t->type == KG_T_INDEX ? types.index : KG_I64;
}

void kg_input0_matrix(const kg_op *op, const kg_shape *s, int64_t *rows, int64_t *cols)
{
    int64_t ext[KG_MAX_RANK];
    int64_t n = kg_tensor_extents(&op->in[0], s, ext);
    if (op->in[0].rank <= 1) { /* a scalar is one element */
        *rows = n >= 64 ? 8 : 1;
        *cols = n / *rows;
        return;
    }
    *cols = ext[op->in[0].rank - 1];
    *rows = *cols > 0 ? n / *cols : 0;
}

void kg_work_default(const kg_op *op, const kg_shape *s, kg_types t, kg_work *w)
{
    int64_t ext[KG_MAX_RANK];
    memset(w, 0, sizeof *w);
    for (int i = 0; i < op->n_inputs; i++)
        w->bytes_read += (double)kg_tensor_extents(&op->in[i], s, ext) *
                         (double)kg_dtype_size(kg_tensor_dtype_of(&op->in[i], t));
    for (int i = 0; i < op->n_outputs; i++)
        w->bytes_written += (double)kg_tensor_extents(&op->out[i], s, ext) *
                            (double)kg_dtype_size(kg_tensor_dtype_of(&op->out[i], t));
    w->bytes = w->bytes_read + w->bytes_written;
    w->flops = op->flops_per_elem * (double)kg_tensor_extents(&op->in[0], s, ext);
}

void kg_op_work(const kg_op *op, const kg_shape *s, kg_types t, kg_work *w)
{
    kg_op_work_call(op, s, t, NULL, w);
}

void kg_op_work_call(const kg_op *op, const kg_shape *s, kg_types t, const kg_scalars *sc, kg_work *w)
{
    if (op->work_p) {
        kg_scalars def;
        kgate_params p;
        if (!sc) {
            kg_scalars_default(op, &def);
            sc = &def;
        }
        memset(&p, 0, sizeof p);
        p.struct_size = sizeof p;
        p.n_scalars = (uint32_t)sc->n;
        p.scalars = sc->v;
        memset(w, 0, sizeof *w);
        op->work_p(op, s, t, &p, w);
        if (!(w->bytes > 0))
            w->bytes = w->bytes_read + w->bytes_written;
    } else if (op->work) {
        memset(w, 0, sizeof *w);
        op->work(op, s, t, w);
        if (!(w->bytes > 0))
            w->bytes = w->bytes_read + w->bytes_written;
    } else {
        kg_work_default(op, s, t, w);
    }
}

void kg_scalars_default(const kg_op *op, kg_scalars *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < op->n_scalars && i < KG_MAX_SCALARS; i++) {
        out->v[i].name = op->scalars[i].name;
        out->v[i].value = op->scalars[i].def;
    }
    out->n = op->n_scalars;
}

static void scalar_names(const kg_op *op, char *buf, size_t size)
{
    size_t u = 0;
    buf[0] = '\0';
    for (int i = 0; i < op->n_scalars; i++)
        kg_append(buf, size, &u, "%s%s", i ? ", " : "", op->scalars[i].name);
    if (!op->n_scalars)
        snprintf(buf, size, "none");
}

int kg_scalars_set(const kg_op *op, kg_scalars *s, const char *a, kg_err *err)
{
    char names[160], name[64];
    const char *eq = strchr(a, '=');
    scalar_names(op, names, sizeof names);
    if (!eq || eq == a || (size_t)(eq - a) >= sizeof name)
        return kg_err_set(err, KG_EXIT_USAGE, "--param '%s': expected NAME=VALUE (%s takes: %s)", a,
                          op->name, names);
    memcpy(name, a, (size_t)(eq - a));
    name[eq - a] = '\0';
    int k = -1;
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->v[i].name, name) == 0)
            k = i;
    const kg_scalar_spec *sp = kg_op_scalar(op, name);
    if (k < 0 || !sp)
        return kg_err_set(err, KG_EXIT_USAGE, "--param %s: %s has no scalar '%s' (it takes: %s)", a,
                          op->name, name, names);
    if (kg_op_scalar_extent(op, name) >= 0) {
        char dn[32];
        return kg_err_set(err, KG_EXIT_USAGE, "--param %s: %s's %s is extent %s of its shape (%s): "
                          "give it in --shape", a, op->name, name,
                          kg_op_dim_name(op, kg_op_scalar_extent(op, name), dn, sizeof dn), op->dims);
    }
    char *end;
    errno = 0;
    double v = strtod(eq + 1, &end);
    if (errno || end == eq + 1 || *end || !isfinite(v))
        return kg_err_set(err, KG_EXIT_USAGE, "--param %s: '%s' is not a finite number", a, eq + 1);
    if (sp->integer && (v != floor(v) || fabs(v) > 9007199254740992.0))
        return kg_err_set(err, KG_EXIT_USAGE, "--param %s: %s takes a whole number", a, name);
    s->v[k].value = v;
    return 0;
}

void kg_scalars_for_trial(const kg_op *op, const kg_scalars *given, int alt, kg_scalars *out)
{
    *out = *given;
    if (!alt)
        return;
    for (int i = 0; i < out->n; i++) {
        const kg_scalar_spec *sp = kg_op_scalar(op, out->v[i].name);
        if (sp && sp->required && !isnan(sp->alt))
            out->v[i].value = sp->alt;
    }
}

void kg_scalars_bind(const kg_op *op, const kg_shape *s, kg_scalars *sc)
{
    for (int i = 0; i < sc->n; i++) {
        int d = kg_op_scalar_extent(op, sc->v[i].name);
        if (d >= 0 && d < s->n)
            sc->v[i].value = (double)s->d[d];
    }
}

int kg_op_check_scalars(const kg_op *op, const char *kernel, const char *list, kg_err *err)
{
    char buf[256], names[160];
    int seen[KG_MAX_SCALARS] = {0};
    scalar_names(op, names, sizeof names);
    if (list && strlen(list) >= sizeof buf)
        return kg_err_set(err, KG_EXIT_CANDIDATE, "kernel '%s': scalar list too long", kernel);
    snprintf(buf, sizeof buf, "%s", list ? list : "");
    char *save = NULL;
    for (char *t = strtok_r(buf, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
        int k = -1;
        for (int i = 0; i < op->n_scalars; i++)
            if (strcmp(op->scalars[i].name, t) == 0)
                k = i;
        if (k < 0)
            return kg_err_set(err, KG_EXIT_CANDIDATE,
                              "kernel '%s' reads scalar '%s', which %s does not have (it has: %s)",
                              kernel, t, op->name, names);
        seen[k] = 1;
    }
    for (int i = 0; i < op->n_scalars; i++)
        if (op->scalars[i].required && !seen[i])
            return kg_err_set(err, KG_EXIT_CANDIDATE,
                              "kernel '%s' does not declare scalar '%s', which %s requires "
                              "(its value varies between trials)",
                              kernel, op->scalars[i].name, op->name);
    return 0;
}

int kg_extra_shapes(const kg_op *op, unsigned long long seed, kg_shape out[3])
{
    const kg_preset *small = kg_preset_find(op, "small");
    const kg_shape *base = small ? &small->shape : &op->presets[0].shape;
    unsigned long long x = seed;
    memset(out, 0, 3 * sizeof *out);
    for (int k = 0; k < 3; k++) {
        out[k].n = base->n;
        for (int i = 0; i < base->n; i++) {
            int64_t d = base->d[i], v;
            if (k == 0) {
                v = d - 1 - (int64_t)(kg_splitmix64(&x) % 13);
                v = v < 1 ? 1 : v;
                if (v % 2 == 0)
                    v = v > 1 ? v - 1 : 1;
            } else if (k == 1) {
                v = 1 + (int64_t)(kg_splitmix64(&x) % 7);
            } else {
                v = d + 1 + (int64_t)(kg_splitmix64(&x) % (uint64_t)d);
            }
            out[k].d[i] = v;
        }
        if (op->check_shape) {
            char why[300];
            op->check_shape(op, &out[k], 1, why, sizeof why);
        }
    }
    return 3;
}
