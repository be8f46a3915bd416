/* The worker's bench (bench.h): one job's tensors and the subject's
 * checks: inputs filled (distributions, edge rows) and prepared, fp64
 * references computed after the subject's call and hidden again, outputs
 * collected and compared under the tolerance rule, and the guards. */
#include "bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../catalog/tolerance.h"
#include "tensors.h"
void kg_bench_set_scalars(kg_bench *b, int alt)
{
    kg_scalars_for_trial(b->op, &b->job->scalars, alt, &b->scalars);
    kg_scalars_bind(b->op, &b->shape, &b->scalars); /* stride, padding: this shape's */
    b->params.struct_size = sizeof b->params;
    b->params.n_scalars = (uint32_t)b->scalars.n;
    b->params.scalars = b->scalars.v;
    b->params.error = b->msg;
    b->params.error_size = sizeof b->msg;
}

static const char *subject_name(const kg_bench *b)
{
    return b->who == KG_SUBJ_KERNEL ? b->job->kernel : b->path;
}

int kg_bench_launch(void *p, int set, kgate_stream s, kg_err *err)
{
    kg_bench *b = p;
    if (b->baseline)
        return b->baseline->launch(b->bctx, s, err);
    b->msg[0] = '\0';
    int rc = b->tunable ? b->tunable->launch(b->in[set], b->n_in, b->out[set], b->n_out, &b->params,
                                             b->job->config, s)
                        : b->kernel->launch(b->in[set], b->n_in, b->out[set], b->n_out, &b->params, s);
    if (rc) {
        b->msg[sizeof b->msg - 1] = '\0';
        return kg_err_set(err, KG_EXIT_FAIL, "kernel '%s' returned error %d%s%.400s", b->kernel->name,
                          rc, b->msg[0] ? ": " : "", b->msg);
    }
    return 0;
}

/* Frees one buffer and forgets it (kg_err_set keeps the first failure). */
static int free_ref(double **p, kg_err *err)
{
    double *q = *p;
    *p = NULL;
    KG_CUDA(cudaFree(q));
out:
    return err->code;
}

/* Frees the fp64 references, every one; err gets the first failure. */
int kg_bench_free_refs(kg_bench *b, kg_err *err)
{
    for (int s = 0; s < KG_BENCH_SETS; s++)
        for (int i = 0; i < KG_MAX_TENSORS; i++)
            if (b->ref[s][i])
                free_ref(&b->ref[s][i], err);
    return err->code;
}

void kg_bench_free(kg_bench *b)
{
    for (int s = 0; s < b->n_sets; s++) {
        for (int i = 0; i < b->n_in; i++)
            kg_tensor_free(&b->in[s][i]);
        for (int i = 0; i < b->n_out; i++)
            kg_tensor_free(&b->out[s][i]);
    }
    kg_err ignored = {0, ""};
    kg_bench_free_refs(b, &ignored);
}

int kg_bench_alloc(kg_bench *b, kg_err *err)
{
    int64_t ext[KG_MAX_RANK];
    const kg_op *op = b->op;
    b->n_in = op->n_inputs;
    b->n_out = op->n_outputs;
    for (int s = 0; s < b->n_sets; s++) {
        for (int i = 0; i < op->n_inputs; i++) {
            kg_tensor_extents(&op->in[i], &b->shape, ext);
            if (kg_tensor_alloc(&b->in[s][i], kg_tensor_dtype_of(&op->in[i], b->types),
                                op->in[i].rank, ext, err))
                return err->code;
            b->in[s][i].device.device_id = b->job->device;
        }
        for (int i = 0; i < op->n_outputs; i++) {
            kg_tensor_extents(&op->out[i], &b->shape, ext);
            if (kg_tensor_alloc(&b->out[s][i], kg_tensor_dtype_of(&op->out[i], b->types),
                                op->out[i].rank, ext, err))
                return err->code;
            b->out[s][i].device.device_id = b->job->device;
        }
    }
    for (int i = 0; i < op->n_outputs; i++)
        KG_CUDA(cudaMalloc((void **)&b->ref[0][i], sizeof(double) * (size_t)kg_tensor_numel(&b->out[0][i])));
    return 0;
out:
    return err->code;
}

