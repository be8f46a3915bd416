/* The GPU as kgate reports it (CUDA runtime, plus NVML when it loads), and
 * the measured roofs (`kgate peaks`). */
#ifndef KG_DEVICE_H
#define KG_DEVICE_H

#include "../base/kg.h"
#include "../catalog/roofline.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kg_device_info {
    int index;
    char name[256];
    char uuid[64]; /* "GPU-xxxxxxxx-..." */
    char pci[32];
    int cc_major, cc_minor, sm_count;
    double mem_bytes, l2_bytes;
    double sm_clock_max_mhz, mem_clock_khz;
    int bus_bits;
    int driver_version, runtime_version;
    int nvml;                  /* the NVML fields below are valid */
    char nvml_driver[32];
    double sm_clock_now_mhz, power_w;
    unsigned temp_c;
} kg_device_info;

/* Number of CUDA devices; an error (KG_EXIT_ENV) names why there are none. */
int kg_device_count(int *n, kg_err *err);
/* Why the CUDA runtime found no device (rc: cudaGetDeviceCount's error, an
 * int so that this header needs no CUDA header; 0 for "none found"), in
 * words a user can act on: no NVIDIA driver (libcuda.so.1 does not load),
 * a driver without a GPU's device files (/dev/nvidia*), a driver older than
 * kgate's CUDA runtime (its CUDA version and the runtime's),
 * else the runtime's own message. Writes "no usable CUDA GPU: ..." to buf. */
const char *kg_device_absent(int rc, char *buf, size_t size);
int kg_device_query(int index, kg_device_info *out, kg_err *err);
/* A GPU's compute capability alone, as a number (90 for 9.0). */
int kg_device_cc(int index, int *cc, kg_err *err);

/* A GPU watched through NVML for the processes holding a context on it
 * (compute, graphics, or as an MPS client; supervise/others.h says what kgate
 * makes of them): opened once, listed around each job. Open returns NULL where NVML does not load or does not
 * know the device (PCI bus id), err saying which. */
typedef struct kg_gpu_watch kg_gpu_watch;
#define KG_GPU_WATCH_MAX 64 /* processes a listing reads at first (more: a larger buffer) */
kg_gpu_watch *kg_gpu_watch_open(const char *pci, kg_err *err);
/* The processes on the GPU now, the first max of them: pid[i] holding
 * mem[i] bytes of its memory (-1: NVML does not say); *n how many. Under
 * MIG the device is the whole GPU, so every instance's processes count. */
int kg_gpu_watch_list(kg_gpu_watch *w, long *pid, double *mem, int max, int *n, kg_err *err);
void kg_gpu_watch_close(kg_gpu_watch *w);

/* One bandwidth kernel as `kgate peaks` timed it (gpu/peaks.cu lists them). */
typedef struct kg_peak_variant {
    char name[48];
    char mix[8];         /* "read", "write", "copy" or "triad" (two reads a write) */
    double stream_bytes; /* bytes of each stream read or written in one call */
    double bw;           /* bytes read + written over the median time, bytes/s */
    int cold;            /* timed as kernels are (L2 flushed by a read first); else back to back */
} kg_peak_variant;
#define KG_PEAK_VARIANTS 64

/* What `kgate peaks` measured, beside the roofs derived from it. */
typedef struct kg_peaks {
    double copy_kernel_bw, memcpy_bw; /* bytes/s, read + write: the best copy kernel, cudaMemcpy */
    double read_bw, write_bw;         /* bytes/s of the best read-only and write-only streams */
    double triad_bw;                  /* bytes/s of the best stream reading two bytes a byte written */
    double credit[3];                 /* bytes a cold call of 4x L2 moved beyond the DRAM rate:
                                       * write-only, copy, triad */
    double l2_credit;                 /* the largest, at most the L2 size (kg_roofs) */
    double mma[KG_DTYPE_COUNT];       /* FLOP/s at 8192^3 through cuBLASLt */
    double copy_bytes;                /* bytes moved per copy call in the screening */
    int n_variants;
    kg_peak_variant variants[KG_PEAK_VARIANTS]; /* every kernel timed, in order */
} kg_peaks;

/* Measures bandwidth and matrix throughput on the current device. */
int kg_peaks_measure(kg_peaks *pk, kg_roofs *roofs, kg_err *err);

#ifdef __cplusplus
}
#endif
#endif
