/* Candidate table validation and loading (the rule is in plugin_check.h). */
#include "plugin_check.h"

#include <dlfcn.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "op.h"

static int name_ok(const char *s)
{
    if (!s || !*s || strlen(s) > 80)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_' || *s == '.' || *s == '-'))
            return 0;
    return 1;
}

const kgate_kernel *kg_plugin_kernel(const kgate_plugin *p, uint32_t i)
{
    return (const kgate_kernel *)((const char *)p->kernels + (size_t)i * p->kernel_size);
}

static int check_kernel(const kgate_plugin *p, uint32_t i, const char *path, kg_err *err)
{
    const kgate_kernel *k = kg_plugin_kernel(p, i);
    if (!name_ok(k->name))
        return kg_err_set(err, KG_EXIT_CANDIDATE,
                          "%s: kernel #%u has a missing or invalid name (want [A-Za-z0-9_.-]+, "
                          "at most 80)",
                          path, i);
    for (uint32_t j = 0; j < i; j++)
        if (strcmp(kg_plugin_kernel(p, j)->name, k->name) == 0)
            return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: kernel name '%s' appears twice", path,
                              k->name);
    const kg_op *op = kg_op_find(k->op);
    if (!op)
        return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: kernel '%s' names unknown operator '%s'",
                          path, k->name, k->op ? k->op : "(null)");
    kg_dtype dt;
    if (kg_dtype_parse(k->dtype, &dt) || !kg_op_has_dtype(op, dt))
        return kg_err_set(err, KG_EXIT_CANDIDATE,
                          "%s: kernel '%s': dtype '%s' is not one %s supports", path, k->name,
                          k->dtype ? k->dtype : "(null)", op->name);
    if (k->index_dtype) {
        kg_dtype it;
        if (!kg_op_has_index(op))
            return kg_err_set(err, KG_EXIT_CANDIDATE,
                              "%s: kernel '%s' gives an index dtype, but %s has no index inputs",
                              path, k->name, op->name);
        if (kg_dtype_parse(k->index_dtype, &it) || !kg_dtype_is_int(it))
            return kg_err_set(err, KG_EXIT_CANDIDATE,
                              "%s: kernel '%s': index dtype '%s' is not int32 or int64", path,
                              k->name, k->index_dtype);
    }
    if (k->n_inputs != op->n_inputs || k->n_outputs != op->n_outputs)
        return kg_err_set(err, KG_EXIT_CANDIDATE,
                          "%s: kernel '%s' declares %d inputs and %d outputs; %s takes %d and %d",
                          path, k->name, k->n_inputs, k->n_outputs, op->name, op->n_inputs,
                          op->n_outputs);
    if (!k->launch)
        return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: kernel '%s' has no launch function", path,
                          k->name);
    if (k->summary && strlen(k->summary) > 255)
        return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: kernel '%s': summary longer than 255 bytes",
                          path, k->name);
    kg_err e2 = {0, ""};
    if (kg_op_check_scalars(op, k->name, k->scalars, &e2))
        return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: %s", path, e2.msg);
    return 0;
}

int kg_plugin_validate(const kgate_plugin *p, const char *path, kg_err *err)
{
    if (!p)
        return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: %s() returned NULL", path, KGATE_PLUGIN_SYMBOL);
    if (p->abi_version != KGATE_ABI_VERSION)
        return kg_err_set(err, KG_EXIT_CANDIDATE,
                          "%s: ABI version %u, this kgate speaks version %u", path,
                          p->abi_version, KGATE_ABI_VERSION);
    if (p->kernel_size < sizeof(kgate_kernel) || p->kernel_size > 4096)
        return kg_err_set(err, KG_EXIT_CANDIDATE,
                          "%s: kernel records of %u bytes; this kgate's are %zu (rebuild against "
                          "include/kgate/plugin.h)",
                          path, p->kernel_size, sizeof(kgate_kernel));
    if (p->n_kernels == 0 || !p->kernels)
        return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: the kernel table is empty", path);
    if (p->n_kernels > 1024)
        return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: %u kernels (at most 1024)", path,
                          p->n_kernels);
    for (uint32_t i = 0; i < p->n_kernels; i++)
        if (check_kernel(p, i, path, err))
            return err->code;
    return 0;
}

int kg_plugin_open(const char *path, void **handle, const kgate_plugin **out, kg_err *err)
{
    char local[PATH_MAX];
    *handle = NULL;
    if (access(path, R_OK) != 0)
        return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: no such readable file", path);
    /* dlopen searches the library path for a name without a slash: the file
     * checked above could then differ from the file loaded */
    if (!strchr(path, '/')) {
        snprintf(local, sizeof local, "./%s", path);
        path = local;
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: cannot load: %s", path, dlerror());
    kgate_plugin_entry_fn entry = (kgate_plugin_entry_fn)dlsym(h, KGATE_PLUGIN_SYMBOL);
    if (!entry) {
        int v1 = dlsym(h, "kgate_plugin_v1") != NULL;
        dlclose(h);
        if (v1)
            return kg_err_set(err, KG_EXIT_CANDIDATE,
                              "%s: an ABI version 1 candidate (kgate_plugin_v1); this kgate loads "
                              "version 2: rebuild it against include/kgate/plugin.h (docs/abi.md, "
                              "\"From version 1\")",
                              path);
        return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: no %s symbol: not a kgate candidate", path,
                          KGATE_PLUGIN_SYMBOL);
    }
    const kgate_plugin *p = entry();
    if (kg_plugin_validate(p, path, err)) {
        dlclose(h);
        return err->code;
    }
    *handle = h;
    *out = p;
    return 0;
}

int kg_candidate_split(const char *spec, char *path, size_t path_size, char *kernel, size_t kernel_size)
{
    const char *colon = strrchr(spec, ':');
    if (colon && strchr(colon, '/'))
        colon = NULL;
    size_t n = colon ? (size_t)(colon - spec) : strlen(spec);
    snprintf(path, path_size, "%.*s", (int)(n < path_size ? n : path_size - 1), spec);
    int k = snprintf(kernel, kernel_size, "%s", colon ? colon + 1 : "");
    return n < path_size && k >= 0 && (size_t)k < kernel_size ? 0 : -1;
}

int kg_name_in_list(const char *list, const char *name)
{
    const size_t n = strlen(name);
    for (const char *w = list; *w;) {
        const size_t len = strcspn(w, ",");
        if (len == n && strncmp(w, name, n) == 0)
            return 1;
        w += len + (w[len] == ',');
    }
    return 0;
}

int kg_source_is_python(const char *source)
{
    size_t n = source ? strlen(source) : 0;
    return n > 3 && strcmp(source + n - 3, ".py") == 0;
}

const kgate_kernel *kg_plugin_find(const kgate_plugin *p, const char *name)
{
    for (uint32_t i = 0; i < p->n_kernels; i++)
        if (strcmp(kg_plugin_kernel(p, i)->name, name) == 0)
            return kg_plugin_kernel(p, i);
    return NULL;
}
