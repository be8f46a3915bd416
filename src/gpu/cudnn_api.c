/* Run-time loading of cuDNN. */
#include "cudnn_api.h"

#include <dlfcn.h>
#include <string.h>

static kg_cudnn_api api;
static int loaded;

const kg_cudnn_api *kg_cudnn_loaded(void) { return loaded ? &api : NULL; }

const kg_cudnn_api *kg_cudnn_load(kg_err *err)
{
    if (loaded)
        return &api;
    void *lib = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        kg_err_set(err, KG_EXIT_ENV, "cuDNN 9 not found: %s", dlerror());
        return NULL;
    }
    kg_cudnn_api a;
    memset(&a, 0, sizeof a);
    a.lib = lib;
#define X(f)                                                                            \
    if (!(*(void **)&a.f = dlsym(lib, #f))) {                                            \
        kg_err_set(err, KG_EXIT_ENV, "cuDNN library lacks %s (too old?)", #f);           \
        dlclose(lib);                                                                    \
        return NULL;                                                                     \
    }
    KG_CUDNN_FNS(X)
#undef X
    api = a;
    loaded = 1;
    return &api;
}
