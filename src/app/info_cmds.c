/* The commands that say what is there: kgate devices (the GPUs), peaks
 * (a GPU's roofs, measured), ops (the catalog's operators) and --version. */
#include "commands.h"
#include "cmds_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../base/text.h"
#include "../catalog/arch.h"
#include "../catalog/roofs_io.h"
#include "../gpu/baseline.h"
#include "kgate_build.h"

const char *kg_version(void) { return KG_VERSION " (commit " KG_COMMIT ")"; }

/* What this build has for a GPU (kgate devices): SASS or PTX it JIT-compiles,
 * or none (kgate refuses it), and the bundled variants it cannot run. */
static void device_code(const kg_device_info *d)
{
    char what[32], why[1024];
    const int cc = d->cc_major * 10 + d->cc_minor;
    kg_code c = kg_arch_code(kg_arch_build(), cc, what, sizeof what);
    if (c == KG_CODE_NONE) {
        printf("   code: none for sm_%d: kgate refuses this GPU\n", cc);
        return;
    }
    printf("   code: %s %s%s\n", c == KG_CODE_SASS ? "SASS" : "PTX", what,
           c == KG_CODE_PTX ? " (compiled by the driver at first use)" : "");
    kg_arch_unavailable_text(cc, kg_arch_build(), why, sizeof why);
    printf("   bundled variants: %s%s\n", why[0] ? "not here: " : "all run here", why);
}

int kg_cmd_devices(const kg_options *o)
{
    kg_err err = {0, ""};
    int n;
    char list[512];
    if (kg_device_count(&n, &err))
        return kg_cmds_fail(&err);
    printf("this build: %s (KG_CUDA_ARCHS)\n", kg_arch_list_text(kg_arch_build(), list, sizeof list));
    for (int i = 0; i < n; i++) {
        kg_device_info d;
        if (kg_device_query(i, &d, &err))
            return kg_cmds_fail(&err);
        printf("%d  %s  %s  sm_%d%d  %d SMs  %.0f GiB  L2 %.0f MB  SM clock max %.0f MHz  "
               "driver %d.%d  runtime %d.%d\n",
               i, d.name, d.uuid, d.cc_major, d.cc_minor, d.sm_count, d.mem_bytes / (1 << 30),
               d.l2_bytes / 1e6, d.sm_clock_max_mhz, d.driver_version / 1000,
               (d.driver_version % 1000) / 10, d.runtime_version / 1000,
               (d.runtime_version % 1000) / 10);
        if (d.nvml)
            printf("   NVML: driver %s, SM clock now %.0f MHz, %u C, %.0f W\n", d.nvml_driver,
                   d.sm_clock_now_mhz, d.temp_c, d.power_w);
        else
            printf("   NVML: not available (libnvidia-ml.so.1 did not load)\n");
        device_code(&d);
    }
    (void)o;
    return 0;
}

