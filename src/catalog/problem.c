/* Problems outside the catalog: JSON, validation, run-time registration
 * (catalog/problem.h says the rule). */
#include "problem.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static struct {
    kg_problem p;
    kg_op op;
} reg[KG_PROBLEM_MAX];
static int n_reg;

static int name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
              s[i] == '_' || s[i] == '.' || s[i] == '-'))
            return 0;
    return 1;
}

static int get_tensors(const cJSON *j, const char *key, kg_problem_tensor *t, int *n, kg_err *err)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, key), *x;
    if (!cJSON_IsArray(arr))
        return kg_err_set(err, KG_EXIT_CANDIDATE, "problem: '%s' is missing or not an array", key);
    int k = cJSON_GetArraySize(arr);
    if (k < 1 || k > KG_MAX_TENSORS)
        return kg_err_set(err, KG_EXIT_CANDIDATE, "problem: %d %s (1 to %d)", k, key, KG_MAX_TENSORS);
    *n = 0;
    cJSON_ArrayForEach(x, arr)
    {
        kg_problem_tensor *o = &t[(*n)++];
        const cJSON *sh = cJSON_GetObjectItemCaseSensitive(x, "shape"), *d;
        const cJSON *dt = cJSON_GetObjectItemCaseSensitive(x, "dtype");
        if (!cJSON_IsArray(sh) || !cJSON_IsString(dt))
            return kg_err_set(err, KG_EXIT_CANDIDATE, "problem: %s[%d] needs 'shape' (array) and 'dtype'",
                              key, *n - 1);
        if (kg_dtype_parse(dt->valuestring, &o->dtype) || o->dtype == KG_FP64)
            return kg_err_set(err, KG_EXIT_CANDIDATE, "problem: %s[%d]: dtype '%.40s' (fp16, bf16, fp32, "
                              "int32, int64)", key, *n - 1, dt->valuestring);
        o->rank = cJSON_GetArraySize(sh);
        if (o->rank > KG_MAX_RANK)
            return kg_err_set(err, KG_EXIT_CANDIDATE, "problem: %s[%d] has rank %d (at most %d)", key, *n - 1,
                              o->rank, KG_MAX_RANK);
        int r = 0;
        double numel = 1;
        cJSON_ArrayForEach(d, sh)
        {
            if (!cJSON_IsNumber(d) || d->valuedouble != floor(d->valuedouble) || d->valuedouble < 1 ||
                d->valuedouble > 2147483648.0)
                return kg_err_set(err, KG_EXIT_CANDIDATE, "problem: %s[%d]: extent %d is not a whole "
                                  "number in [1, 2^31]", key, *n - 1, r);
            o->ext[r++] = (int64_t)d->valuedouble;
            numel *= d->valuedouble;
        }
        if (numel * (double)kg_dtype_size(o->dtype) > 64.0 * (1ull << 30))
            return kg_err_set(err, KG_EXIT_CANDIDATE, "problem: %s[%d] is over 64 GiB", key, *n - 1);
    }
    return 0;
}

