"""A short load on one GPU through the CUDA driver API (`libcuda.so.1`, which every NVIDIA driver installs),
so the exporter's utilisation, power and memory readings move while it is compared with nvidia-smi.

No Python package is needed: the driver compiles a small PTX kernel (each thread spins on integer arithmetic
for a fixed number of rounds) and launches it repeatedly for the duration, with a buffer allocated so the
frame buffer in use grows. Nothing about the GPU's configuration changes (no MIG mode, no clocks, no reset).
"""

from __future__ import annotations

import ctypes
import threading
import time

__all__ = ["CudaError", "GpuLoad"]

_PTX = b"""
.version 6.0
.target sm_50
.address_size 64
.visible .entry spin(.param .u64 out, .param .u32 rounds)
{
    .reg .pred %p;
    .reg .b32 %r<5>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [rounds];
    mov.u32 %r2, 0;
    mov.u32 %r3, %tid.x;
LOOP:
    mad.lo.u32 %r3, %r3, 1664525, 1013904223;
    add.u32 %r2, %r2, 1;
    setp.lt.u32 %p, %r2, %r1;
    @%p bra LOOP;
    cvta.to.global.u64 %rd2, %rd1;
    st.global.u32 [%rd2], %r3;
    ret;
}
\x00"""

#: Bytes allocated while the load runs (the frame buffer in use grows by this much).
BUFFER_BYTES = 256 << 20
_BLOCKS, _THREADS, _ROUNDS = 1024, 256, 1 << 16


class CudaError(Exception):
    """The CUDA driver API refused a call (its name and error code are in the message)."""


class GpuLoad:
    """`with GpuLoad(index):` keeps GPU `index` busy on a background thread until the block ends."""

    def __init__(self, index: int = 0, library: str = "libcuda.so.1") -> None:
        self.index = index
        self.library = library
        self.launches = 0
        self.error: CudaError | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()

    def _check(self, cuda: ctypes.CDLL, name: str, *arguments: object) -> None:
        status = getattr(cuda, name)(*arguments)
        if status != 0:
            raise CudaError(f"{name} returned CUDA error {status}")

    def _run(self) -> None:
        try:
            cuda = ctypes.CDLL(self.library)
            device, context, module, function = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
            buffer = ctypes.c_uint64()
            self._check(cuda, "cuInit", 0)
            self._check(cuda, "cuDeviceGet", ctypes.byref(device), self.index)
            self._check(cuda, "cuCtxCreate_v2", ctypes.byref(context), 0, device)
            try:
                self._check(cuda, "cuModuleLoadData", ctypes.byref(module), ctypes.c_char_p(_PTX))
                self._check(cuda, "cuModuleGetFunction", ctypes.byref(function), module, b"spin")
                self._check(cuda, "cuMemAlloc_v2", ctypes.byref(buffer), ctypes.c_size_t(BUFFER_BYTES))
                out, rounds = ctypes.c_uint64(buffer.value), ctypes.c_uint32(_ROUNDS)
                parameters = (ctypes.c_void_p * 2)(ctypes.cast(ctypes.byref(out), ctypes.c_void_p),
                                                   ctypes.cast(ctypes.byref(rounds), ctypes.c_void_p))
                self._ready.set()
                while not self._stop.is_set():
                    self._check(cuda, "cuLaunchKernel", function, _BLOCKS, 1, 1, _THREADS, 1, 1, 0, None,
                                parameters, None)
                    self._check(cuda, "cuCtxSynchronize")
                    self.launches += 1
                self._check(cuda, "cuMemFree_v2", buffer)
            finally:
                cuda.cuCtxDestroy_v2(context)
        except (CudaError, OSError, AttributeError) as error:
            self.error = error if isinstance(error, CudaError) else CudaError(f"cannot use {self.library}: {error}")
        finally:
            self._ready.set()

    def __enter__(self) -> GpuLoad:
        self._thread = threading.Thread(target=self._run, name="gpu-load", daemon=True)
        self._thread.start()
        self._ready.wait(60)
        if self.error is not None:
            raise self.error
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(60)

    def run_for(self, seconds: float) -> None:
        """Block for `seconds` while the load runs."""
        time.sleep(seconds)
