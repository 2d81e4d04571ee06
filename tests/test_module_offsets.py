#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# test_module_offsets.py PRINT-MODULE-OFFSETS
#
# Frame offsets follow Breakpad's convention, pc - (load bias + vaddr of the
# first PT_LOAD segment), for a non-PIE executable (first segment at
# 0x400000) as for a shared library (first segment at 0): checked against
# the addresses `nm` gives and the segments `readelf` lists.
import re
import subprocess
import sys


def first_load_vaddr(path):
    out = subprocess.run(['readelf', '-lW', path], check=True,
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        fields = line.split()
        if fields and fields[0] == 'LOAD':
            return int(fields[2], 16)
    raise AssertionError('no LOAD segment in ' + path)


def is_pie(path):
    out = subprocess.run(['readelf', '-hW', path], check=True,
                         capture_output=True, text=True).stdout
    return re.search(r'Type:\s+EXEC', out) is None


def nm_address(path, name, dynamic=False):
    args = ['nm', '-D' if dynamic else '--defined-only', path]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[2] == name:
            return int(fields[0], 16)
    raise AssertionError(name + ' not in nm of ' + path)


def main():
    program = sys.argv[1]
    out = subprocess.run([program], check=True, capture_output=True, text=True).stdout
    rows = {}
    module0 = None
    for line in out.splitlines():
        fields = line.split()
        if fields[0] == 'module0':
            module0 = fields[1]
        else:
            assert len(fields) == 3, line
            rows[fields[0]] = (int(fields[1]), int(fields[2], 16))

    assert not is_pie(program), 'the helper must be a non-PIE executable'
    vaddr = first_load_vaddr(program)
    assert vaddr != 0, vaddr
    print('# non-PIE executable, first PT_LOAD at 0x%x' % vaddr)
    for name in ('offsets_static_function', 'offsets_global_function'):
        index, offset = rows[name]
        expected = nm_address(program, name) - vaddr
        print('# %s: perfmon 0x%x, nm - first PT_LOAD 0x%x' % (name, offset, expected))
        assert index == 0, (name, index)
        assert offset == expected, (name, hex(offset), hex(expected))
    assert module0 is not None

    # A shared library: first segment at 0, the offset is nm's address.
    libglib = subprocess.run(['sh', '-c', 'ldd "$1" | sed -n "s/.*libglib-2.0.so.0 => \\([^ ]*\\).*/\\1/p"',
                              'sh', program], check=True, capture_output=True, text=True).stdout.strip()
    index, offset = rows['g_main_loop_run']
    assert index != 0
    expected = nm_address(libglib, 'g_main_loop_run', dynamic=True) - first_load_vaddr(libglib)
    print('# g_main_loop_run in %s: perfmon 0x%x, nm 0x%x' % (libglib, offset, expected))
    assert offset == expected, (hex(offset), hex(expected))
    print('ok')


main()