int kg_cmd_peaks(const kg_options *o)
{
    kg_err err = {0, ""};
    kg_device_info d;
    kg_peaks pk;
    kg_roofs roofs, ds;
    char path[4096], date[32];
    if ((o->json && kg_output_path_check("--json", o->json, NULL, 0, &err)) || kg_cmds_open_device(o, &d, &err))
        return kg_cmds_fail(&err);
    kg_roofs_datasheet(d.name, d.mem_clock_khz, d.bus_bits, &ds);
    kg_gpu_lock l;
    kg_cmds_gpu_lock_for(o, d.uuid);
    if (kg_cmds_gpu_take(&l, &err))
        return kg_cmds_fail(&err);
    int others = kg_cmds_measure_roofs_alone(&d, &pk, &roofs, &err);
    if (kg_cmds_context_done(&l, &err)) /* a failure above, or the reset's */
        return kg_cmds_fail(&err);
    if (others > 0) {
        kg_err_set(&err, KG_EXIT_ENV,
                   "the roofs were measured while %d other process(es) held a context on %s: not kept "
                   "(measure them with the GPU to kgate alone)",
                   others, d.uuid);
        return kg_cmds_fail(&err);
    }
    if (kg_roofs_cache_path(d.uuid, path, sizeof path, &err) ||
        kg_roofs_save(path, &roofs, d.uuid, d.name, &err))
        return kg_cmds_fail(&err);
    printf("%s (%s)\n", d.name, d.uuid);
    printf("%-42s %9s %12s\n", "bandwidth kernel (gpu/peaks.cu)", "MB/stream", "GB/s");
    for (int i = 0; i < pk.n_variants; i++)
        printf("%-42s %9.0f %12.1f%s\n", pk.variants[i].name, pk.variants[i].stream_bytes / 1e6,
               pk.variants[i].bw / 1e9, pk.variants[i].cold ? "  cold" : "");
    printf("L2 write credit: %.1f MB (cold calls of 4x L2 beyond the DRAM rate: write %.1f, copy %.1f, "
           "triad %.1f MB)\n\n", pk.l2_credit / 1e6, pk.credit[0] / 1e6, pk.credit[1] / 1e6, pk.credit[2] / 1e6);
    printf("%-30s %14s %14s %8s\n", "roof", "measured", "datasheet", "ratio");
    const struct {
        const char *name;
        double v;
    } bw[] = {{"DRAM copy kernel (r+w)", pk.copy_kernel_bw},
              {"DRAM cudaMemcpy D2D (r+w)", pk.memcpy_bw},
              {"DRAM read-only stream", pk.read_bw},
              {"DRAM write-only stream", pk.write_bw},
              {"DRAM triad (2 reads a write)", pk.triad_bw}};
    for (int i = 0; i < 5; i++)
        printf("%-30s %11.2f TB/s %11.2f TB/s %7.1f%%\n", bw[i].name, bw[i].v / 1e12, ds.bw / 1e12,
               100 * bw[i].v / ds.bw);
    const char *nm[3] = {"fp16 tensor (cuBLASLt 8192^3)", "bf16 tensor (cuBLASLt 8192^3)",
                         "tf32 tensor (cuBLASLt 8192^3)"};
    const kg_dtype dts[3] = {KG_FP16, KG_BF16, KG_FP32};
    for (int i = 0; i < 3; i++)
        printf("%-30s %8.0f TFLOP/s %8.0f TFLOP/s %7.1f%%\n", nm[i], pk.mma[dts[i]] / 1e12,
               ds.mma[dts[i]] / 1e12, ds.mma[dts[i]] > 0 ? 100 * pk.mma[dts[i]] / ds.mma[dts[i]] : 0);
    printf("roofs: copy %.2f, read %.2f, write %.2f, triad %.2f TB/s, L2 write credit %.1f MB; cached in %s\n",
           roofs.bw / 1e12, roofs.bw_read / 1e12, roofs.bw_write / 1e12, roofs.bw_triad / 1e12,
           roofs.l2_credit / 1e6, path);
    if (o->json) {
        cJSON *root = cJSON_CreateObject(), *m, *dsj;
        kg_cmds_iso_now(date, sizeof date);
        cJSON_AddStringToObject(root, "schema", "kgate.peaks/3");
        cJSON_AddStringToObject(root, "command", o->cmdline);
        cJSON_AddStringToObject(root, "commit", KG_COMMIT);
        cJSON_AddStringToObject(root, "date", date);
        cJSON *dev = cJSON_AddObjectToObject(root, "device");
        cJSON_AddStringToObject(dev, "name", d.name);
        cJSON_AddStringToObject(dev, "uuid", d.uuid);
        cJSON_AddStringToObject(dev, "driver", d.nvml_driver);
        m = cJSON_AddObjectToObject(root, "measured");
        cJSON_AddNumberToObject(m, "copy_kernel_bandwidth", pk.copy_kernel_bw);
        cJSON_AddNumberToObject(m, "memcpy_bandwidth", pk.memcpy_bw);
        cJSON_AddNumberToObject(m, "read_bandwidth", pk.read_bw);
        cJSON_AddNumberToObject(m, "write_bandwidth", pk.write_bw);
        cJSON_AddNumberToObject(m, "triad_bandwidth", pk.triad_bw);
        cJSON_AddNumberToObject(m, "l2_write_credit", pk.l2_credit);
        cJSON_AddNumberToObject(m, "write_credit", pk.credit[0]);
        cJSON_AddNumberToObject(m, "copy_credit", pk.credit[1]);
        cJSON_AddNumberToObject(m, "triad_credit", pk.credit[2]);
        cJSON_AddNumberToObject(m, "bytes_per_copy", pk.copy_bytes);
        cJSON_AddNumberToObject(m, "fp16_flops", pk.mma[KG_FP16]);
        cJSON_AddNumberToObject(m, "bf16_flops", pk.mma[KG_BF16]);
        cJSON_AddNumberToObject(m, "tf32_flops", pk.mma[KG_FP32]);
        cJSON *vs = cJSON_AddArrayToObject(root, "variants");
        for (int i = 0; i < pk.n_variants; i++) {
            cJSON *v = cJSON_CreateObject();
            cJSON_AddStringToObject(v, "name", pk.variants[i].name);
            cJSON_AddStringToObject(v, "mix", pk.variants[i].mix);
            cJSON_AddNumberToObject(v, "stream_bytes", pk.variants[i].stream_bytes);
            cJSON_AddNumberToObject(v, "bandwidth", pk.variants[i].bw);
            cJSON_AddBoolToObject(v, "cold", pk.variants[i].cold);
            cJSON_AddItemToArray(vs, v);
        }
        dsj = cJSON_AddObjectToObject(root, "datasheet");
        cJSON_AddNumberToObject(dsj, "bandwidth", ds.bw);
        cJSON_AddNumberToObject(dsj, "fp16_flops", ds.mma[KG_FP16]);
        cJSON_AddNumberToObject(dsj, "bf16_flops", ds.mma[KG_BF16]);
        cJSON_AddNumberToObject(dsj, "tf32_flops", ds.mma[KG_FP32]);
        kg_json_clean(root); /* base/text.h */
        char *text = cJSON_Print(root);
        cJSON_Delete(root);
        int bad = !text ? kg_err_set(&err, KG_EXIT_IO, "cannot serialize the peaks")
                        : kg_write_file_atomic(o->json, text, &err);
        free(text);
        if (bad)
            return kg_cmds_fail(&err);
    }
    return 0;
}