int kg_problem_from_json(const cJSON *j, kg_problem *p, kg_err *err)
{
    memset(p, 0, sizeof *p);
    if (!cJSON_IsObject(j))
        return kg_err_set(err, KG_EXIT_CANDIDATE, "problem: not an object");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "name");
    const cJSON *fam = cJSON_GetObjectItemCaseSensitive(j, "family");
    const cJSON *roof = cJSON_GetObjectItemCaseSensitive(j, "roof");
    const cJSON *note = cJSON_GetObjectItemCaseSensitive(j, "note");
    const char *nums[] = {"flops", "bytes_read", "bytes_written"};
    double *dst[] = {&p->flops, &p->bytes_read, &p->bytes_written};
    if (!cJSON_IsString(name) || !name_ok(name->valuestring))
        return kg_err_set(err, KG_EXIT_CANDIDATE, "problem: 'name' must be 1-63 of [A-Za-z0-9_.-]");
    snprintf(p->name, sizeof p->name, "%s", name->valuestring);
    for (const kg_op *const *o = kg_ops; *o; o++)
        if (strcmp((*o)->name, p->name) == 0)
            return kg_err_set(err, KG_EXIT_CANDIDATE, "problem: '%s' is a catalog operator's name", p->name);
    p->family = KG_FAMILY_ELEMENTWISE;
    if (fam) {
        int f = 0;
        for (; f < KG_FAMILY_COUNT; f++)
            if (cJSON_IsString(fam) && strcmp(fam->valuestring, kg_family_name((kg_family)f)) == 0)
                break;
        if (f == KG_FAMILY_COUNT)
            return kg_err_set(err, KG_EXIT_CANDIDATE, "problem: 'family' is not one of gemm, attention, "
                              "convolution, normalization, element-wise/reduction");
        p->family = (kg_family)f;
    }
    if (get_tensors(j, "inputs", p->in, &p->n_in, err) || get_tensors(j, "outputs", p->out, &p->n_out, err))
        return err->code;
    for (int i = 0; i < 3; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, nums[i]);
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0 || v->valuedouble > 1e18)
            return kg_err_set(err, KG_EXIT_CANDIDATE, "problem: '%s' must be a number in [0, 1e18]", nums[i]);
        *dst[i] = v->valuedouble;
    }
    if (!(p->bytes_read + p->bytes_written > 0))
        return kg_err_set(err, KG_EXIT_CANDIDATE, "problem: no essential bytes");
    /* each output is a buffer of its own, written once: no more can be essential */
    double out_bytes = 0;
    for (int t = 0; t < p->n_out; t++) {
        double n = (double)kg_dtype_size(p->out[t].dtype);
        for (int r = 0; r < p->out[t].rank; r++)
            n *= (double)p->out[t].ext[r];
        out_bytes += n;
    }
    if (p->bytes_written > out_bytes)
        return kg_err_set(err, KG_EXIT_CANDIDATE, "problem: 'bytes_written' %.17g is more than the outputs "
                          "hold (%.17g bytes)", p->bytes_written, out_bytes);
    if (!cJSON_IsString(roof) || (strcmp(roof->valuestring, "tensor") && strcmp(roof->valuestring, "fp32")))
        return kg_err_set(err, KG_EXIT_CANDIDATE, "problem: 'roof' must be \"tensor\" or \"fp32\"");
    p->unit = strcmp(roof->valuestring, "tensor") == 0 ? KG_UNIT_TENSOR : KG_UNIT_FP32;
    if (note && (!cJSON_IsString(note) || strlen(note->valuestring) >= sizeof p->note))
        return kg_err_set(err, KG_EXIT_CANDIDATE, "problem: 'note' must be a string under %zu bytes",
                          sizeof p->note);
    if (note)
        snprintf(p->note, sizeof p->note, "%s", note->valuestring);
    /* the float tensors share one dtype: the problem's data dtype */
    kg_dtype data = KG_DTYPE_COUNT;
    for (int t = 0; t < p->n_in + p->n_out; t++) {
        kg_dtype d = t < p->n_in ? p->in[t].dtype : p->out[t - p->n_in].dtype;
        if (kg_dtype_is_int(d))
            continue;
        if (data != KG_DTYPE_COUNT && d != data)
            return kg_err_set(err, KG_EXIT_CANDIDATE, "problem: tensors of %s and %s: the float tensors "
                              "must share one dtype", kg_dtype_name(data), kg_dtype_name(d));
        data = d;
    }
    if (data == KG_DTYPE_COUNT)
        return kg_err_set(err, KG_EXIT_CANDIDATE, "problem: no float tensor (its dtype is the problem's)");
    for (int t = 0; t < p->n_out; t++)
        if (p->out[t].dtype == KG_I32)
            return kg_err_set(err, KG_EXIT_CANDIDATE, "problem: int32 outputs are not supported (int64 are)");
    return 0;
}

int kg_problem_parse(const char *text, kg_problem *p, kg_err *err)
{
    cJSON *j = cJSON_Parse(text);
    if (!j)
        return kg_err_set(err, KG_EXIT_CANDIDATE, "problem: not valid JSON");
    int rc = kg_problem_from_json(j, p, err);
    cJSON_Delete(j);
    return rc;
}

static cJSON *tensors_json(const kg_problem_tensor *t, int n)
{
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; arr && i < n; i++) {
        cJSON *o = cJSON_CreateObject(), *sh = cJSON_CreateArray();
        for (int r = 0; sh && r < t[i].rank; r++)
            cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)t[i].ext[r]));
        cJSON_AddItemToObject(o, "shape", sh);
        cJSON_AddStringToObject(o, "dtype", kg_dtype_name(t[i].dtype));
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

cJSON *kg_problem_to_json(const kg_problem *p)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "name", p->name);
    cJSON_AddStringToObject(o, "family", kg_family_name(p->family));
    cJSON_AddItemToObject(o, "inputs", tensors_json(p->in, p->n_in));
    cJSON_AddItemToObject(o, "outputs", tensors_json(p->out, p->n_out));
    cJSON_AddNumberToObject(o, "flops", p->flops);
    cJSON_AddNumberToObject(o, "bytes_read", p->bytes_read);
    cJSON_AddNumberToObject(o, "bytes_written", p->bytes_written);
    cJSON_AddStringToObject(o, "roof", p->unit == KG_UNIT_TENSOR ? "tensor" : "fp32");
    cJSON_AddStringToObject(o, "note", p->note);
    return o;
}

const kg_problem *kg_problem_of(const kg_op *op)
{
    for (int i = 0; op && i < n_reg; i++)
        if (&reg[i].op == op)
            return &reg[i].p;
    return NULL;
}

