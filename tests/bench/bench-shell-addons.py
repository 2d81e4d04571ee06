#!/usr/bin/python3
# bench-shell-addons.py: the cost of add-on attribution (issue 24, point 8):
# GNOME Shell 43 (headless) under "perfmon run" with attribution on and off
# (PERFMON_RUN_NO_ADDONS=1), idle and with a busy extension (the CPU burner
# of tests/shell/test_shell_extensions.py, 20 ms every 200 ms), in
# interleaved rounds: the shell's CPU over a window once it is up, medians,
# the load quoted. Prints figures, asserts nothing. BENCH_SHELL_ROUNDS (3)
# rounds of BENCH_SHELL_SECONDS (30) per case, after BENCH_SHELL_SETTLE (10)
# seconds of start-up.
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'shell'))
from gnome_shell_session import GnomeShellSession, gnome_shell_path  # noqa: E402
from test_shell_extensions import BURNER  # noqa: E402

ROUNDS = int(os.environ.get('BENCH_SHELL_ROUNDS', '3'))
SECONDS = float(os.environ.get('BENCH_SHELL_SECONDS', '30'))
SETTLE = float(os.environ.get('BENCH_SHELL_SETTLE', '10'))


def load():
    with open('/proc/loadavg') as f:
        return ' '.join(f.read().split()[:3])


def one(attribution, busy):
    tmp = tempfile.mkdtemp(prefix='bench-shell-addons-')
    env = {} if attribution else {'PERFMON_RUN_NO_ADDONS': '1'}
    with GnomeShellSession(perfmon_args=['--summary', os.path.join(tmp, 'summary.json')],
                           extensions=[BURNER] if busy else [], extra_env=env) as shell:
        time.sleep(SETTLE)
        before = shell.cpu_seconds()
        start = time.monotonic()
        time.sleep(SECONDS)
        used = shell.cpu_seconds() - before
        elapsed = time.monotonic() - start
        shell.stop()
    return used / elapsed


if gnome_shell_path() is None:
    print('bench-shell-addons: gnome-shell is not installed')
    sys.exit(0)
print('bench-shell-addons: %d interleaved rounds of %.0f s per case (after %.0f s of start-up)'
      % (ROUNDS, SECONDS, SETTLE))
print('load before: %s' % load())
for busy in (False, True):
    ons, offs, ratios = [], [], []
    for r in range(ROUNDS):
        order = (False, True) if r % 2 == 0 else (True, False)
        results = {a: one(a, busy) for a in order}
        offs.append(results[False])
        ons.append(results[True])
        ratios.append(results[True] / results[False] if results[False] > 0 else float('nan'))
        print('  %s round %d: shell CPU attribution off %.2f %%, on %.2f %% (%.3fx); load %s'
              % ('busy' if busy else 'idle', r + 1, offs[-1] * 100, ons[-1] * 100, ratios[-1], load()))
    print('%s median: off %.2f %%, on %.2f %%, ratio %.3fx'
          % ('busy' if busy else 'idle', statistics.median(offs) * 100, statistics.median(ons) * 100,
             statistics.median(ratios)))
print('load after: %s' % load())
