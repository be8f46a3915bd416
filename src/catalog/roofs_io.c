/* Reading and writing the per-GPU roofs cache. */
#include "roofs_io.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int kg_cache_file(const char *file, char *buf, size_t size, kg_err *err)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char dir[2048];
    if (xdg && *xdg)
        snprintf(dir, sizeof dir, "%s/kgate", xdg);
    else if (home && *home)
        snprintf(dir, sizeof dir, "%s/.cache/kgate", home);
    else
        return kg_err_set(err, KG_EXIT_IO, "no cache directory: neither XDG_CACHE_HOME nor HOME is set");
    char parent[2048];
    snprintf(parent, sizeof parent, "%s", dir);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) {
        *slash = '\0';
        mkdir(parent, 0755);
    }
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return kg_err_set(err, KG_EXIT_IO, "cannot create %s: %s", dir, strerror(errno));
    snprintf(buf, size, "%s/%s", dir, file);
    return 0;
}

int kg_roofs_cache_path(const char *uuid, char *buf, size_t size, kg_err *err)
{
    char file[128];
    snprintf(file, sizeof file, "roofs-%s.json", uuid);
    return kg_cache_file(file, buf, size, err);
}

int kg_roofs_load(const char *path, kg_roofs *out, kg_err *err)
{
    FILE *f = fopen(path, "r");
    char buf[8192];
    if (!f)
        return 1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    cJSON *root = cJSON_Parse(buf);
    cJSON *r = cJSON_GetObjectItemCaseSensitive(root, "roofs");
    cJSON *bw = cJSON_GetObjectItemCaseSensitive(r, "bandwidth");
    cJSON *rd = cJSON_GetObjectItemCaseSensitive(r, "read_bandwidth");
    cJSON *wr = cJSON_GetObjectItemCaseSensitive(r, "write_bandwidth");
    cJSON *tr = cJSON_GetObjectItemCaseSensitive(r, "triad_bandwidth");
    cJSON *cr = cJSON_GetObjectItemCaseSensitive(r, "l2_write_credit");
    cJSON *m = cJSON_GetObjectItemCaseSensitive(r, "mma");
    cJSON *method = cJSON_GetObjectItemCaseSensitive(root, "method");
    if (cJSON_IsNumber(bw) && cJSON_IsObject(m) &&
        (!cJSON_IsNumber(method) || method->valuedouble != KG_ROOFS_METHOD)) {
        cJSON_Delete(root); /* measured by another kgate's kernels: measure again */
        return 1;
    }
    if (!cJSON_IsNumber(bw) || !cJSON_IsObject(m) || !cJSON_IsNumber(rd) || !cJSON_IsNumber(wr) ||
        !cJSON_IsNumber(tr) || !cJSON_IsNumber(cr)) {
        cJSON_Delete(root);
        return kg_err_set(err, KG_EXIT_IO, "%s: corrupt roofs cache (delete it or run kgate peaks)", path);
    }
    memset(out, 0, sizeof *out);
    strcpy(out->source, "measured");
    out->bw = bw->valuedouble;
    out->bw_read = rd->valuedouble;
    out->bw_write = wr->valuedouble;
    out->bw_triad = tr->valuedouble;
    out->l2_credit = cr->valuedouble;
    const char *names[3] = {"fp16", "bf16", "tf32"};
    const kg_dtype dts[3] = {KG_FP16, KG_BF16, KG_FP32};
    for (int i = 0; i < 3; i++) {
        cJSON *v = cJSON_GetObjectItemCaseSensitive(m, names[i]);
        out->mma[dts[i]] = cJSON_IsNumber(v) ? v->valuedouble : 0;
    }
    cJSON_Delete(root);
    return 0;
}

int kg_roofs_save(const char *path, const kg_roofs *r, const char *uuid, const char *device,
                  kg_err *err)
{
    cJSON *root = cJSON_CreateObject(), *o, *m;
    cJSON_AddStringToObject(root, "uuid", uuid);
    cJSON_AddStringToObject(root, "device", device);
    cJSON_AddNumberToObject(root, "method", KG_ROOFS_METHOD);
    o = cJSON_AddObjectToObject(root, "roofs");
    cJSON_AddNumberToObject(o, "bandwidth", r->bw);
    cJSON_AddNumberToObject(o, "read_bandwidth", r->bw_read);
    cJSON_AddNumberToObject(o, "write_bandwidth", r->bw_write);
    cJSON_AddNumberToObject(o, "triad_bandwidth", r->bw_triad);
    cJSON_AddNumberToObject(o, "l2_write_credit", r->l2_credit);
    m = cJSON_AddObjectToObject(o, "mma");
    cJSON_AddNumberToObject(m, "fp16", r->mma[KG_FP16]);
    cJSON_AddNumberToObject(m, "bf16", r->mma[KG_BF16]);
    cJSON_AddNumberToObject(m, "tf32", r->mma[KG_FP32]);
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text)
        return kg_err_set(err, KG_EXIT_IO, "cannot serialize the roofs");
    kg_write_file_atomic(path, text, err);
    free(text);
    return err->code;
}
