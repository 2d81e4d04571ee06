#!/usr/bin/python3
# bench-run.py: what "perfmon run" with its defaults (hang monitor,
# automatic groups, jank traces, summary, export) costs a program that
# dispatches empty idles, in C and in PyGObject:
# - callgrind instructions per empty idle dispatch, plain and under
#   perfmon run (the difference of a run with 2N and one with N
#   dispatches, divided by N: start-up and exit cancel out; the smallest
#   of BENCH_CALLGRIND_REPEATS tries), of the main thread (the watched
#   one) and of all threads;
# - CPU ratios (perfmon run / plain) in interleaved rounds, with medians
#   and the machine's load: of the whole runs, and per dispatch (a run of
#   N dispatches less one of 1, start-up and exit left out);
# - the CPU of start-up and exit (a run of one dispatch), and what the
#   built-in add-on rules add to it.
# Prints figures, asserts nothing. By hand:
#   meson compile -C _build && meson test -C _build --benchmark bench-run -v
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

TOOL = os.environ['PERFMON_TOOL']
C_PROGRAM = os.environ['IDLE_DISPATCHES']
PY_PROGRAM = [ '/usr/bin/python3', os.environ['IDLE_DISPATCHES_PY'] ]
ROUNDS = int(os.environ.get('BENCH_ROUNDS', '7'))
CPU_DISPATCHES = int(os.environ.get('BENCH_DISPATCHES', '2000000'))
PY_CPU_DISPATCHES = int(os.environ.get('BENCH_PY_DISPATCHES', '300000'))
CALLGRIND_REPEATS = int(os.environ.get('BENCH_CALLGRIND_REPEATS', '3'))

tmp = tempfile.mkdtemp(prefix='bench-run-')
env = dict(os.environ)
env['XDG_STATE_HOME'] = os.path.join(tmp, 'state')
env['TMPDIR'] = tmp


def run(argv, perfmon):
    if perfmon:
        argv = [TOOL, 'run', '--'] + argv
    start = time.monotonic()
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = status
    return usage.ru_utime + usage.ru_stime, time.monotonic() - start


# Under callgrind, with the monitor's time thresholds stretched this much
# (PERFMON_RUN_TIME_DILATION, _perfmon_monitor_dilate_time()), as
# bench-layers does: see per_dispatch().
CALLGRIND_DILATION = 1000


