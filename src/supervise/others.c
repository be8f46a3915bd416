/* Other processes on the GPU: the pure part (the rules are in others.h; the
 * NVML listing is kg_gpu_watch in gpu/device.c). */
#include "others.h"

#include <unistd.h>

#include "../base/kg.h"

/* 1 + where x is in v[0..n), or 0 */
static int has(const long *v, int n, long x)
{
    for (int i = 0; i < n; i++)
        if (v[i] == x)
            return i + 1;
    return 0;
}

int kg_self_and_ancestors(long *pids, int max)
{
    int n = 0;
    long p = (long)getpid();
    while (p > 0 && n < max && !has(pids, n, p)) {
        long ppid, pgrp;
        pids[n++] = p;
        p = kg_proc_parent(p, &ppid, &pgrp) == 0 ? ppid : -1;
    }
    return n;
}

static void add_one(kg_others *o, long pid, double mem)
{
    int at = has(o->pid, o->kept, pid);
    if (at) {
        if (mem > o->mem[at - 1])
            o->mem[at - 1] = mem;
        return;
    }
    if (o->kept < KG_OTHERS_MAX) {
        o->pid[o->kept] = pid;
        o->mem[o->kept] = mem > 0 ? mem : 0;
        o->kept++;
    }
    o->n++; /* beyond the kept ones each listing may count one again: n errs high, never low */
}

void kg_others_note(kg_others *o, const long *pid, const double *mem, int n, const long *own, int n_own)
{
    o->listed++;
    for (int i = 0; i < n; i++)
        if (!has(own, n_own, pid[i]))
            add_one(o, pid[i], mem ? mem[i] : 0);
}

void kg_others_merge(kg_others *into, const kg_others *o)
{
    for (int i = 0; i < o->kept; i++)
        add_one(into, o->pid[i], o->mem[i]);
    into->n += o->n - o->kept;
    into->listed += o->listed;
    into->failed |= o->failed;
}

double kg_others_mem(const kg_others *o)
{
    double s = 0;
    for (int i = 0; i < o->kept; i++)
        s += o->mem[i];
    return s;
}
