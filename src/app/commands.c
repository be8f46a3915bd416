/* Command orchestration: devices, peaks, ops, check and run. */
#include "commands.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "../core/job.h"
#include "../gpu/baseline.h"
#include "../core/report.h"
#include "../core/roofs_io.h"
#include "../gpu/device.h"
#include "kgate_build.h"

const char *kg_version(void) { return KG_VERSION " (commit " KG_COMMIT ")"; }

static int fail(const kg_err *e)
{
    fprintf(stderr, "kgate: %s\n", e->msg);
    return e->code ? e->code : KG_EXIT_ENV;
}

static void iso_now(char *buf, size_t size)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int progress_on(void) { return isatty(2); }

/* A path below the working directory, made relative to it (reports then
 * name no machine's directories). */
static const char *relative(const char *path)
{
    static char cwd[PATH_MAX];
    if (!cwd[0] && !getcwd(cwd, sizeof cwd))
        return path;
    size_t n = strlen(cwd);
    if (strncmp(path, cwd, n) == 0 && path[n] == '/')
        return path + n + 1;
    return path;
}

int kg_cmd_devices(const kg_options *o)
{
    kg_err err = {0, ""};
    int n;
    if (kg_device_count(&n, &err))
        return fail(&err);
    for (int i = 0; i < n; i++) {
        kg_device_info d;
        if (kg_device_query(i, &d, &err))
            return fail(&err);
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
    }
    (void)o;
    return 0;
}

/* Roofs for rho: cached measured ones (measuring them when absent), or the
 * datasheet's with --roof datasheet. */
static int get_roofs(const kg_options *o, const kg_device_info *d, kg_roofs *roofs, kg_err *err)
{
    kg_roofs ds;
    kg_roofs_datasheet(d->name, d->mem_clock_khz, d->bus_bits, &ds);
    if (strcmp(o->roof, "datasheet") == 0) {
        *roofs = ds;
        return 0;
    }
    char path[4096];
    if (kg_roofs_cache_path(d->uuid, path, sizeof path, err))
        return err->code;
    int rc = kg_roofs_load(path, roofs, err);
    if (rc > 1)
        return rc;
    if (rc == 1 || o->force) {
        kg_peaks pk;
        if (progress_on())
            fprintf(stderr, "kgate: measuring the roofs of %s (once per GPU)...\n", d->name);
        if (kg_peaks_measure(&pk, roofs, err) || kg_roofs_save(path, roofs, d->uuid, d->name, err))
            return err->code;
    }
    roofs->fp32 = ds.fp32; /* CUDA-core fp32 is not measured: datasheet */
    return 0;
}

static int open_device(const kg_options *o, kg_device_info *d, kg_err *err)
{
    int n;
    if (kg_device_count(&n, err))
        return err->code;
    if (o->device >= n)
        return kg_err_set(err, KG_EXIT_USAGE, "--device %d: only %d device(s)", o->device, n);
    if (cudaSetDevice(o->device) != cudaSuccess)
        return kg_err_set(err, KG_EXIT_ENV, "cudaSetDevice(%d) failed", o->device);
    return kg_device_query(o->device, d, err);
}

static void report_header(kg_report *rep, const kg_options *o, const kg_device_info *d)
{
    snprintf(rep->command, sizeof rep->command, "%s", o->cmdline);
    snprintf(rep->commit, sizeof rep->commit, "%s", KG_COMMIT);
    iso_now(rep->date, sizeof rep->date);
    snprintf(rep->device, sizeof rep->device, "%s", d->name);
    snprintf(rep->device_uuid, sizeof rep->device_uuid, "%s", d->uuid);
    snprintf(rep->driver, sizeof rep->driver, "%s", d->nvml_driver);
    rep->sm_count = d->sm_count;
    rep->cc_major = d->cc_major;
    rep->cc_minor = d->cc_minor;
    rep->gate = o->gate;
}

