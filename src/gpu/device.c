/* Device queries through the CUDA runtime and (optionally) NVML, and the
 * NVML watch for other processes on a GPU. NVML is loaded with dlopen so
 * that kgate starts on machines without a driver. */
#include "device.h"

#include <dlfcn.h>
#include <nvml.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

/* NVML's lists of a GPU's processes (compute, graphics, MPS clients) */
typedef nvmlReturn_t (*nvml_list_fn)(nvmlDevice_t, unsigned *, nvmlProcessInfo_t *);

typedef struct nvml_api {
    void *lib;
    nvmlReturn_t (*Init)(void);
    nvmlReturn_t (*Shutdown)(void);
    const char *(*ErrorString)(nvmlReturn_t);
    nvmlReturn_t (*ByPci)(const char *, nvmlDevice_t *);
    nvmlReturn_t (*Clock)(nvmlDevice_t, nvmlClockType_t, unsigned *);
    nvmlReturn_t (*Temp)(nvmlDevice_t, nvmlTemperatureSensors_t, unsigned *);
    nvmlReturn_t (*Power)(nvmlDevice_t, unsigned *);
    nvmlReturn_t (*Driver)(char *, unsigned);
    nvml_list_fn Procs, Gfx, Mps; /* each may be NULL */
} nvml_api;

static int nvml_load(nvml_api *n)
{
    memset(n, 0, sizeof *n);
    n->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!n->lib)
        return -1;
#define SYM(f, s) *(void **)(&n->f) = dlsym(n->lib, s)
    SYM(Init, "nvmlInit_v2");
    SYM(Shutdown, "nvmlShutdown");
    SYM(ErrorString, "nvmlErrorString");
    SYM(ByPci, "nvmlDeviceGetHandleByPciBusId_v2");
    SYM(Clock, "nvmlDeviceGetClockInfo");
    SYM(Temp, "nvmlDeviceGetTemperature");
    SYM(Power, "nvmlDeviceGetPowerUsage");
    SYM(Driver, "nvmlSystemGetDriverVersion");
    SYM(Procs, "nvmlDeviceGetComputeRunningProcesses_v3");
    SYM(Gfx, "nvmlDeviceGetGraphicsRunningProcesses_v3");
    SYM(Mps, "nvmlDeviceGetMPSComputeRunningProcesses_v3");
#undef SYM
    if (!n->Init || !n->Shutdown || !n->ByPci || !n->Clock || !n->Temp || !n->Power || !n->Driver) {
        dlclose(n->lib);
        return -1;
    }
    return 0;
}

static int nvml_fill(kg_device_info *d, kg_err *err)
{
    nvml_api api, *n = &api;
    nvmlDevice_t dev;
    unsigned v;
    int inited = 0;
    if (nvml_load(n))
        return 0; /* optional */
    KG_NVML(n, n->Init());
    inited = 1; /* nvmlShutdown only after an nvmlInit that succeeded */
    KG_NVML(n, n->ByPci(d->pci, &dev));
    KG_NVML(n, n->Driver(d->nvml_driver, sizeof d->nvml_driver));
    KG_NVML(n, n->Clock(dev, NVML_CLOCK_SM, &v));
    d->sm_clock_now_mhz = v;
    KG_NVML(n, n->Temp(dev, NVML_TEMPERATURE_GPU, &d->temp_c));
    KG_NVML(n, n->Power(dev, &v));
    d->power_w = v / 1000.0;
    d->nvml = 1;
out:
    if (inited)
        n->Shutdown();
    dlclose(n->lib);
    return err->code;
}

const char *kg_device_absent(int rc, char *buf, size_t size)
{
    int (*get_version)(int *) = NULL, drv = 0, rt = 0;
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cuda) {
        snprintf(buf, size, "no usable CUDA GPU: no NVIDIA driver on this machine (libcuda.so.1 does not load)");
        return buf;
    }
    *(void **)&get_version = dlsym(cuda, "cuDriverGetVersion");
    int got = get_version && get_version(&drv) == 0;
    dlclose(cuda);
    if (access("/dev/nvidiactl", F_OK) != 0 && access("/dev/nvidia0", F_OK) != 0) {
        snprintf(buf, size, "no usable CUDA GPU: the NVIDIA driver's library is here, but no GPU device "
                            "(/dev/nvidia*): a container started without the GPU?");
        return buf;
    }
    if (got && cudaRuntimeGetVersion(&rt) == cudaSuccess && drv < rt) {
        snprintf(buf, size, "no usable CUDA GPU: the NVIDIA driver supports CUDA %d.%d, kgate's CUDA runtime "
                            "is %d.%d: update the driver", drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10);
        return buf;
    }
    if (rc == cudaSuccess)
        snprintf(buf, size, "no CUDA GPU on this machine");
    else
        snprintf(buf, size, "no usable CUDA GPU: cudaGetDeviceCount: %s", cudaGetErrorString((cudaError_t)rc));
    return buf;
}

int kg_device_count(int *n, kg_err *err)
{
    char why[256];
    cudaError_t rc = cudaGetDeviceCount(n);
    if (rc != cudaSuccess)
        *n = 0;
    if (rc != cudaSuccess || *n == 0)
        return kg_err_set(err, KG_EXIT_ENV, "%s", kg_device_absent(rc, why, sizeof why));
    return 0;
}

int kg_device_cc(int index, int *cc, kg_err *err)
{
    int major = 0, minor = 0;
    KG_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, index));
    KG_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, index));
    *cc = major * 10 + minor;
out:
    return err->code;
}

