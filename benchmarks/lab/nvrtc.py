#!/usr/bin/env python3
"""Compile a .cu with NVRTC (as tessera does) for sm_90; print the ptxas log; write the cubin."""
import ctypes, sys, os
lib = ctypes.CDLL(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '.tools/python/nvidia/cu13/lib/libnvrtc.so.13'))
src = open(sys.argv[1]).read()
out = sys.argv[2]
extra = sys.argv[3:]
prog = ctypes.c_void_p()
r = lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"lab.cu", 0, None, None)
assert r == 0, r
opts = [b"--gpu-architecture=sm_90", b"--ptxas-options=-v", b"--std=c++17", b"-lineinfo"] + [e.encode() for e in extra]
arr = (ctypes.c_char_p * len(opts))(*opts)
r = lib.nvrtcCompileProgram(prog, len(opts), arr)
n = ctypes.c_size_t()
lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
log = ctypes.create_string_buffer(n.value)
lib.nvrtcGetProgramLog(prog, log)
print(log.value.decode())
if r != 0: sys.exit(1)
lib.nvrtcGetCUBINSize(prog, ctypes.byref(n))
buf = ctypes.create_string_buffer(n.value)
lib.nvrtcGetCUBIN(prog, buf)
open(out, 'wb').write(buf.raw)
