# run_checkpoints.py: reading what a process under "perfmon run" did for its
# checkpoints, for tests/cli/test_cli_run_offthread.py and
# tests/bench/bench-checkpoint.py: the replacements of its summary file in
# an strace log, and its writer thread's CPU.
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import glob
import os
import re


def replacements(trace, pid):
    """The successful renames and exchanges of "<@pid>.json" in the strace
    log @trace of periodic-hang, in order: (whether its loop ran then, the
    call), and whether the loop's end mark was seen last (True: it was)."""
    target = '/%d.json"' % pid
    writes = []
    in_loop = None
    with open(trace) as f:
        for line in f:
            if 'periodic-hang: loop starts' in line:
                in_loop = True
            elif 'periodic-hang: loop ends' in line:
                in_loop = False
            elif re.search(r'\brename\w*\(', line) and target in line and line.rstrip().endswith('= 0'):
                writes.append((in_loop, line.split(None, 1)[1].strip()))
    return writes, in_loop is False


def writer_cpu_us(program):
    """The CPU, µs, of the perfmon-ckpt thread of a process named @program
    (of this user's), 0 if there is none."""
    for comm in glob.glob('/proc/[0-9]*/task/[0-9]*/comm'):
        try:
            with open(comm) as f:
                if f.read().strip() != 'perfmon-ckpt':
                    continue
            with open(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(comm))), 'comm')) as f:
                if f.read().strip() != program[:15]:
                    continue
            with open(os.path.join(os.path.dirname(comm), 'schedstat')) as f:
                return int(f.read().split()[0]) // 1000
        except (OSError, ValueError, IndexError):
            pass
    return 0