/* Fresh inputs for a set, queued on stream s: index inputs uniform over
 * their range, input 0 from distribution `dist` (kg_dist), the other data
 * inputs uniform; deterministic in the seed. */
int kg_bench_fill_on(kg_bench *b, int set, unsigned long long seed, int dist, kgate_stream s, kg_err *err)
{
    const kg_op *op = b->op;
    int64_t rows, cols;
    if (b->problem) {
        char msg[600] = "";
        if (b->src->inputs(b->src->self, seed, b->in[set], b->n_in, s, msg, sizeof msg)) {
            msg[sizeof msg - 1] = '\0';
            return kg_err_set(err, KG_EXIT_CANDIDATE, "the problem's inputs: %s", msg[0] ? msg : "failed");
        }
        return 0;
    }
    kg_input0_matrix(op, &b->shape, &rows, &cols);
    for (int i = 0; i < op->n_inputs; i++) {
        unsigned long long sd = seed * 1000003ull + (unsigned long long)i;
        int rc = op->in[i].gen == KG_GEN_INDEX
                     ? kg_tensor_fill_index(&b->in[set][i], b->shape.d[op->in[i].range_dim], sd, s, err)
                     : kg_tensor_fill_dist(&b->in[set][i], i == 0 ? dist : KG_DIST_UNIFORM,
                                           op->in[i].lo, op->in[i].hi, i == 0 ? cols : 1, sd, s, err);
        if (rc)
            return err->code;
    }
    return 0;
}

static int fill_dist(kg_bench *b, int set, unsigned long long seed, int dist, kg_err *err)
{
    return kg_bench_fill_on(b, set, seed, dist, (kgate_stream)b->s, err);
}

int kg_bench_fill_inputs(kg_bench *b, int set, unsigned long long seed, kg_err *err)
{
    return fill_dist(b, set, seed, KG_DIST_UNIFORM, err);
}

static int plant_edges(kg_bench *b, kg_err *err)
{
    const kg_op *op = b->op;
    int64_t rows, cols;
    kg_input0_matrix(op, &b->shape, &rows, &cols);
    if (op->in[0].type == KG_T_DATA &&
        kg_tensor_plant_edges(&b->in[0][0], rows, cols, (kgate_stream)b->s, err))
        return err->code;
    for (int i = 0; i < op->n_inputs; i++)
        if (op->in[i].gen == KG_GEN_INDEX &&
            kg_tensor_plant_index_edges(&b->in[0][i], b->shape.d[op->in[i].range_dim],
                                        (kgate_stream)b->s, err))
            return err->code;
    return 0;
}

int kg_bench_prepare_on(kg_bench *b, int set, kgate_stream s, kg_err *err)
{
    const kg_op *op = b->op;
    int rc = op->prepare ? op->prepare(b->in[set], b->n_in, &b->shape, &b->params, s) : 0;
    if (rc)
        return kg_err_set(err, KG_EXIT_ENV, "%s: preparing its inputs failed: %s", op->name,
                          cudaGetErrorString((cudaError_t)rc));
    return 0;
}

int kg_bench_prepare_inputs(kg_bench *b, int set, kg_err *err)
{
    return kg_bench_prepare_on(b, set, (kgate_stream)b->s, err);
}

uint64_t kg_bench_inputs_checksum(kg_bench *b, int set, kg_err *err)
{
    uint64_t sum = 0, one;
    for (int i = 0; i < b->n_in; i++) {
        if (kg_tensor_checksum(&b->in[set][i], &one, (kgate_stream)b->s, err))
            return 0;
        sum = sum * 31 + one;
    }
    return sum;
}

/* Computes a set's fp64 references from its inputs. Called only after the
 * subject's call on that set: a kernel that searched device memory for
 * kgate's reference (cuMemGetAddressRange walks) and copied it into its
 * output would otherwise pass without computing anything. */
