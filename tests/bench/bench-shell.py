#!/usr/bin/python3
# bench-shell.py: GNOME Shell 43 (headless) with and without "perfmon run":
# the shell's CPU over a window once it is up, in interleaved rounds
# (medians, the load quoted), and perfmon's own groups in ms per second
# of the shell's main thread, as perfmon measures them (from the shell's
# start to the window's end, served over D-Bus: the summary's figures are
# a checkpoint's, since SIGINT kills the shell). Prints figures,
# asserts nothing. BENCH_SHELL_ROUNDS (3) pairs of BENCH_SHELL_SECONDS (60)
# each, after BENCH_SHELL_SETTLE (10) seconds of start-up. BENCH_SHELL_BUSY=1:
# with a busy extension in both (the CPU burner of
# tests/shell/test_shell_extensions.py, 20 ms every 200 ms). The CPU is
# each thread's schedstat (GnomeShellSession.thread_cpu_seconds()),
# printed per thread, with how often the main thread was preempted and
# the watchdog slept (each of its wake-ups follows a sleep), a second:
# on these VMs a wake-up that preempts the main thread costs it more than
# the watchdog's own work.
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'shell'))
from gnome_shell_session import GnomeShellSession, gnome_shell_path  # noqa: E402
from test_shell_extensions import BURNER  # noqa: E402

ROUNDS = int(os.environ.get('BENCH_SHELL_ROUNDS', '3'))
SECONDS = float(os.environ.get('BENCH_SHELL_SECONDS', '60'))
SETTLE = float(os.environ.get('BENCH_SHELL_SETTLE', '10'))
BUSY = os.environ.get('BENCH_SHELL_BUSY') == '1'


def load():
    with open('/proc/loadavg') as f:
        return ' '.join(f.read().split()[:3])


def one(perfmon):
    tmp = tempfile.mkdtemp(prefix='bench-shell-')
    summary = os.path.join(tmp, 'summary.json')
    args = ['--summary', summary] if perfmon else None
    with GnomeShellSession(perfmon_args=args, extensions=[BURNER] if BUSY else []) as shell:
        time.sleep(SETTLE)
        threads_before = shell.thread_cpu_seconds()
        sleeps_before = shell.thread_switches('perfmon-hang')[0]
        preempted_before = shell.thread_switches('main')[1]
        start = time.monotonic()
        time.sleep(SECONDS)
        threads = shell.thread_cpu_seconds()
        sleeps = shell.thread_switches('perfmon-hang')[0] - sleeps_before
        preempted = shell.thread_switches('main')[1] - preempted_before
        elapsed = time.monotonic() - start
        # After the window: the call's own work is not in it.
        snapshot = shell.perfmon_snapshot() if perfmon else None
        spent = {name: (threads[name] - threads_before.get(name, 0)) / elapsed for name in threads}
        used = sum(spent.values())
        own_threads = sum(v for name, v in spent.items() if name.startswith('perfmon'))
        print('    %s threads (ms/s): %s' % ('perfmon run' if perfmon else 'plain', ', '.join(
            '%s %.2f' % (name, spent[name] * 1000)
            for name in sorted(spent, key=lambda n: -spent[n]) if spent[name] >= 0.00001)))
        print('    %s: the main thread was preempted %.1f times a second%s'
              % ('perfmon run' if perfmon else 'plain', preempted / elapsed,
                 ', the watchdog (perfmon-hang) slept %.1f times' % (sleeps / elapsed) if perfmon else ''))
        pid = shell.shell_pid
        shell.stop()
    own = None
    if perfmon:
        with open(summary) as f:
            processes = json.load(f)['processes']
        found = [p for p in processes if p['pid'] == pid]
        if not found:
            print('    the shell (pid %d) is not in the summary: %s'
                  % (pid, [(p['pid'], p['process_name']) for p in processes]))
            return used, float('nan'), own_threads
        # From its start to the window's end, served over D-Bus: SIGINT
        # kills the shell, so the summary holds its last checkpoint's
        # figures, which for an idle shell are its first 2 s.
        groups = [g for g in snapshot['groups'] if g.get('name', '').startswith('[perfmon]')]
        own = sum(g['cpu_time'] for g in groups) / 1000 / ((snapshot['timestamp'] - found[0]['start_time']) / 1e6)
    return used, own, own_threads


if gnome_shell_path() is None:
    print('bench-shell: gnome-shell is not installed')
    sys.exit(0)
print('bench-shell: %d interleaved rounds of %.0f s (after %.0f s of start-up), %s'
      % (ROUNDS, SECONDS, SETTLE, 'a busy extension (20 ms every 200 ms)' if BUSY else 'idle'))
print('load before: %s' % load())
ratios, plains, unders, owns, own_threads = [], [], [], [], []
for r in range(ROUNDS):
    order = (False, True) if r % 2 == 0 else (True, False)
    results = {p: one(p) for p in order}
    plain, under = results[False][0], results[True][0]
    plains.append(plain)
    unders.append(under)
    owns.append(results[True][1])
    own_threads.append(results[True][2] * 1000)
    ratios.append(under / plain if plain > 0 else float('nan'))
    print('  round %d: shell CPU plain %.2f %%, perfmon run %.2f %% (%.3fx); perfmon own groups %.3f ms/s, '
          'threads %.3f ms/s; load %s'
          % (r + 1, plain * 100, under * 100, ratios[-1], owns[-1], own_threads[-1], load()))
print('median: shell CPU plain %.2f %%, perfmon run %.2f %%, ratio %.3fx; perfmon own groups %.3f ms/s, '
      'threads %.3f ms/s'
      % (statistics.median(plains) * 100, statistics.median(unders) * 100,
         statistics.median(ratios), statistics.median(owns), statistics.median(own_threads)))
# What perfmon itself runs, measured directly (its threads by schedstat,
# its sources by its own groups), against the plain shell: a share that
# the shell's own swings from run to run (10-30 % idle) do not blur. What
# it adds to each of the shell's dispatches is not in it: an idle shell
# iterates about once a second, so that is some ns per second there.
print('perfmon\'s own work: %.3f ms/s, %.2f %% of the plain shell\'s CPU (median %.2f ms/s)'
      % (statistics.median(owns) + statistics.median(own_threads),
         (statistics.median(owns) + statistics.median(own_threads)) / statistics.median(plains) / 10,
         statistics.median(plains) * 1000))
print('load after: %s' % load())