int kg_device_query(int index, kg_device_info *d, kg_err *err)
{
    struct cudaDeviceProp p;
    int v;
    memset(d, 0, sizeof *d);
    d->index = index;
    KG_CUDA(cudaGetDeviceProperties(&p, index));
    snprintf(d->name, sizeof d->name, "%s", p.name);
    {
        const unsigned char *u = (const unsigned char *)p.uuid.bytes;
        snprintf(d->uuid, sizeof d->uuid,
                 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                 u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
                 u[14], u[15]);
    }
    KG_CUDA(cudaDeviceGetPCIBusId(d->pci, sizeof d->pci, index));
    d->cc_major = p.major;
    d->cc_minor = p.minor;
    d->sm_count = p.multiProcessorCount;
    d->mem_bytes = (double)p.totalGlobalMem;
    d->l2_bytes = p.l2CacheSize;
    d->bus_bits = p.memoryBusWidth;
    KG_CUDA(cudaDeviceGetAttribute(&v, cudaDevAttrClockRate, index));
    d->sm_clock_max_mhz = v / 1000.0;
    KG_CUDA(cudaDeviceGetAttribute(&v, cudaDevAttrMemoryClockRate, index));
    d->mem_clock_khz = v;
    KG_CUDA(cudaDriverGetVersion(&d->driver_version));
    KG_CUDA(cudaRuntimeGetVersion(&d->runtime_version));
    {
        kg_err nerr = {0, ""};
        nvml_fill(d, &nerr); /* NVML is extra information; its absence is not an error */
    }
out:
    return err->code;
}

struct kg_gpu_watch {
    nvml_api api;
    nvmlDevice_t dev;
};

kg_gpu_watch *kg_gpu_watch_open(const char *pci, kg_err *err)
{
    kg_gpu_watch *w = calloc(1, sizeof *w);
    nvml_api *n = w ? &w->api : NULL;
    int inited = 0;
    if (!w) {
        kg_err_set(err, KG_EXIT_ENV, "out of memory");
        return NULL;
    }
    if (nvml_load(n)) {
        kg_err_set(err, KG_EXIT_ENV, "libnvidia-ml.so.1 did not load");
        free(w);
        return NULL;
    }
    if (!n->Procs) {
        kg_err_set(err, KG_EXIT_ENV, "libnvidia-ml.so.1 has no nvmlDeviceGetComputeRunningProcesses_v3");
        goto out;
    }
    KG_NVML(n, n->Init());
    inited = 1;
    KG_NVML(n, n->ByPci(pci, &w->dev));
    return w;
out:
    if (inited)
        n->Shutdown();
    dlclose(n->lib);
    free(w);
    return NULL;
}

/* One of NVML's process lists appended to pid[]/mem[] (up to max in all);
 * optional lists (graphics, MPS) that the GPU or driver does not support
 * add nothing. */
static int list_append(const nvml_api *n, nvml_list_fn fn, const char *name, int optional, nvmlDevice_t dev,
                       long *pid, double *mem, int max, int *n_out, kg_err *err)
{
    nvmlProcessInfo_t stack[KG_GPU_WATCH_MAX], *info = stack;
    unsigned count = KG_GPU_WATCH_MAX;
    nvmlReturn_t rc;
    /* more processes than the buffer holds: NVML says how many (and fills
     * nothing); a larger buffer, a few times, since they may come and go */
    for (int tries = 0;; tries++) {
        unsigned cap = count;
        rc = fn(dev, &count, info);
        if (rc != NVML_ERROR_INSUFFICIENT_SIZE || tries == 3)
            break;
        if (info != stack)
            free(info);
        count = count > cap ? count + 16 : cap * 2;
        if (!(info = calloc(count, sizeof *info)))
            return kg_err_set(err, KG_EXIT_ENV, "out of memory for %u processes", count);
    }
    if (optional && (rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_FUNCTION_NOT_FOUND)) {
        rc = NVML_SUCCESS;
        count = 0;
    }
    if (rc != NVML_SUCCESS)
        kg_err_set(err, KG_EXIT_ENV, "%s failed at %s:%d: %s", name, __FILE__, __LINE__,
                   n->ErrorString ? n->ErrorString(rc) : "?");
    for (unsigned i = 0; rc == NVML_SUCCESS && i < count && *n_out < max; i++) {
        pid[*n_out] = (long)info[i].pid;
        mem[*n_out] = info[i].usedGpuMemory == (unsigned long long)NVML_VALUE_NOT_AVAILABLE
                          ? -1
                          : (double)info[i].usedGpuMemory;
        (*n_out)++;
    }
    if (info != stack)
        free(info);
    return err->code;
}

int kg_gpu_watch_list(kg_gpu_watch *w, long *pid, double *mem, int max, int *n_out, kg_err *err)
{
    nvml_api *n = &w->api;
    *n_out = 0;
    if (list_append(n, n->Procs, "nvmlDeviceGetComputeRunningProcesses_v3", 0, w->dev, pid, mem, max, n_out, err))
        return err->code;
    /* graphics contexts (OpenGL, Vulkan) share the GPU too, and an MPS
     * server's clients are listed apart; a process in two lists is one
     * process to kg_others_note */
    if (n->Gfx &&
        list_append(n, n->Gfx, "nvmlDeviceGetGraphicsRunningProcesses_v3", 1, w->dev, pid, mem, max, n_out, err))
        return err->code;
    if (n->Mps &&
        list_append(n, n->Mps, "nvmlDeviceGetMPSComputeRunningProcesses_v3", 1, w->dev, pid, mem, max, n_out, err))
        return err->code;
    return 0;
}

void kg_gpu_watch_close(kg_gpu_watch *w)
{
    if (!w)
        return;
    w->api.Shutdown();
    dlclose(w->api.lib);
    free(w);
}
