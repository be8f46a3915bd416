/* The CUDA driver functions that Triton's generated launchers and
 * kgate_triton.c call, taken from libcuda.so.1 at the first call instead of
 * at load time.
 *
 * Linking with -lcuda would make libcuda.so.1 a load-time dependency: the
 * candidate could then not even be opened where there is no NVIDIA driver,
 * and kgate could not list or validate its table on the machine that builds
 * it. These definitions are hidden (the library exports kgate_plugin_v2
 * alone), so the launchers bind to them; each forwards to the driver's
 * function of the same name, or answers CUDA_ERROR_NOT_INITIALIZED when
 * libcuda.so.1 cannot be loaded. In a kgate worker the CUDA runtime has
 * loaded libcuda.so.1 already, so dlopen returns that same library. */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

#define DRIVER_FUNCS(X)                                                                        \
    X(cuCtxGetDevice, (CUdevice * device), (device))                                           \
    X(cuDeviceGetAttribute, (int *pi, CUdevice_attribute attrib, CUdevice dev), (pi, attrib, dev)) \
    X(cuModuleLoadData, (CUmodule * module, const void *image), (module, image))               \
    X(cuModuleUnload, (CUmodule hmod), (hmod))                                                 \
    X(cuModuleGetFunction, (CUfunction * hfunc, CUmodule hmod, const char *name),             \
      (hfunc, hmod, name))                                                                     \
    X(cuFuncSetCacheConfig, (CUfunction hfunc, CUfunc_cache config), (hfunc, config))          \
    X(cuFuncSetAttribute, (CUfunction hfunc, CUfunction_attribute attrib, int value),         \
      (hfunc, attrib, value))                                                                  \
    X(cuLaunchKernel,                                                                          \
      (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,      \
       unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,                 \
       unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra),      \
      (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,       \
       hStream, kernelParams, extra))

#define POINTER(name, params, args) static CUresult(CUDAAPI *p_##name) params;
DRIVER_FUNCS(POINTER)
#undef POINTER
static CUresult(CUDAAPI *p_cuGetErrorString)(CUresult error, const char **pStr);

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void resolve(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return;
#define RESOLVE(name, params, args) *(void **)&p_##name = dlsym(lib, #name);
    DRIVER_FUNCS(RESOLVE)
    RESOLVE(cuGetErrorString, _, _)
#undef RESOLVE
}

#define FORWARD(name, params, args)                                                            \
    __attribute__((visibility("hidden"))) CUresult CUDAAPI name params                         \
    {                                                                                          \
        pthread_once(&once, resolve);                                                          \
        return p_##name ? p_##name args : CUDA_ERROR_NOT_INITIALIZED;                          \
    }
DRIVER_FUNCS(FORWARD)
#undef FORWARD

__attribute__((visibility("hidden"))) CUresult CUDAAPI cuGetErrorString(CUresult error,
                                                                        const char **pStr)
{
    pthread_once(&once, resolve);
    if (p_cuGetErrorString)
        return p_cuGetErrorString(error, pStr);
    *pStr = "libcuda.so.1 (the NVIDIA driver) could not be loaded";
    return CUDA_ERROR_NOT_INITIALIZED;
}
