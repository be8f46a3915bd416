/* Candidate table validation and loading. */
#include "plugin_check.h"

#include <dlfcn.h>
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

int kg_plugin_validate(const kgate_plugin *p, const char *path, kg_err *err)
{
    if (!p)
        return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: %s() returned NULL", path, KGATE_PLUGIN_SYMBOL);
    if (p->abi_version != KGATE_ABI_VERSION)
        return kg_err_set(err, KG_EXIT_CANDIDATE,
                          "%s: ABI version %u, this kgate speaks version %u", path,
                          p->abi_version, KGATE_ABI_VERSION);
    if (p->n_kernels == 0 || !p->kernels)
        return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: the kernel table is empty", path);
    if (p->n_kernels > 4096)
        return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: %u kernels: table looks corrupt", path,
                          p->n_kernels);
    for (uint32_t i = 0; i < p->n_kernels; i++) {
        const kgate_kernel *k = &p->kernels[i];
        if (!name_ok(k->name))
            return kg_err_set(err, KG_EXIT_CANDIDATE,
                              "%s: kernel #%u has a missing or invalid name (want [A-Za-z0-9_.-]+)",
                              path, i);
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(p->kernels[j].name, k->name) == 0)
                return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: kernel name '%s' appears twice",
                                  path, k->name);
        const kg_op *op = kg_op_find(k->op);
        if (!op)
            return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: kernel '%s' names unknown operator '%s'",
                              path, k->name, k->op ? k->op : "(null)");
        kg_dtype dt;
        if (kg_dtype_parse(k->dtype, &dt) || !kg_op_has_dtype(op, dt))
            return kg_err_set(err, KG_EXIT_CANDIDATE,
                              "%s: kernel '%s': dtype '%s' is not one %s supports", path, k->name,
                              k->dtype ? k->dtype : "(null)", op->name);
        if (k->n_inputs != op->n_inputs || k->n_outputs != op->n_outputs)
            return kg_err_set(err, KG_EXIT_CANDIDATE,
                              "%s: kernel '%s' declares %d inputs and %d outputs; %s takes %d and %d",
                              path, k->name, k->n_inputs, k->n_outputs, op->name, op->n_inputs,
                              op->n_outputs);
        if (!k->launch)
            return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: kernel '%s' has no launch function",
                              path, k->name);
    }
    return 0;
}

int kg_plugin_open(const char *path, void **handle, const kgate_plugin **out, kg_err *err)
{
    *handle = NULL;
    if (access(path, R_OK) != 0)
        return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: no such readable file", path);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: cannot load: %s", path, dlerror());
    kgate_plugin_entry_fn entry = (kgate_plugin_entry_fn)dlsym(h, KGATE_PLUGIN_SYMBOL);
    if (!entry) {
        dlclose(h);
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

const kgate_kernel *kg_plugin_find(const kgate_plugin *p, const char *name)
{
    for (uint32_t i = 0; i < p->n_kernels; i++)
        if (strcmp(p->kernels[i].name, name) == 0)
            return &p->kernels[i];
    return NULL;
}