int kg_bench_compute_refs(kg_bench *b, int set, kg_err *err)
{
    if (b->problem) {
        char msg[600] = "";
        KG_CUDA(cudaDeviceSynchronize());
        if (b->src->reference(b->src->self, b->in[set], b->n_in, b->ref[set], b->n_out, (kgate_stream)b->s,
                              &b->ref_scale[set], msg, sizeof msg)) {
            msg[sizeof msg - 1] = '\0';
            return kg_err_set(err, KG_EXIT_CANDIDATE, "the problem's reference: %s", msg[0] ? msg : "failed");
        }
        if (!isfinite(b->ref_scale[set]) || b->ref_scale[set] < 0)
            b->ref_scale[set] = 0;
        return 0;
    out:
        return err->code;
    }
    int rc = b->op->reference(b->in[set], b->n_in, b->ref[set], &b->params, (kgate_stream)b->s);
    if (rc)
        return kg_err_set(err, KG_EXIT_ENV, "the %s reference failed: %s", b->op->name,
                          cudaGetErrorString(rc > 0 ? (cudaError_t)rc : cudaGetLastError()));
    return 0;
}

/* Overwrites a set's references with NaN once they have been compared, so
 * that the next call finds none. */
int kg_bench_hide_refs(kg_bench *b, int set, kg_err *err)
{
    for (int o = 0; o < b->n_out; o++)
        KG_CUDA(cudaMemsetAsync(b->ref[set][o], 0xFF,
                                sizeof(double) * (size_t)kg_tensor_numel(&b->out[set][o]), b->s));
out:
    return err->code;
}

/* Results returned rather than written (a provider's collect): fetched into
 * the output buffers of `set` outside any timed call, and before the inputs'
 * checksum and the references, since the provider runs in the candidate's
 * process: whatever it runs then can neither change the inputs unseen nor
 * meet a reference in memory. Results refused as wrong in kind leave their
 * reason in b->collect_msg for compare_outputs. */
int kg_bench_collect(kg_bench *b, int set, kg_err *err)
{
    b->collect_msg[0] = '\0';
    if (!(b->kernel && b->prov && b->prov->collect))
        return 0;
    char msg[400] = "";
    int rc = b->prov->collect(b->prov->self, b->kernel, b->out[set], b->n_out, (kgate_stream)b->s, msg, sizeof msg);
    msg[sizeof msg - 1] = '\0';
    if (rc == 1)
        snprintf(b->collect_msg, sizeof b->collect_msg, "%s", msg[0] ? msg : "wrong results");
    else if (rc)
        return kg_err_set(err, KG_EXIT_FAIL, "kernel '%s': %s", b->kernel->name,
                          msg[0] ? msg : "its results could not be fetched");
    /* the whole device, as after a call: the copies, and anything else */
    cudaError_t ce = cudaDeviceSynchronize();
    if (ce == cudaSuccess)
        ce = cudaGetLastError();
    if (ce != cudaSuccess)
        return kg_err_set(err, KG_EXIT_FAIL, "kernel '%s', collecting its results: %s (%s)", b->kernel->name,
                          cudaGetErrorString(ce), cudaGetErrorName(ce));
    return 0;
}

/* Compares every output of a set with its reference; *cmp gets the first
 * failing output's comparison (or the last one), *which its index. Results
 * that collect_outputs refused compare as wrong. */
int kg_bench_compare(kg_bench *b, int set, kg_cmp *cmp, int *which, kg_err *err)
{
    const kg_op *op = b->op;
    *which = 0;
    if (b->collect_msg[0]) {
        memset(cmp, 0, sizeof *cmp);
        cmp->rel_l2 = cmp->max_abs_err = NAN;
        return 0;
    }
    for (int o = 0; o < b->n_out; o++) {
        kg_cmp c;
        int rc;
        if (op->out[o].cmp == KG_CMP_ARG) {
            rc = kg_tensor_compare_arg(&b->out[set][o], &b->in[set][0], b->ref[set][o], &c,
                                       (kgate_stream)b->s, err);
        } else {
            kg_tol tol = kg_op_tol(op, kg_tensor_dtype(&b->out[set][o]));
            if (b->problem && !kg_dtype_is_int(kg_tensor_dtype(&b->out[set][o])))
                kg_tol_scale(&tol, b->ref_scale[set]); /* outputs of large sums (catalog/problem.h) */
            rc = kg_tensor_compare(&b->out[set][o], b->ref[set][o], &tol, &c, (kgate_stream)b->s, err);
            if (!rc && !c.pass && op->tol_rms && !b->problem && kg_cmp_ref_rms(&c) > 1) {
                /* long sums: the same comparison with atol on the reference's scale */
                kg_tol_scale(&tol, kg_cmp_ref_rms(&c));
                rc = kg_tensor_compare(&b->out[set][o], b->ref[set][o], &tol, &c, (kgate_stream)b->s, err);
            }
            if (!rc && b->who == KG_SUBJ_KERNEL && !(c.max_scaled_err <= b->max_scaled_err))
                b->max_scaled_err = c.max_scaled_err;
        }
        if (rc)
            return err->code;
        if (o == 0 || !c.pass) {
            *cmp = c;
            *which = o;
        }
        if (!c.pass)
            break;
    }
    return 0;
}

