/* A table of KERNELS kernels (the ABI allows 1024), built without CUDA:
 * each with an 80-byte name and a 255-byte summary full of quotes and
 * backslashes, which JSON escapes (the largest table event a C candidate
 * can make). Listing it needs no GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kgate/plugin.h>

#ifndef KERNELS
#define KERNELS 1024
#endif

static int noop(const DLTensor *i, int ni, DLTensor *o, int no, const kgate_params *p, kgate_stream s)
{
    (void)i, (void)ni, (void)o, (void)no, (void)p, (void)s;
    return 0;
}

static char names[KERNELS][81], summaries[KERNELS][256];
static kgate_kernel kernels[KERNELS];
static kgate_plugin plugin;

const kgate_plugin *kgate_plugin_v2(void)
{
    if (plugin.n_kernels)
        return &plugin;
    for (int i = 0; i < KERNELS; i++) {
        snprintf(names[i], sizeof names[i], "big_%04d_", i);
        memset(names[i] + 9, 'n', 71);
        for (int c = 0; c < 255; c++)
            summaries[i][c] = "\"\\q"[c % 3];
        kernels[i] = (kgate_kernel){names[i], "layer_norm", "fp16", NULL, 3, 1, noop, summaries[i], "eps", NULL};
    }
    plugin = (kgate_plugin){KGATE_ABI_VERSION, (uint32_t)sizeof(kgate_kernel), KERNELS, kernels};
    return &plugin;
}
