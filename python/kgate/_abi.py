"""ctypes mirrors of kgate's C structs (include/kgate/plugin.h, dlpack.h,
src/gpu/provider.h). The worker host compares each one's size with what
libkgate.so reports (kg_pyhost_sizeof) before it passes any of them."""
import ctypes
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char_p, c_double, c_int, c_int64, c_uint8,
                    c_uint16, c_uint32, c_uint64, c_void_p)

ABI_VERSION = 2


class DLDevice(Structure):
    _fields_ = [("device_type", c_int), ("device_id", c_int)]


class DLDataType(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLTensor(Structure):
    _fields_ = [("data", c_void_p), ("device", DLDevice), ("ndim", c_int), ("dtype", DLDataType),
                ("shape", POINTER(c_int64)), ("strides", POINTER(c_int64)), ("byte_offset", c_uint64)]


class DLManagedTensor(Structure):
    pass


DELETER = CFUNCTYPE(None, POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p), ("deleter", DELETER)]


class Scalar(Structure):
    _fields_ = [("name", c_char_p), ("value", c_double)]


class Params(Structure):
    _fields_ = [("struct_size", c_uint32), ("n_scalars", c_uint32), ("scalars", POINTER(Scalar)),
                ("error", c_void_p), ("error_size", c_uint32)]


LAUNCH = CFUNCTYPE(c_int, POINTER(DLTensor), c_int, POINTER(DLTensor), c_int, POINTER(Params), c_void_p)
SUPPORTS = CFUNCTYPE(c_int, POINTER(c_int64), c_int)


class Kernel(Structure):
    _fields_ = [("name", c_char_p), ("op", c_char_p), ("dtype", c_char_p), ("index_dtype", c_char_p),
                ("n_inputs", c_int), ("n_outputs", c_int), ("launch", LAUNCH), ("summary", c_char_p),
                ("scalars", c_char_p), ("supports", SUPPORTS)]


class Plugin(Structure):
    _fields_ = [("abi_version", c_uint32), ("kernel_size", c_uint32), ("n_kernels", c_uint32),
                ("kernels", POINTER(Kernel))]


OPEN = CFUNCTYPE(c_int, c_void_p, c_char_p, POINTER(POINTER(Plugin)), c_void_p, c_uint32)
COLLECT = CFUNCTYPE(c_int, c_void_p, POINTER(Kernel), POINTER(DLTensor), c_int, c_void_p, c_void_p, c_uint32)
DESCRIBE = CFUNCTYPE(c_int, c_void_p, c_void_p, c_uint32, c_void_p, c_uint32)
INPUTS = CFUNCTYPE(c_int, c_void_p, c_uint64, POINTER(DLTensor), c_int, c_void_p, c_void_p, c_uint32)
REFERENCE = CFUNCTYPE(c_int, c_void_p, POINTER(DLTensor), c_int, POINTER(c_void_p), c_int, c_void_p,
                      POINTER(c_double), c_void_p, c_uint32)
LIBRARY = CFUNCTYPE(c_int, c_void_p, POINTER(POINTER(Plugin)), c_void_p, c_uint32)
HOST_SECONDS = CFUNCTYPE(c_double, c_void_p)
TORCH_LIBRARY = CFUNCTYPE(c_int, c_void_p, c_char_p, c_char_p, c_char_p, c_int, POINTER(POINTER(Plugin)), c_void_p,
                          c_uint32)


class Provider(Structure):
    _fields_ = [("struct_size", c_uint32), ("kind", c_char_p), ("self", c_void_p), ("open", OPEN),
                ("collect", COLLECT), ("describe", DESCRIBE), ("inputs", INPUTS), ("reference", REFERENCE),
                ("library", LIBRARY), ("host_seconds", HOST_SECONDS), ("torch_library", TORCH_LIBRARY)]


MIRRORS = {"provider": Provider, "kernel": Kernel, "table": Plugin, "dltensor": DLTensor, "params": Params}


def write_msg(buf, size, text):
    """Writes text, NUL-terminated and cut to size, into a C buffer."""
    if not buf or not size:
        return
    data = text.encode("utf-8", "replace")[: size - 1] + b"\0"
    ctypes.memmove(buf, data, len(data))