/* What a comparison found, or why returned results were refused. */
void kg_bench_describe_cmp(const kg_bench *b, const kg_cmp *cmp, char *d, size_t size)
{
    if (b->collect_msg[0])
        snprintf(d, size, "%s", b->collect_msg);
    else
        kg_cmp_describe(cmp, d, size);
}

/* Checks the guard regions of every tensor of a set: 1 (and desc) when a
 * write went out of bounds. */
int kg_bench_check_guards(kg_bench *b, int set, char *desc, size_t size, kg_err *err)
{
    for (int t = 0; t < b->n_in + b->n_out; t++) {
        const DLTensor *x = t < b->n_in ? &b->in[set][t] : &b->out[set][t - b->n_in];
        const kg_tensor_spec *sp = t < b->n_in ? &b->op->in[t] : &b->op->out[t - b->n_in];
        int64_t before = 0, after = 0;
        if (kg_tensor_guard_check(x, &before, &after, (kgate_stream)b->s, err))
            return -1;
        if (before || after) {
            snprintf(desc, size, "wrote out of bounds: %lld byte(s) changed %s %s %s", (long long)(before + after),
                     before ? "before" : "after", t < b->n_in ? "input" : "output", sp->name);
            return 1;
        }
    }
    return 0;
}

/* Runs the subject once on set 0 against a fresh reference and reports a
 * check event. Returns 0 when the check ran (*pass says how it went), else
 * the error (a crash of the subject is KG_EXIT_FAIL). */
int kg_bench_check_dist(kg_bench *b, const char *what, unsigned long long seed, int edge, int alt,
                      int dist, int *pass, char *desc, size_t desc_size, kg_err *err)
{
    uint64_t before, after;
    kg_cmp cmp;
    int which = 0;
    kg_bench_set_scalars(b, alt);
    if (fill_dist(b, 0, seed, dist, err))
        return err->code;
    if ((edge && plant_edges(b, err)) || kg_bench_prepare_inputs(b, 0, err))
        return err->code;
    before = kg_bench_inputs_checksum(b, 0, err);
    if (err->code)
        return err->code;
    for (int i = 0; i < b->n_out; i++)
        if (kg_tensor_poison(&b->out[0][i], (kgate_stream)b->s, err))
            return err->code;
    if (kg_bench_launch(b, 0, (kgate_stream)b->s, err))
        return err->code;
    {
        /* the whole device: work the subject left on another stream must
         * finish before its output is read and the reference is computed */
        cudaError_t rc = cudaDeviceSynchronize();
        if (rc == cudaSuccess)
            rc = cudaGetLastError();
        if (rc != cudaSuccess)
            return kg_err_set(err, KG_EXIT_FAIL, "%s, %s: %s (%s)", subject_name(b), what,
                              cudaGetErrorString(rc), cudaGetErrorName(rc));
    }
    if (kg_bench_collect(b, 0, err))
        return err->code;
    after = kg_bench_inputs_checksum(b, 0, err);
    if (err->code || kg_bench_compute_refs(b, 0, err) || kg_bench_compare(b, 0, &cmp, &which, err) ||
        kg_bench_hide_refs(b, 0, err))
        return err->code;
    int mutated = before != after;
    char d[800];
    kg_bench_describe_cmp(b, &cmp, d, sizeof d);
    if (b->n_out > 1 && !b->collect_msg[0])
        snprintf(desc, desc_size, "output %s: %s", b->op->out[which].name, d);
    else
        snprintf(desc, desc_size, "%s", d);
    if (mutated)
        snprintf(desc, desc_size, "the kernel modified its inputs");
    int oob = kg_bench_check_guards(b, 0, d, sizeof d, err);
    if (oob < 0)
        return err->code;
    if (oob) {
        cmp.pass = 0;
        snprintf(desc, desc_size, "%s", d);
    }
    if (alt) {
        size_t u = strlen(desc);
        for (int i = 0; i < b->scalars.n && u < desc_size; i++)
            if (b->scalars.v[i].value != b->job->scalars.v[i].value &&
                kg_op_scalar_extent(b->op, b->scalars.v[i].name) < 0) /* not a shape's stride */
                u += (size_t)snprintf(desc + u, desc_size - u, " [with %s = %g]",
                                      b->scalars.v[i].name, b->scalars.v[i].value);
    }
    *pass = cmp.pass && !mutated;
    kg_event e = kg_wev_subject(b, KG_EV_CHECK);
    snprintf(e.what, sizeof e.what, "%s", what);
    e.pass = *pass;
    e.rel_l2 = cmp.rel_l2;
    e.max_abs_err = cmp.max_abs_err;
    e.mutated = mutated;
    snprintf(e.text, sizeof e.text, "%s", desc);
    kg_wev_emit(&e);
    return 0;
}