int kg_cmd_peaks(const kg_options *o)
{
    kg_err err = {0, ""};
    kg_device_info d;
    kg_peaks pk;
    kg_roofs roofs, ds;
    char path[4096], date[32];
    if (open_device(o, &d, &err))
        return fail(&err);
    kg_roofs_datasheet(d.name, d.mem_clock_khz, d.bus_bits, &ds);
    if (kg_peaks_measure(&pk, &roofs, &err))
        return fail(&err);
    if (kg_roofs_cache_path(d.uuid, path, sizeof path, &err) ||
        kg_roofs_save(path, &roofs, d.uuid, d.name, &err))
        return fail(&err);
    printf("%s (%s)\n", d.name, d.uuid);
    printf("%-28s %14s %14s %8s\n", "roof", "measured", "datasheet", "ratio");
    printf("%-28s %11.2f TB/s %11.2f TB/s %7.1f%%\n", "DRAM copy kernel (r+w)", pk.copy_kernel_bw / 1e12,
           ds.bw / 1e12, 100 * pk.copy_kernel_bw / ds.bw);
    printf("%-28s %11.2f TB/s %11.2f TB/s %7.1f%%\n", "DRAM cudaMemcpy D2D (r+w)", pk.memcpy_bw / 1e12,
           ds.bw / 1e12, 100 * pk.memcpy_bw / ds.bw);
    const char *nm[3] = {"fp16 tensor (cuBLASLt 8192^3)", "bf16 tensor (cuBLASLt 8192^3)",
                         "tf32 tensor (cuBLASLt 8192^3)"};
    const kg_dtype dts[3] = {KG_FP16, KG_BF16, KG_FP32};
    for (int i = 0; i < 3; i++)
        printf("%-28s %8.0f TFLOP/s %8.0f TFLOP/s %7.1f%%\n", nm[i], pk.mma[dts[i]] / 1e12,
               ds.mma[dts[i]] / 1e12, ds.mma[dts[i]] > 0 ? 100 * pk.mma[dts[i]] / ds.mma[dts[i]] : 0);
    printf("cached in %s\n", path);
    if (o->json) {
        cJSON *root = cJSON_CreateObject(), *m, *dsj;
        iso_now(date, sizeof date);
        cJSON_AddStringToObject(root, "schema", "kgate.peaks/1");
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
        cJSON_AddNumberToObject(m, "bytes_per_copy", pk.copy_bytes);
        cJSON_AddNumberToObject(m, "fp16_flops", pk.mma[KG_FP16]);
        cJSON_AddNumberToObject(m, "bf16_flops", pk.mma[KG_BF16]);
        cJSON_AddNumberToObject(m, "tf32_flops", pk.mma[KG_FP32]);
        dsj = cJSON_AddObjectToObject(root, "datasheet");
        cJSON_AddNumberToObject(dsj, "bandwidth", ds.bw);
        cJSON_AddNumberToObject(dsj, "fp16_flops", ds.mma[KG_FP16]);
        cJSON_AddNumberToObject(dsj, "bf16_flops", ds.mma[KG_BF16]);
        cJSON_AddNumberToObject(dsj, "tf32_flops", ds.mma[KG_FP32]);
        char *text = cJSON_Print(root);
        cJSON_Delete(root);
        int bad = !text ? kg_err_set(&err, KG_EXIT_IO, "cannot serialize the peaks")
                        : kg_write_file_atomic(o->json, text, &err);
        free(text);
        if (bad)
            return fail(&err);
    }
    return 0;
}

