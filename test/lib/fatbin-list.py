#!/usr/bin/env python3
"""List the CUDA fatbins embedded in a file (a --target=cuda model .so).

For every fatbin (magic 0xBA55ED50) it prints one line per entry:

  fatbin 0: elf sm_90 kernels 12
  fatbin 0: ptx sm_90 isa 8.0 compressed

An `elf` entry is a cubin: the toolkit's ptxas produced it for that
architecture, so ptxas accepted the generated PTX. Its kernels are counted
from the cubin's `.text.<kernel>` sections. A `ptx` entry is the PTX the
driver can JIT for newer GPUs. Exits 1 when the file holds no fatbin.

The layout read here is the fatbin container of the CUDA toolkit (a 16-byte
header: magic, version, header size, payload size; then entries, each with a
header giving its kind (1 PTX, 2 ELF), payload size, PTX/ELF version and
SM architecture), as written by `fatbinary` and `nvcc -fatbin`.
"""
import struct
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


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: fatbin-list.py FILE")
    data = open(sys.argv[1], "rb").read()
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
                        if kernels is not None else "elf sm_%d (not a cubin)" % arch)
            elif kind == 1:
                what = "ptx sm_%d isa %d.%d%s" % (
                    arch, major, minor, " compressed" if csize else "")
            else:
                what = "kind %d sm_%d" % (kind, arch)
            print("fatbin %d: %s" % (index, what))
            p += ehs + psize
        index += 1
        pos = data.find(magic, end)
    if index == 0:
        print("no fatbin in " + sys.argv[1], file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