/* Checks the kernel, without timing, at the job's extra shapes (unaligned,
 * tiny, unnamed): one random trial each, plus the edge rows where the shape
 * has room for them. A shape the kernel declares unsupported is counted and
 * skipped. Returns non-zero on an error; a wrong result is a fail event and
 * stops the subject (the caller sees b->failed). */
int kg_bench_check_extra_shapes(kg_bench *b, kg_err *err)
{
    const kg_job *j = b->job;
    int checked = 0, skipped = 0;
    for (int k = 0; k < j->n_extra && !b->failed; k++) {
        const kg_shape *sh = &j->extra[k];
        char txt[96], what[32], desc[1024];
        int pass = 0;
        kg_shape_format(sh, txt, sizeof txt);
        if (!b->extra_ok[k]) { /* asked before any call (ask_supports) */
            skipped++;
            continue;
        }
        kg_bench x;
        memset(&x, 0, sizeof x);
        x.job = j;
        x.op = b->op;
        x.types = b->types;
        x.shape = *sh;
        x.s = b->s;
        x.n_sets = 1;
        x.who = b->who;
        x.kernel = b->kernel;
        x.prov = b->prov;
        x.tunable = b->tunable;
        int rc = kg_bench_alloc(&x, err);
        for (int edge = 0; edge < 2 && !rc; edge++) {
            int64_t rows, cols;
            kg_input0_matrix(x.op, sh, &rows, &cols);
            if (edge && (!j->edge || rows < x.op->min_rows || x.op->in[0].type != KG_T_DATA))
                break;
            snprintf(what, sizeof what, "shape %.20s%s", txt, edge ? " edges" : "");
            rc = kg_bench_check_once(&x, what, j->seed + 31 * (unsigned long long)(k + 1), edge, 0, &pass, desc,
                            sizeof desc, err);
            if (!rc && !pass) {
                char m[1024];
                snprintf(m, sizeof m, "at the extra shape %.40s%s: %.900s", txt,
                         edge ? " (edge rows)" : "", desc);
                kg_wev_fail(b, "incorrect", m);
                b->failed = 1;
                break;
            }
        }
        kg_bench_free(&x);
        if (rc)
            return rc;
        checked++;
    }
    kg_wev_sum(b, "check/shapes", checked);
    kg_wev_sum(b, "check/shapes_skipped", skipped);
    return 0;
}

int kg_bench_check_once(kg_bench *b, const char *what, unsigned long long seed, int edge, int alt,
                      int *pass, char *desc, size_t desc_size, kg_err *err)
{
    return kg_bench_check_dist(b, what, seed, edge, alt, KG_DIST_UNIFORM, pass, desc, desc_size, err);
}