int kg_cmd_ops(const kg_options *o)
{
    (void)o;
    for (int i = 0; kg_ops[i]; i++) {
        const kg_op *op = kg_ops[i];
        printf("%s: %s\n", op->name, op->summary);
        printf("  dtypes:");
        for (int k = 0; k < op->n_dtypes; k++)
            printf(" %s", kg_dtype_name(op->dtypes[k]));
        printf("\n  signature: (");
        for (int k = 0; k < op->n_inputs; k++)
            printf("%s%s", k ? ", " : "", op->in[k].name);
        printf(") -> (");
        for (int k = 0; k < op->n_outputs; k++)
            printf("%s%s", k ? ", " : "", op->out[k].name);
        printf(")   shape %s\n  presets:", op->dims);
        for (int k = 0; k < op->n_presets; k++) {
            char b[64];
            printf(" %s=%s", op->presets[k].name, kg_shape_format(&op->presets[k].shape, b, sizeof b));
        }
        kg_work w;
        kg_tol t = kg_tol_for(op->dtypes[0], op->reduction);
        op->work(&op->presets[op->n_presets > 2 ? 2 : 0].shape, op->dtypes[0], &w);
        printf("\n  work at %s %s: %.3g bytes, %.3g FLOPs (%s roof)\n", op->presets[op->n_presets > 2 ? 2 : 0].name,
               kg_dtype_name(op->dtypes[0]), w.bytes, w.flops,
               op->unit == KG_UNIT_TENSOR ? "tensor-core" : "CUDA-core fp32");
        printf("  tolerance (%s): atol = rtol = rel-L2 bound = %g\n", kg_dtype_name(op->dtypes[0]), t.atol);
        printf("  baseline: %s%s%s\n", op->baseline->name, op->fallback ? "; fallback " : "",
               op->fallback ? op->fallback : "");
        printf("  edge cases: %s\n\n", op->edge_semantics);
    }
    return 0;
}

/* One kernel to judge: where it lives, and its catalog identity. */
typedef struct target {
    char plugin[PATH_MAX];
    char kernel[96];
    const kg_op *op;
    kg_dtype dtype;
} target;

/* Lists the kernels of a candidate that match the options (validating it in a worker). */
static int collect(const kg_options *o, const char *exe, const char *spec, target *out, int cap,
                   int *n, kg_err *err)
{
    char path[PATH_MAX], want[96] = "";
    snprintf(path, sizeof path, "%s", spec);
    char *colon = strrchr(path, ':');
    if (colon && !strchr(colon, '/')) {
        snprintf(want, sizeof want, "%s", colon + 1);
        *colon = '\0';
    }
    if (access(path, R_OK) != 0)
        return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: no such readable file", path);
    kg_job_spec js;
    memset(&js, 0, sizeof js);
    js.exe = exe;
    js.plugin = path;
    js.list = 1;
    js.timeout_s = 60;
    cJSON *table = NULL;
    if (kg_job_run(&js, NULL, NULL, &table, err))
        return err->code;
    if (!table)
        return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: the worker returned no kernel table", path);
    const cJSON *k;
    int found = 0;
    cJSON_ArrayForEach(k, table)
    {
        const char *name = cJSON_GetObjectItem(k, "name")->valuestring;
        const kg_op *op = kg_op_find(cJSON_GetObjectItem(k, "op")->valuestring);
        kg_dtype dt;
        kg_dtype_parse(cJSON_GetObjectItem(k, "dtype")->valuestring, &dt);
        if (want[0] && strcmp(want, name) != 0)
            continue;
        found++;
        if ((o->op && o->op != op) || (o->have_dtype && o->dtype != dt))
            continue;
        if (*n == cap)
            break;
        target *t = &out[(*n)++];
        snprintf(t->plugin, sizeof t->plugin, "%s", path);
        snprintf(t->kernel, sizeof t->kernel, "%s", name);
        t->op = op;
        t->dtype = dt;
    }
    cJSON_Delete(table);
    if (want[0] && !found)
        return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: no kernel named '%s'", path, want);
    return 0;
}

#define MAX_TARGETS 64

