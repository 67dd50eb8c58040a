"""cuOccupancyMaxActiveClusters for a compiled Triton/Gluon kernel (ctypes)."""
import ctypes

class Attr(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_ubyte * 64)]

class Config(ctypes.Structure):
    _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint), ("gridDimZ", ctypes.c_uint),
                ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(Attr)), ("numAttrs", ctypes.c_uint)]

def max_active_clusters(compiled, ctas, grid_ctas):
    cuda = ctypes.CDLL("libcuda.so.1")
    compiled._init_handles()
    func = ctypes.c_void_p(compiled.function)
    attr = Attr(); attr.id = 4  # CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    dims = (ctypes.c_uint * 3).from_buffer(attr.value); dims[0], dims[1], dims[2] = ctas, 1, 1
    cfg = Config(grid_ctas, 1, 1, 32 * compiled.metadata.num_warps, 1, 1, compiled.metadata.shared, None, ctypes.pointer(attr), 1)
    n = ctypes.c_int(0)
    err = cuda.cuOccupancyMaxActiveClusters(ctypes.byref(n), func, ctypes.byref(cfg))
    return n.value if err == 0 else f"error {err}"

def compiled_of(jit):
    caches = getattr(jit, "device_caches", None)
    for dev, entry in (caches or {}).items():
        kcache = entry[0]
        for k in kcache.values():
            return k
    return None