int kg_cmd_ops(const kg_options *o)
{
    for (int i = 0; kg_ops[i]; i++) {
        const kg_op *op = kg_ops[i];
        if (o->op && o->op != op)
            continue;
        printf("%s: %s [%s]\n", op->name, op->summary, kg_family_name(op->family));
        printf("  dtypes:");
        for (int k = 0; k < op->n_dtypes; k++)
            printf(" %s%s", kg_dtype_name(op->dtypes[k]), k < kg_op_suite_dtypes(op) ? "*" : "");
        printf("   (* measured by kgate run)\n  signature: (");
        for (int k = 0; k < op->n_inputs + op->n_outputs; k++) {
            const kg_tensor_spec *t = k < op->n_inputs ? &op->in[k] : &op->out[k - op->n_inputs];
            const char *ty = t->type == KG_T_DATA ? "" : t->type == KG_T_INDEX ? ":index" : ":int64";
            printf("%s%s[", k == op->n_inputs ? ") -> (" : k ? ", " : "", t->name);
            for (int r = 0; r < t->rank && !t->derive; r++) {
                char dn[32];
                printf("%s%s", r ? "," : "", kg_op_dim_name(op, t->dim[r], dn, sizeof dn));
            }
            if (t->derive)
                printf("%s", t->derived_names ? t->derived_names : "derived");
            printf("]%s", ty);
        }
        printf(")   extents %s\n", op->dims);
        if (op->n_scalars) {
            printf("  scalars:");
            for (int k = 0; k < op->n_scalars; k++) {
                const kg_scalar_spec *sp = &op->scalars[k];
                if (kg_op_scalar_extent(op, sp->name) >= 0) {
                    char dn[32];
                    printf(" %s (extent %s of the shape%s)", sp->name,
                           kg_op_dim_name(op, kg_op_scalar_extent(op, sp->name), dn, sizeof dn),
                           sp->required ? ", required" : "");
                    continue;
                }
                printf(" %s=%g%s", sp->name, sp->def, sp->required ? " (required" : "");
                if (sp->required)
                    printf(isnan(sp->alt) ? ")" : ", one trial uses %g)", sp->alt);
            }
            printf("\n");
        }
        printf("  presets:");
        for (int k = 0; k < op->n_presets; k++) {
            char b[96];
            printf(" %s=%s", op->presets[k].name, kg_shape_format(&op->presets[k].shape, b, sizeof b));
        }
        const kg_preset *large = kg_preset_find(op, "large");
        const kg_shape *ws = large ? &large->shape : &op->presets[0].shape;
        kg_work w;
        kg_types ty = {op->dtypes[0], KG_I64};
        kg_tol t = kg_op_tol(op, op->dtypes[0]);
        kg_op_work(op, ws, ty, &w);
        int fp32_cores = 0; /* a tensor-core operator's fp32 runs on the CUDA cores (kg_roof_unit) */
        for (int d = 0; d < op->n_dtypes; d++)
            fp32_cores |= op->unit == KG_UNIT_TENSOR && kg_roof_unit(op->unit, op->dtypes[d]) == KG_UNIT_FP32;
        printf("\n  work at %s %s: %.4g bytes read, %.4g written, %.4g FLOPs (%s roof%s)\n",
               large ? "large" : op->presets[0].name, kg_dtype_name(op->dtypes[0]), w.bytes_read,
               w.bytes_written, w.flops, op->unit == KG_UNIT_TENSOR ? "tensor-core" : "CUDA-core fp32",
               fp32_cores ? "; fp32 on the CUDA-core roof: TF32 fails its tolerance" : "");
        printf("  tolerance (%s): atol = rtol = rel-L2 bound = %g%s%s\n", kg_dtype_name(op->dtypes[0]),
               t.atol, op->reduction ? " (doubled: a reduction)"
                       : op->tol_rounded ? " (doubled: the library rounds intermediates)" : "",
               op->tol_rms ? "; long sums: atol times the reference's RMS where that exceeds 1" : "");
        printf("  checked on: uniform inputs");
        for (int d = 1; d < KG_DIST_COUNT; d++)
            if (op->dists & (1u << d))
                printf(", %s", kg_dist_name((kg_dist)d));
        printf(" (one trial each)\n");
        printf("  library paths:");
        if (!op->baselines[0])
            printf(" none (%s)", op->no_baseline_why ? op->no_baseline_why : "no vendor library does this");
        for (int k = 0; k < KG_MAX_BASELINES && op->baselines[k]; k++) {
            const kg_baseline *bl = kg_baseline_find(op->baselines[k]);
            printf(" %s", op->baselines[k]);
            for (int d = 0; bl && bl->dtypes && d < KG_DTYPE_COUNT; d++)
                if (bl->dtypes & (1u << d))
                    printf("%s%s", bl->dtypes & ((1u << d) - 1) ? "," : " (", kg_dtype_name((kg_dtype)d));
            if (bl && bl->dtypes)
                printf(" only)");
        }
        printf("; bundled fast variant %s_%s\n", op->name, op->fast ? op->fast : "(none)");
        printf("  edge cases: %s\n\n", op->edge_semantics);
    }
    return 0;
}