const kg_op *kg_problem_find(const char *name)
{
    for (int i = 0; name && i < n_reg; i++)
        if (strcmp(reg[i].p.name, name) == 0)
            return &reg[i].op;
    return NULL;
}

static void problem_work(const kg_op *op, const kg_shape *s, kg_types t, kg_work *w)
{
    const kg_problem *p = kg_problem_of(op);
    (void)s;
    (void)t;
    w->flops = p ? p->flops : 0;
    w->bytes_read = p ? p->bytes_read : 0;
    w->bytes_written = p ? p->bytes_written : 0;
    w->bytes = w->bytes_read + w->bytes_written;
}

static void spec_of(const kg_problem_tensor *t, kg_tensor_spec *s, const char *name)
{
    s->name = name;
    s->rank = t->rank;
    s->fixed = 1;
    for (int r = 0; r < t->rank; r++)
        s->ext[r] = t->ext[r];
    s->type = t->dtype == KG_I64 ? KG_T_I64 : t->dtype == KG_I32 ? KG_T_INDEX : KG_T_DATA;
    s->gen = KG_GEN_UNIFORM;
    s->lo = -1;
    s->hi = 1;
    s->cmp = KG_CMP_CLOSE;
}

static int same_problem(const kg_problem *a, const kg_problem *b)
{
    if (strcmp(a->name, b->name) || a->family != b->family || a->n_in != b->n_in || a->n_out != b->n_out ||
        a->flops != b->flops || a->bytes_read != b->bytes_read || a->bytes_written != b->bytes_written ||
        a->unit != b->unit)
        return 0;
    for (int t = 0; t < a->n_in + a->n_out; t++) {
        const kg_problem_tensor *x = t < a->n_in ? &a->in[t] : &a->out[t - a->n_in];
        const kg_problem_tensor *y = t < a->n_in ? &b->in[t] : &b->out[t - a->n_in];
        if (x->rank != y->rank || x->dtype != y->dtype || memcmp(x->ext, y->ext, sizeof(int64_t) * (size_t)x->rank))
            return 0;
    }
    return 1;
}

static const char *in_names[KG_MAX_TENSORS] = {"in0", "in1", "in2", "in3"};
static const char *out_names[KG_MAX_TENSORS] = {"out0", "out1", "out2", "out3"};

int kg_problem_register(const kg_problem *p, const kg_op **op, kg_err *err)
{
    for (int i = 0; i < n_reg; i++)
        if (strcmp(reg[i].p.name, p->name) == 0) {
            if (!same_problem(&reg[i].p, p))
                return kg_err_set(err, KG_EXIT_CANDIDATE, "problem '%s' changed: its tensors or work differ from "
                                  "what it said before (a problem must describe itself the same way each time)",
                                  p->name);
            *op = &reg[i].op;
            return 0;
        }
    if (n_reg == KG_PROBLEM_MAX)
        return kg_err_set(err, KG_EXIT_CANDIDATE, "more than %d problems in one process", KG_PROBLEM_MAX);
    kg_problem *q = &reg[n_reg].p;
    kg_op *o = &reg[n_reg].op;
    *q = *p;
    memset(o, 0, sizeof *o);
    o->name = q->name;
    o->summary = q->note[0] ? q->note : "a problem outside the catalog";
    o->family = q->family;
    o->dims = "problem";
    /* the shape a problem is shown and selected by: its first output's extents */
    const kg_problem_tensor *shown = &q->out[0];
    kg_shape sh = {shown->rank ? shown->rank : 1, {1}};
    for (int r = 0; r < shown->rank && r < KG_MAX_DIMS; r++)
        sh.d[r] = shown->ext[r];
    if (sh.n > KG_MAX_DIMS)
        sh.n = KG_MAX_DIMS;
    o->n_dims = sh.n;
    for (int t = 0; t < q->n_in + q->n_out; t++) {
        kg_dtype d = t < q->n_in ? q->in[t].dtype : q->out[t - q->n_in].dtype;
        if (!kg_dtype_is_int(d))
            o->dtypes[0] = d;
    }
    o->n_dtypes = o->n_suite_dtypes = 1;
    const char *presets[] = {"small", "medium", "large", "problem"};
    for (int i = 0; i < 4; i++) {
        o->presets[i].name = presets[i];
        o->presets[i].shape = sh;
    }
    o->n_presets = 4;
    o->n_inputs = q->n_in;
    o->n_outputs = q->n_out;
    for (int i = 0; i < q->n_in; i++)
        spec_of(&q->in[i], &o->in[i], in_names[i]);
    for (int i = 0; i < q->n_out; i++)
        spec_of(&q->out[i], &o->out[i], out_names[i]);
    o->reduction = 1;
    o->unit = q->unit;
    o->work = problem_work;
    o->no_baseline_why = "a problem outside the catalog: its library paths come with it (PyTorch)";
    n_reg++;
    kg_op_set_runtime_find(kg_problem_find);
    *op = o;
    return 0;
}
