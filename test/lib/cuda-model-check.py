#!/usr/bin/env python3
"""Checks a --target=cuda model .so without a GPU; prints what it found.

  cuda-model-check.py MODEL.so LIBPIPEOPT_RT_CUDA.so

prints, one fact per line (FileCheck reads them, test/Models/compile-cuda-*):

  needed: libpipeopt_rt_cuda.so libcudart.so.13 libcublas.so.13 ...
  runpath: <the model's RUNPATH>
  fatbin 0: elf sm_90 kernels 12
  fatbin 0: ptx sm_90 isa 8.0 compressed
  launches: mgpuLaunchKernel
  library kernel: pipeopt_rt_gpu_matmul_f32        (cuBLAS; conv2d: cuDNN)
  unresolved: none                                 (or the mgpu* / gpu kernel
                                                    symbols libpipeopt_rt_cuda.so
                                                    does not define)
  manifest target: cuda

Fatbins (magic 0xBA55ED50) are found in the file's bytes. An `elf` entry is
a cubin: the toolkit's ptxas produced it for that architecture, so ptxas
accepted the generated PTX; its kernels are counted from the cubin's
`.text.<kernel>` sections. A `ptx` entry is the PTX the driver can JIT for
newer GPUs. The layout read is the fatbin container written by the
toolkit's `fatbinary` (a 16-byte header: magic, version, header size,
payload size; then entries whose header gives the kind (1 PTX, 2 ELF), the
payload size, the PTX/ELF version and the SM architecture). The dynamic
section and symbols are read with llvm-readelf / llvm-nm (on PATH).
"""
import json
import os
import re
import struct
import subprocess
import sys

FATBIN_MAGIC = 0xBA55ED50
EM_CUDA = 190


def cubin_kernels(elf):
    """Number of `.text.<name>` sections of a cubin (one per kernel)."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2:
        return None
    machine = struct.unpack_from("<H", elf, 18)[0]
    if machine != EM_CUDA:
        return None
    shoff = struct.unpack_from("<Q", elf, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    def section(i):
        base = shoff + i * shentsize
        name, _type, _flags, _addr, off, size = struct.unpack_from(
            "<IIQQQQ", elf, base)
        return name, off, size
    _, stroff, strsize = section(shstrndx)
    strtab = elf[stroff:stroff + strsize]
    count = 0
    for i in range(shnum):
        name = section(i)[0]
        end = strtab.find(b"\0", name)
        if strtab[name:end].startswith(b".text."):
            count += 1
    return count


def fatbins(data):
    """Lines describing every fatbin entry of `data`."""
    lines = []
    magic = struct.pack("<I", FATBIN_MAGIC)
    pos, index = data.find(magic), 0
    while pos >= 0:
        _, version, header, size = struct.unpack_from("<IHHQ", data, pos)
        if version != 1 or header != 16 or pos + header + size > len(data):
            pos = data.find(magic, pos + 4)
            continue
        p, end = pos + header, pos + header + size
        while p + 64 <= end:
            (kind, _, ehs, psize, csize, _, minor, major, arch,
             _, _, _flags) = struct.unpack_from("<HHIQIIHHIIIQ", data, p)
            payload = data[p + ehs:p + ehs + psize]
            if kind == 2:
                kernels = cubin_kernels(payload)
                what = ("elf sm_%d kernels %d" % (arch, kernels)
                        if kernels is not None else
                        "elf sm_%d (not a cubin)" % arch)
            elif kind == 1:
                what = "ptx sm_%d isa %d.%d%s" % (
                    arch, major, minor, " compressed" if csize else "")
            else:
                what = "kind %d sm_%d" % (kind, arch)
            lines.append("fatbin %d: %s" % (index, what))
            p += ehs + psize
        index += 1
        pos = data.find(magic, end)
    return lines


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True,
                          text=True).stdout


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: cuda-model-check.py MODEL.so LIBPIPEOPT_RT_CUDA.so")
    model, rt = sys.argv[1], sys.argv[2]
    dynamic = run("llvm-readelf", "-d", model)
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic)
    print("needed: " + " ".join(needed))
    runpath = re.findall(r"\(RUNPATH\)\s+Library runpath: \[([^\]]+)\]",
                         dynamic)
    print("runpath: " + (runpath[0] if runpath else "none"))

    lines = fatbins(open(model, "rb").read())
    for line in lines:
        print(line)
    if not lines:
        print("fatbin: none")

    undefined = set(run("llvm-nm", "-D", "--undefined-only", "-j",
                        model).split())
    if "mgpuLaunchKernel" in undefined:
        print("launches: mgpuLaunchKernel")
    for name in sorted(undefined):
        m = re.fullmatch(r"_mlir_ciface_(pipeopt_rt_gpu_\w+)", name)
        if m:
            print("library kernel: " + m.group(1))
    defined = set(run("llvm-nm", "-D", "--defined-only", "-j", rt).split())
    device = {s for s in undefined
              if s.startswith("mgpu") or "pipeopt_rt_gpu_" in s}
    missing = sorted(device - defined)
    print("unresolved: " + (" ".join(missing) if missing else "none"))

    manifest = os.path.splitext(model)[0] + ".manifest.json"
    if os.path.exists(manifest):
        m = json.load(open(manifest))
        print("manifest target: %s" % m.get("target", "cpu"))
        if "training" in m:
            print("manifest training: %s" % " ".join(sorted(m["training"])))
    sys.exit(0 if lines and not missing else 1)


if __name__ == "__main__":
    main()
