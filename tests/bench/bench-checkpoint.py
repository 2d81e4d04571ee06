#!/usr/bin/python3
# bench-checkpoint.py: what the periodic checkpoints of "perfmon run" cost
# and how fresh they keep the summary, on a program that knows nothing of
# perfmon (periodic-hang: a timeout busy BUSY ms in every 100, no hang):
# - checkpoints written while the loop ran (renames and exchanges of the
#   process's file, counted by strace) and the mean interval between
#   them: how old the summary of a killed process can be;
# - the writer thread's ("perfmon-ckpt") CPU per checkpoint, read from its
#   schedstat while it runs, and the watched thread's part (the
#   "[perfmon] run checkpoint" group);
# - the disk's write requests during the run (/proc/diskstats, for the
#   device of TMPDIR; the machine's other writers count too: compare with
#   the idle figure printed first).
# Prints figures, asserts nothing. By hand:
#   meson compile -C _build && meson test -C _build --benchmark bench-checkpoint -v
# BENCH_CHECKPOINT_BUSY (ms in 100, default "90 30"), _GROUPS (automatic
# groups the program makes first, default "0 200": a large program's
# snapshot), _SECONDS (8), _ROUNDS (3), TMPDIR (where the run's directory
# goes).
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'cli'))
import run_checkpoints  # noqa: E402

TOOL = os.environ['PERFMON_TOOL']
PROGRAM = os.environ['PERIODIC_HANG']
BUSY = [int(b) for b in os.environ.get('BENCH_CHECKPOINT_BUSY', '90 30').split()]
GROUPS = [int(g) for g in os.environ.get('BENCH_CHECKPOINT_GROUPS', '0 200').split()]
SECONDS = int(os.environ.get('BENCH_CHECKPOINT_SECONDS', '8'))
ROUNDS = int(os.environ.get('BENCH_CHECKPOINT_ROUNDS', '3'))

tmp = tempfile.mkdtemp(prefix='bench-checkpoint-')
env = dict(os.environ)
env['XDG_STATE_HOME'] = os.path.join(tmp, 'state')


def device_of(path):
    """The /proc/diskstats name of the block device @path is on, or None."""
    dev = os.stat(path).st_dev
    link = '/sys/dev/block/%d:%d' % (os.major(dev), os.minor(dev))
    if not os.path.exists(link):
        return None
    name = os.path.basename(os.path.realpath(link))
    # A partition counts in its own line too.
    return name


def disk_writes(device):
    if device is None:
        return 0
    with open('/proc/diskstats') as f:
        for line in f:
            fields = line.split()
            if fields[2] == device:
                return int(fields[7])
    return 0


def one_run(busy, groups, index):
    summary = os.path.join(tmp, 'summary-%d-%d-%d.json' % (busy, groups, index))
    trace = os.path.join(tmp, 'strace-%d-%d-%d.txt' % (busy, groups, index))
    device = device_of(env.get('TMPDIR', tempfile.gettempdir()))
    before = disk_writes(device)
    process = subprocess.Popen(['strace', '-f', '-qq', '--seccomp-bpf', '-o', trace,
                                '-e', 'trace=access,rename,renameat,renameat2',
                                TOOL, 'run', '--threshold', '1000', '--summary', summary, '--',
                                PROGRAM, '100', str(busy), str(SECONDS), str(groups)],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    writer_ns = None
    child = None
    while process.poll() is None:
        if child is None:
            for path in glob.glob('/proc/[0-9]*/comm'):
                try:
                    with open(path) as f:
                        if f.read().strip() == 'periodic-hang':
                            child = int(path.split('/')[2])
                except (OSError, ValueError):
                    pass
        else:
            cpu = run_checkpoints.writer_cpu_us('periodic-hang') * 1000
            if cpu:
                writer_ns = cpu
        time.sleep(0.05)
    written = disk_writes(device) - before

    with open(summary) as f:
        figures = json.load(f)['processes'][0]
    take = [g for g in figures['snapshot']['groups'] if g.get('name') == '[perfmon] run checkpoint']
    n = len([w for w in run_checkpoints.replacements(trace, figures['pid'])[0] if w[0]])
    # The loop's length over the checkpoints written in it.
    interval = SECONDS / n if n else float('inf')
    return {
        'checkpoints': n,
        'interval': interval,
        'writer_us_each': (writer_ns or 0) / 1000 / max(n + 1, 1),
        'take_us_each': (take[0]['cpu_time'] / max(take[0]['ticks'], 1)) if take else 0,
        'loop_cpu_ms': figures['cpu_time'] / 1000,
        'disk_writes': written,
    }


def main():
    if shutil.which('strace') is None:
        print('bench-checkpoint: strace is not installed')
        return
    with open('/proc/loadavg') as f:
        print('load:', ' '.join(f.read().split()[:3]))
    device = device_of(env.get('TMPDIR', tempfile.gettempdir()))
    print('run directory in %s (device %s)' % (env.get('TMPDIR', tempfile.gettempdir()), device))
    before = disk_writes(device)
    time.sleep(SECONDS)
    print('the disk, idle for %d s: %d write requests' % (SECONDS, disk_writes(device) - before))
    for busy, groups in [(b, g) for b in BUSY for g in GROUPS]:
        results = [one_run(busy, groups, i) for i in range(ROUNDS)]
        def median(key):
            return statistics.median(r[key] for r in results)
        print('busy %d ms in 100, %d groups made first, %d s, %d rounds (medians):'
              % (busy, groups, SECONDS, ROUNDS))
        print('  checkpoints while the loop ran: %s (one every %.2f s)'
              % (' '.join(str(r['checkpoints']) for r in results), median('interval')))
        print('  writer thread CPU per checkpoint: %.0f µs; watched thread: %.0f µs'
              % (median('writer_us_each'), median('take_us_each')))
        print('  share of the loop\'s CPU: %.3f %%'
              % (100 * (median('writer_us_each') + median('take_us_each')) * median('checkpoints')
                 / 1000 / median('loop_cpu_ms')))
        print('  disk write requests during the run: %s' % ' '.join(str(r['disk_writes']) for r in results))
    shutil.rmtree(tmp, ignore_errors=True)


main()