/* Checks every target at every shape; results go to rep in order. */
static int judge_all(const kg_options *o, const char *exe, target *tg, int nt, kg_report *rep,
                     kg_err *err)
{
    const char *shapes[KG_MAX_SHAPES] = {"large"};
    int ns = o->n_shapes ? o->n_shapes : 1;
    if (o->n_shapes)
        memcpy(shapes, o->shape_texts, sizeof(char *) * (size_t)ns);
    int total = nt * ns, done = 0;
    for (int si = 0; si < ns; si++) {
        /* group by operator and dtype: one baseline each */
        for (int i = 0; i < nt; i++) {
            int first = 1;
            for (int k = 0; k < i; k++)
                first &= !(tg[k].op == tg[i].op && tg[k].dtype == tg[i].dtype);
            if (!first)
                continue;
            kg_shape shape;
            kg_err serr = {0, ""};
            if (kg_shape_parse(tg[i].op, shapes[si], &shape, &serr))
                continue; /* this shape names no extent of this operator */
            kg_libref lib;
            memset(&lib, 0, sizeof lib);
            int naive_index = -1;
            for (int k = i; k < nt; k++) {
                if (tg[k].op != tg[i].op || tg[k].dtype != tg[i].dtype)
                    continue;
                kg_job_spec js;
                kg_result r;
                char shp[64];
                memset(&js, 0, sizeof js);
                memset(&r, 0, sizeof r);
                js.exe = exe;
                js.plugin = tg[k].plugin;
                js.kernel = tg[k].kernel;
                js.op = tg[k].op;
                js.dtype = tg[k].dtype;
                js.shape = shape;
                js.baseline = !lib.have;
                js.hot = o->hot;
                js.memset_flush = o->memset_flush;
                js.trials = o->trials;
                js.edge = o->edge;
                js.seed = o->seed;
                js.stop = o->stop;
                js.device = o->device;
                js.timeout_s = o->timeout_s;
                snprintf(r.kernel, sizeof r.kernel, "%s", tg[k].kernel);
                snprintf(r.source, sizeof r.source, "%s", relative(tg[k].plugin));
                snprintf(r.op, sizeof r.op, "%s", tg[k].op->name);
                snprintf(r.dtype, sizeof r.dtype, "%s", kg_dtype_name(tg[k].dtype));
                snprintf(r.shape, sizeof r.shape, "%s", kg_shape_format(&shape, shp, sizeof shp));
                if (progress_on())
                    fprintf(stderr, "[%d/%d] %s %s %s ...\n", ++done, total, r.kernel, r.dtype, r.shape);
                if (kg_job_run(&js, &r, &lib, NULL, err)) {
                    if (err->code != KG_EXIT_ENV || r.n_sums == 0)
                        return err->code;
                    /* keep what was measured, stop here */
                    kg_report_add(rep, &r);
                    return err->code;
                }
                kg_judge(&r, tg[k].op, tg[k].dtype, &shape, &rep->roofs, &lib, &o->gate);
                kg_result *stored = kg_report_add(rep, &r);
                double t, tn;
                if (naive_index < 0 && kg_result_get(stored, "time/gpu/median", &t))
                    naive_index = rep->n - 1;
                else if (naive_index >= 0 && kg_result_get(stored, "time/gpu/median", &t) &&
                         kg_result_get(&rep->results[naive_index], "time/gpu/median", &tn) && t > 0)
                    kg_result_set(stored, "cliff", tn / t);
            }
        }
    }
    return 0;
}

static int finish(const kg_options *o, kg_report *rep, int rc, kg_err *err)
{
    kg_report_print(rep, stdout);
    if (o->json && rep->n) {
        kg_err jerr = {0, ""};
        if (kg_report_write_json(rep, o->json, &jerr)) {
            fail(&jerr);
            if (!rc)
                rc = jerr.code;
        }
    }
    if (rc) {
        fail(err);
        return rc;
    }
    return kg_report_exit_code(rep);
}

/* Opens the device, gets the roofs, checks every target, prints and writes
 * the report; returns the exit code. */
