#!/usr/bin/python3
# bench-startup.py: what "perfmon run" adds to each process a shell script
# starts: a script of N commands (/bin/true, which knows nothing of GLib:
# the preload module and its libraries load in every process all the
# same), its CPU (the whole tree's, from wait4()) over N, in interleaved
# rounds, medians:
# - plain;
# - under perfmon run;
# - under perfmon run, each command given a wrong cycle-counter rate
#   (PERFMON_RUN_CYCLES_PER_US): it calibrates in full (2 ms of spinning),
#   as every process did before the rate was handed down.
# Prints figures, asserts nothing. By hand:
#   meson compile -C _build && meson test -C _build --benchmark bench-startup -v
# BENCH_STARTUP_COMMANDS (100), BENCH_STARTUP_ROUNDS (7).
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import os
import shutil
import statistics
import subprocess
import tempfile

TOOL = os.environ['PERFMON_TOOL']
COMMANDS = int(os.environ.get('BENCH_STARTUP_COMMANDS', '100'))
ROUNDS = int(os.environ.get('BENCH_STARTUP_ROUNDS', '7'))

tmp = tempfile.mkdtemp(prefix='bench-startup-')
env = dict(os.environ)
env['XDG_STATE_HOME'] = os.path.join(tmp, 'state')
env['TMPDIR'] = tmp

SCRIPT = ('i=0; while [ $i -lt %d ]; do %s/bin/true; i=$((i+1)); done')


def run(perfmon, spoil):
    argv = ['/bin/sh', '-c', SCRIPT % (COMMANDS, 'PERFMON_RUN_CYCLES_PER_US=1 ' if spoil else '')]
    if perfmon:
        argv = [TOOL, 'run', '--'] + argv
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    return (usage.ru_utime + usage.ru_stime) / COMMANDS


def load():
    with open('/proc/loadavg') as f:
        return ' '.join(f.read().split()[:3])


CASES = (('plain', False, False), ('perfmon run', True, False),
         ('perfmon run, rate not handed down', True, True))
print('bench-startup: %d commands (/bin/true) in a shell script, %d interleaved rounds' % (COMMANDS, ROUNDS))
print('load before: %s' % load())
results = {name: [] for name, _, _ in CASES}
for r in range(ROUNDS):
    for name, perfmon, spoil in (CASES if r % 2 == 0 else tuple(reversed(CASES))):
        results[name].append(run(perfmon, spoil))
plain = statistics.median(results['plain'])
for name, _, _ in CASES:
    median = statistics.median(results[name])
    print('CPU per command, %-34s %.2f ms (+%.2f ms over plain; rounds %s)'
          % (name + ':', median * 1e3, (median - plain) * 1e3,
             ' '.join('%.2f' % (x * 1e3) for x in results[name])))
print('load after: %s' % load())
shutil.rmtree(tmp, ignore_errors=True)
