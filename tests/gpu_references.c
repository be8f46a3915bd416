/* Every operator's GPU fp64 reference against its CPU fp64 reference, for
 * every dtype, at a small shape (each extent of the small preset, capped),
 * on random inputs and on the edge inputs kgate plants, at the default
 * scalars and, for random inputs, at the required scalars' second values
 * (attention's causal mask, eps 0.5, ...). Registry-driven: a
 * new operator is covered without touching this file. GPU test: exits 77
 * (skipped) where there is no GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "catalog/op.h"
#include "gpu/tensors.h"

#define CAP 384

static int close_d(double g, double c)
{
    if (isnan(c) || isnan(g))
        return isnan(c) && isnan(g);
    if (isinf(c) || isinf(g))
        return g == c;
    return fabs(g - c) <= 1e-9 * fmax(1.0, fabs(c));
}

/* One operator, dtype, edges or not, default or alt scalars: 0 when the
 * references agree. */
static int one(const kg_op *op, kg_dtype dt, int edge, int alt, unsigned long long seed)
{
    kg_shape s = kg_preset_find(op, "small")->shape;
    kg_types ty = {dt, KG_I64};
    DLTensor in[KG_MAX_TENSORS], out[KG_MAX_TENSORS];
    double *din[KG_MAX_TENSORS] = {0}, *hin[KG_MAX_TENSORS] = {0}, *gref[KG_MAX_TENSORS] = {0};
    double *cref[KG_MAX_TENSORS] = {0}, *dref[KG_MAX_TENSORS] = {0};
    int64_t ext[KG_MAX_RANK], n;
    kg_err err = {0, ""};
    kg_scalars def, sc;
    kgate_params p;
    int bad = 0;
    memset(in, 0, sizeof in);
    memset(out, 0, sizeof out);
    for (int d = 0; d < s.n; d++)
        s.d[d] = s.d[d] > CAP ? CAP : s.d[d];
    if (op->check_shape) { /* capping may have broken the operator's own rule */
        char why[300];
        op->check_shape(op, &s, 1, why, sizeof why);
    }
    kg_scalars_default(op, &def);
    kg_scalars_for_trial(op, &def, alt, &sc);
    kg_scalars_bind(op, &s, &sc); /* a convolution's stride and padding come from the shape */
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.n_scalars = (uint32_t)sc.n;
    p.scalars = sc.v;
    for (int i = 0; i < op->n_inputs; i++) {
        n = kg_tensor_extents(&op->in[i], &s, ext);
        if (kg_tensor_alloc(&in[i], kg_tensor_dtype_of(&op->in[i], ty), op->in[i].rank, ext, &err))
            goto fail;
        int rc = op->in[i].gen == KG_GEN_INDEX
                     ? kg_tensor_fill_index(&in[i], s.d[op->in[i].range_dim], seed + (unsigned)i, NULL, &err)
                     : kg_tensor_fill_uniform(&in[i], op->in[i].lo, op->in[i].hi, seed + (unsigned)i, NULL, &err);
        if (rc)
            goto fail;
        hin[i] = malloc(sizeof(double) * (size_t)n);
        (void)din;
    }
    if (edge) {
        int64_t rows, cols;
        kg_input0_matrix(op, &s, &rows, &cols);
        if (op->in[0].type == KG_T_DATA && rows >= op->min_rows &&
            kg_tensor_plant_edges(&in[0], rows, cols, NULL, &err))
            goto fail;
        for (int i = 0; i < op->n_inputs; i++)
            if (op->in[i].gen == KG_GEN_INDEX &&
                kg_tensor_plant_index_edges(&in[i], s.d[op->in[i].range_dim], NULL, &err))
                goto fail;
    }
    if (op->prepare && op->prepare(in, op->n_inputs, &s, &p, NULL)) {
        kg_err_set(&err, KG_EXIT_ENV, "the prepare hook failed");
        goto fail;
    }
    for (int o = 0; o < op->n_outputs; o++) {
        n = kg_tensor_extents(&op->out[o], &s, ext);
        if (cudaMalloc((void **)&dref[o], sizeof(double) * (size_t)n) != cudaSuccess) {
            kg_err_set(&err, KG_EXIT_ENV, "cudaMalloc");
            goto fail;
        }
        gref[o] = malloc(sizeof(double) * (size_t)n);
        cref[o] = malloc(sizeof(double) * (size_t)n);
    }
    if (op->reference(in, op->n_inputs, dref, &p, NULL) || cudaDeviceSynchronize() != cudaSuccess) {
        kg_err_set(&err, KG_EXIT_ENV, "the GPU reference failed: %s", cudaGetErrorString(cudaGetLastError()));
        goto fail;
    }
    for (int i = 0; i < op->n_inputs; i++)
        if (kg_tensor_to_host(&in[i], hin[i], &err))
            goto fail;
    for (int o = 0; o < op->n_outputs; o++) {
        n = kg_tensor_extents(&op->out[o], &s, ext);
        if (cudaMemcpy(gref[o], dref[o], sizeof(double) * (size_t)n, cudaMemcpyDeviceToHost) != cudaSuccess) {
            kg_err_set(&err, KG_EXIT_ENV, "cudaMemcpy");
            goto fail;
        }
    }
    op->cpu_reference((const double *const *)hin, &s, &p, cref);
    for (int o = 0; o < op->n_outputs && !bad; o++) {
        n = kg_tensor_extents(&op->out[o], &s, ext);
        for (int64_t e = 0; e < n; e++)
            if (!close_d(gref[o][e], cref[o][e])) {
                char sh[96];
                printf("FAIL: %s %s%s%s at %s: output %s[%lld]: GPU %.17g, CPU %.17g\n", op->name,
                       kg_dtype_name(dt), edge ? " (edges)" : "", alt ? " (alt scalars)" : "",
                       kg_shape_format(&s, sh, sizeof sh),
                       op->out[o].name, (long long)e, gref[o][e], cref[o][e]);
                bad = 1;
                break;
            }
    }
    goto done;
fail:
    printf("FAIL: %s %s%s%s: %s\n", op->name, kg_dtype_name(dt), edge ? " (edges)" : "",
           alt ? " (alt scalars)" : "", err.msg);
    bad = 1;
done:
    for (int i = 0; i < KG_MAX_TENSORS; i++) {
        if (in[i].data)
            kg_tensor_free(&in[i]);
        free(hin[i]);
        free(gref[i]);
        free(cref[i]);
        if (dref[i])
            cudaFree(dref[i]);
    }
    cudaGetLastError();
    return bad;
}

int main(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        printf("SKIP: no CUDA GPU here\n");
        return 77;
    }
    int fails = 0, total = 0;
    for (int i = 0; kg_ops[i]; i++) {
        int has_alt = 0;
        for (int k = 0; k < kg_ops[i]->n_scalars; k++)
            has_alt |= kg_ops[i]->scalars[k].required && !isnan(kg_ops[i]->scalars[k].alt);
        for (int d = 0; d < kg_ops[i]->n_dtypes; d++)
            for (int trial = 0; trial < 2 + has_alt; trial++) {
                /* random, edges, then random at the alt scalars */
                int edge = trial == 1, alt = trial == 2;
                total++;
                int bad = one(kg_ops[i], kg_ops[i]->dtypes[d], edge, alt, 1234 + (unsigned)i * 7 + (unsigned)d);
                fails += bad;
                if (!bad)
                    printf("ok: %s %s%s%s\n", kg_ops[i]->name, kg_dtype_name(kg_ops[i]->dtypes[d]),
                           edge ? " (edges)" : "", alt ? " (alt scalars)" : "");
            }
    }
    printf("%d passed, %d failed\n", total - fails, fails);
    return fails ? 1 : 0;
}
