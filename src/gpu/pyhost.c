/* What the Python worker host (python/kgate/_worker.py) checks before it
 * trusts its ctypes mirrors of kgate's structs: their sizes as this
 * libkgate.so was built. A mismatch stops the host with one line rather than
 * letting it pass a struct of the wrong layout. */
#include <stddef.h>
#include <string.h>

#include <kgate/plugin.h>

#include "../catalog/op.h"
#include "provider.h"

size_t kg_pyhost_sizeof(const char *what);
int kg_pyhost_op_arity(const char *op, int *n_inputs, int *n_outputs);

size_t kg_pyhost_sizeof(const char *what)
{
    static const struct {
        const char *name;
        size_t size;
    } sizes[] = {{"provider", sizeof(kg_provider)}, {"kernel", sizeof(kgate_kernel)},
                 {"table", sizeof(kgate_plugin)},   {"dltensor", sizeof(DLTensor)},
                 {"params", sizeof(kgate_params)}};
    for (size_t i = 0; what && i < sizeof sizes / sizeof sizes[0]; i++)
        if (strcmp(what, sizes[i].name) == 0)
            return sizes[i].size;
    return 0;
}

/* The tensor counts of catalog operator `op`: 0, or -1 when there is none. */
int kg_pyhost_op_arity(const char *op, int *n_inputs, int *n_outputs)
{
    const kg_op *o = op ? kg_op_find(op) : NULL;
    if (!o)
        return -1;
    *n_inputs = o->n_inputs;
    *n_outputs = o->n_outputs;
    return 0;
}

/* For the Python side's tests (tests/python/test_torch.py): the number of
 * extents of catalog operator `op`, and for tensor t (inputs first, then
 * outputs) at the extents `dims`: its rank, extents, element class
 * (0 data, 1 index, 2 int64), value range [lo, hi) and, for an index input,
 * the extent it indexes. Returns -1 for an unknown operator or tensor. */
int kg_pyhost_op_dims(const char *op);
int kg_pyhost_op_tensor(const char *op, const int64_t *dims, int n_dims, int t, int *rank, int64_t *ext, int *cls,
                        double *lo, double *hi, int64_t *index_range);
/* Runs the operator's CPU fp64 reference with its default scalars. */
int kg_pyhost_cpu_reference(const char *op, const int64_t *dims, int n_dims, const double *const *in,
                            double *const *out);
/* The value of scalar `name` in that run: its default, or for a scalar bound
 * to the shape, the extent of dims it is bound to. -1: no such scalar. */
int kg_pyhost_op_scalar(const char *op, const int64_t *dims, int n_dims, const char *name, double *value);

int kg_pyhost_op_dims(const char *op)
{
    const kg_op *o = op ? kg_op_find(op) : NULL;
    return o ? o->n_dims : -1;
}

static int shape_of(const kg_op *o, const int64_t *dims, int n_dims, kg_shape *s)
{
    if (n_dims != o->n_dims || n_dims > KG_MAX_DIMS)
        return -1;
    s->n = n_dims;
    for (int i = 0; i < n_dims; i++)
        s->d[i] = dims[i];
    kg_err e = {0, ""};
    return kg_shape_check(o, s, &e) ? -1 : 0;
}

int kg_pyhost_op_tensor(const char *op, const int64_t *dims, int n_dims, int t, int *rank, int64_t *ext, int *cls,
                        double *lo, double *hi, int64_t *index_range)
{
    const kg_op *o = op ? kg_op_find(op) : NULL;
    kg_shape s;
    if (!o || shape_of(o, dims, n_dims, &s) || t < 0 || t >= o->n_inputs + o->n_outputs)
        return -1;
    const kg_tensor_spec *sp = t < o->n_inputs ? &o->in[t] : &o->out[t - o->n_inputs];
    *rank = sp->rank;
    kg_tensor_extents(sp, &s, ext);
    *cls = sp->type == KG_T_DATA ? 0 : sp->type == KG_T_INDEX ? 1 : 2;
    *lo = sp->lo;
    *hi = sp->hi;
    *index_range = sp->gen == KG_GEN_INDEX ? s.d[sp->range_dim] : 0;
    return 0;
}

int kg_pyhost_cpu_reference(const char *op, const int64_t *dims, int n_dims, const double *const *in,
                            double *const *out)
{
    const kg_op *o = op ? kg_op_find(op) : NULL;
    kg_shape s;
    if (!o || !o->cpu_reference || shape_of(o, dims, n_dims, &s))
        return -1;
    kg_scalars sc;
    kg_scalars_default(o, &sc);
    kg_scalars_bind(o, &s, &sc);
    kgate_params p = {sizeof p, (uint32_t)sc.n, sc.v, NULL, 0};
    o->cpu_reference(in, &s, &p, out);
    return 0;
}

int kg_pyhost_op_scalar(const char *op, const int64_t *dims, int n_dims, const char *name, double *value)
{
    const kg_op *o = op ? kg_op_find(op) : NULL;
    kg_shape s;
    if (!o || !name || shape_of(o, dims, n_dims, &s))
        return -1;
    kg_scalars sc;
    kg_scalars_default(o, &sc);
    kg_scalars_bind(o, &s, &sc);
    for (int i = 0; i < sc.n; i++)
        if (strcmp(sc.v[i].name, name) == 0) {
            *value = sc.v[i].value;
            return 0;
        }
    return -1;
}