static int measure(const kg_options *o, const char *exe, target *tg, int nt)
{
    kg_err err = {0, ""};
    kg_device_info d;
    kg_report rep;
    int rc;
    if (open_device(o, &d, &err))
        return fail(&err);
    kg_report_init(&rep);
    report_header(&rep, o, &d);
    if (get_roofs(o, &d, &rep.roofs, &err)) {
        kg_report_free(&rep);
        return fail(&err);
    }
    rc = judge_all(o, exe, tg, nt, &rep, &err);
    rc = finish(o, &rep, rc, &err);
    kg_report_free(&rep);
    return rc;
}

int kg_cmd_check(const kg_options *o)
{
    kg_err err = {0, ""};
    char exe[PATH_MAX];
    target tg[MAX_TARGETS];
    int nt = 0;
    kg_self_exe(exe, sizeof exe);
    if (collect(o, exe, o->candidate, tg, MAX_TARGETS, &nt, &err))
        return fail(&err);
    if (nt == 0) {
        kg_err_set(&err, KG_EXIT_USAGE, "%s: no kernel matches%s%s%s%s", o->candidate,
                   o->op ? " --op " : "", o->op ? o->op->name : "", o->have_dtype ? " --dtype " : "",
                   o->have_dtype ? kg_dtype_name(o->dtype) : "");
        return fail(&err);
    }
    return measure(o, exe, tg, nt);
}

/* Newest run-*.json under results/h200 (relative to the source tree). */
static int latest_recorded(char *out, size_t size)
{
    const char *dirs[] = {"results/h200", KG_SOURCE_DIR "/results/h200"};
    for (int i = 0; i < 2; i++) {
        DIR *dp = opendir(dirs[i]);
        struct dirent *e;
        char best[256] = "";
        if (!dp)
            continue;
        while ((e = readdir(dp)))
            if (strncmp(e->d_name, "run-", 4) == 0 && strstr(e->d_name, ".json") &&
                strcmp(e->d_name, best) > 0)
                snprintf(best, sizeof best, "%s", e->d_name);
        closedir(dp);
        if (best[0]) {
            snprintf(out, size, "%s/%s", dirs[i], best);
            return 0;
        }
    }
    return -1;
}

int kg_cmd_run(const kg_options *o)
{
    kg_err err = {0, ""};
    char exe[PATH_MAX], dir[PATH_MAX], path[PATH_MAX + 64];
    target tg[MAX_TARGETS];
    int nt = 0, n;
    kg_report rep;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        cudaGetLastError();
        char rec[PATH_MAX];
        if (o->live || latest_recorded(rec, sizeof rec)) {
            kg_err_set(&err, KG_EXIT_ENV,
                       "no CUDA GPU here%s: a live run needs an NVIDIA GPU with its driver "
                       "(sm_90a kernels: H100/H200)", o->live ? "" : " and no recorded run under results/h200");
            return fail(&err);
        }
        if (kg_report_read_json(rec, &rep, &err))
            return fail(&err);
        printf("No CUDA GPU on this machine: showing the latest RECORDED run, not a live one.\n"
               "  file:   %s\n  date:   %s\n  commit: %s\n  device: %s\n  command: %s\n"
               "A live run needs an NVIDIA H100/H200 (sm_90a) with its driver; then `make run`.\n\n",
               rec, rep.date, rep.commit, rep.device, rep.command);
        kg_report_print(&rep, stdout);
        kg_report_free(&rep);
        return 0;
    }
    kg_self_exe(exe, sizeof exe);
    kg_self_dir(dir, sizeof dir);
    const char *plugins[] = {"libkgate_bundled.so", "triton/libkgate_triton.so"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, plugins[i]);
        if (access(path, R_OK) != 0) {
            if (i == 0) {
                kg_err_set(&err, KG_EXIT_ENV, "%s is missing: rebuild kgate", path);
                return fail(&err);
            }
            fprintf(stderr, "kgate: %s not built (needs Triton): running without the Triton kernels\n", path);
            continue;
        }
        if (collect(o, exe, path, tg, MAX_TARGETS, &nt, &err))
            return fail(&err);
    }
    return measure(o, exe, tg, nt);
}