def callgrind(argv, perfmon, n, dilated=False):
    """Instructions of the whole process and of its main thread (the
    watched one), callgrind's --separate-threads: its first file."""
    out = os.path.join(tmp, 'callgrind.out')
    vg = ['valgrind', '--tool=callgrind', '--separate-threads=yes', '--callgrind-out-file=' + out]
    argv = vg + argv + [str(n)]
    if perfmon:
        argv = [TOOL, 'run', '--'] + argv
    for name in os.listdir(tmp):
        if name.startswith('callgrind.out'):
            os.unlink(os.path.join(tmp, name))
    run_env = dict(env)
    if dilated:
        run_env['PERFMON_RUN_TIME_DILATION'] = str(CALLGRIND_DILATION)
    subprocess.run(argv, env=run_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    total = 0
    main = None
    for name in sorted(os.listdir(tmp)):
        if not name.startswith('callgrind.out-'):
            continue
        with open(os.path.join(tmp, name)) as f:
            for line in f:
                m = re.match(r'(summary|totals): (\d+)', line)
                if m:
                    total += int(m.group(2))
                    if main is None:
                        main = int(m.group(2))
                    break
    if main is None:
        raise RuntimeError('no total in ' + out)
    return total, main


def per_dispatch(argv, perfmon, n, dilated=False):
    """(all threads, main thread) instructions per dispatch: the difference
    of a run of 2N and one of N dispatches, over N, so that start-up and
    exit cancel out; the smallest of CALLGRIND_REPEATS tries of each. Under
    valgrind a dispatch takes some 50 times longer than natively, so what
    perfmon does by the clock weighs 50 times more per dispatch: what it
    does once a second (the checkpoint, on its own thread), a hang that a
    loaded machine's preemption makes of a slow iteration, measures that
    pass the 25 µs after which the monitor reads the CPU clock. The
    smallest of a few tries is the run least disturbed by them. @dilated:
    the monitor's thresholds stretched CALLGRIND_DILATION times, so that
    it reads the CPU clock about as often per dispatch as natively (where
    an empty iteration is far below 25 µs): the figure of the goal; the
    raw one is printed beside it."""
    small = [callgrind(argv, perfmon, n, dilated) for _ in range(CALLGRIND_REPEATS)]
    large = [callgrind(argv, perfmon, 2 * n, dilated) for _ in range(CALLGRIND_REPEATS)]
    return tuple((min(l[i] for l in large) - min(s[i] for s in small)) / n for i in (0, 1))


def load():
    """The machine's load, as `uptime` says it."""
    try:
        return subprocess.run(['uptime'], stdout=subprocess.PIPE, universal_newlines=True).stdout.strip()
    except OSError:
        with open('/proc/loadavg') as f:
            return 'load average: ' + ' '.join(f.read().split()[:3])


print('bench-run: perfmon run with its defaults (%s)' % TOOL)
print('load before: %s' % load())
if shutil.which('valgrind'):
    for name, argv, n in (('C', [C_PROGRAM], 20000), ('PyGObject', PY_PROGRAM, 5000)):
        plain, plain_main = per_dispatch(argv, False, n)
        for dilated in (True, False):
            perfmon, perfmon_main = per_dispatch(argv, True, n, dilated)
            print('callgrind %-9s instructions per empty idle dispatch (%s), main thread: plain %.0f, '
                  'perfmon run %.0f (+%.0f, %.2fx); all threads: plain %.0f, perfmon run %.0f (+%.0f)'
                  % (name, 'native paths, thresholds x%d' % CALLGRIND_DILATION if dilated else 'raw',
                     plain_main, perfmon_main, perfmon_main - plain_main, perfmon_main / plain_main,
                     plain, perfmon, perfmon - plain))
else:
    print('valgrind is not installed: no instruction counts')

# CPU: C and PyGObject in the same rounds, each round running the four
# (program, plain or perfmon run) in an order swapped every round, so that
# both ratios see the same moments of the machine's load. Each also runs
# with one dispatch: the difference is the dispatches' own CPU, start-up
# and exit left out (perfmon run's start-up, some tens of ms, is not what
# a dispatch costs, and a short run makes it weigh).
CASES = (('C', [C_PROGRAM], CPU_DISPATCHES),
         ('PyGObject', PY_PROGRAM, PY_CPU_DISPATCHES))
ratios = {name: [] for name, _, _ in CASES}
per_dispatch_ratios = {name: [] for name, _, _ in CASES}
plains = {name: [] for name, _, _ in CASES}
per_dispatch_ns = {name: ([], []) for name, _, _ in CASES}
startup_s = {name: ([], []) for name, _, _ in CASES}
for r in range(ROUNDS):
    for name, argv, n in (CASES if r % 2 == 0 else tuple(reversed(CASES))):
        order = (False, True) if r % 2 == 0 else (True, False)
        full = {p: run(argv + [str(n)], p)[0] for p in order}
        base = {p: run(argv + ['1'], p)[0] for p in order}
        startup_s[name][0].append(base[False])
        startup_s[name][1].append(base[True])
        ratios[name].append(full[True] / full[False])
        plains[name].append(full[False])
        each = {p: (full[p] - base[p]) / (n - 1) for p in order}
        per_dispatch_ns[name][0].append(each[False] * 1e9)
        per_dispatch_ns[name][1].append(each[True] * 1e9)
        per_dispatch_ratios[name].append(each[True] / each[False] if each[False] > 0 else float('nan'))
    print('  round %d: %s; %s' % (r + 1, ', '.join('%s %.3fx (per dispatch %.3fx)'
                                                   % (name, ratios[name][-1], per_dispatch_ratios[name][-1])
                                                   for name, _, _ in CASES), load()))
for name, argv, n in CASES:
    print('CPU %-9s %d dispatches, %d interleaved rounds: median ratio perfmon run / plain %.3fx '
          '(min %.3f, max %.3f; plain median %.3f s)'
          % (name, n, ROUNDS, statistics.median(ratios[name]), min(ratios[name]), max(ratios[name]),
             statistics.median(plains[name])))
    print('CPU %-9s per dispatch (a run of %d less one of 1): plain %.0f ns, perfmon run %.0f ns; '
          'median ratio %.3fx (min %.3f, max %.3f)'
          % (name, n, statistics.median(per_dispatch_ns[name][0]), statistics.median(per_dispatch_ns[name][1]),
             statistics.median(per_dispatch_ratios[name]), min(per_dispatch_ratios[name]),
             max(per_dispatch_ratios[name])))
    print('CPU %-9s start-up and exit (a run of 1 dispatch, all processes): plain %.1f ms, perfmon run %.1f ms '
          '(+%.1f ms, medians)'
          % (name, statistics.median(startup_s[name][0]) * 1e3, statistics.median(startup_s[name][1]) * 1e3,
             (statistics.median(startup_s[name][1]) - statistics.median(startup_s[name][0])) * 1e3))

# What reading the add-on rules' directories (perfmon_addon_rule_add_builtin(),
# in every process perfmon run starts) adds to its start-up: runs of one
# dispatch with and without them (PERFMON_RUN_NO_ADDONS=1), interleaved.
STARTUP_ROUNDS = int(os.environ.get('BENCH_STARTUP_ROUNDS', '21'))
with_rules, without_rules = [], []
for r in range(STARTUP_ROUNDS):
    for rules in ((True, False) if r % 2 == 0 else (False, True)):
        if not rules:
            env['PERFMON_RUN_NO_ADDONS'] = '1'
        (with_rules if rules else without_rules).append(run([C_PROGRAM, '1'], True)[0])
        env.pop('PERFMON_RUN_NO_ADDONS', None)
print('CPU start-up of perfmon run (C, %d interleaved rounds, medians): %.1f ms with the built-in add-on rules, '
      '%.1f ms without (PERFMON_RUN_NO_ADDONS=1): the rules cost %.1f ms'
      % (STARTUP_ROUNDS, statistics.median(with_rules) * 1e3, statistics.median(without_rules) * 1e3,
         (statistics.median(with_rules) - statistics.median(without_rules)) * 1e3))
print('load after: %s' % load())
shutil.rmtree(tmp, ignore_errors=True)
