#!/usr/bin/python3
# bench-shell-addons.py: the cost of add-on attribution (issue 24, point 8):
# GNOME Shell 43 (headless) under "perfmon run" with attribution on and off
# (PERFMON_RUN_NO_ADDONS=1), idle and with a busy extension (the CPU burner
# of tests/shell/test_shell_extensions.py, 20 ms every 200 ms), in
# interleaved rounds: the shell's CPU over a window once it is up (each
# thread's schedstat), and that of perfmon's own threads, whose difference
# on and off is what attribution costs them; medians, the load quoted.
# Prints figures, asserts nothing. BENCH_SHELL_ROUNDS (3) rounds of
# BENCH_SHELL_SECONDS (30) per case, after BENCH_SHELL_SETTLE (10) seconds
# of start-up. BENCH_SHELL_CASES (idle,busy,count) picks the parts.
#
# Then, counting (the 2 % the issue allows is below what CPU ratios on a
# shared machine resolve): what attribution costs per source made and per
# handler connected from JavaScript (tests/bench/gjs_source_creation.js
# under perfmon run, on and off, BENCH_SHELL_OPS (2000) of each from 30
# frames deep, interleaved rounds, medians of the thread's CPU), times how
# often the shell walks its JavaScript stack for it (calls of
# JS::CaptureCurrentStack(), the walk, and of JS::FormatStackDump(), its
# rare fallback, counted by perf uprobes over BENCH_SHELL_SECONDS, when
# perf and uprobes are there), over the shell's CPU in that window.
# Last, deterministic: the instructions attribution runs per source made
# and per handler connected from JavaScript with an add-on known
# (valgrind's callgrind, collecting in perfmon's two creation hooks only),
# BENCH_SHELL_CG_OPS (200) of each, 5 and 30 frames deep.
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'shell'))
from gnome_shell_session import GnomeShellSession, gnome_shell_path  # noqa: E402
from test_shell_extensions import BURNER, CALM  # noqa: E402

ROUNDS = int(os.environ.get('BENCH_SHELL_ROUNDS', '3'))
SECONDS = float(os.environ.get('BENCH_SHELL_SECONDS', '30'))
SETTLE = float(os.environ.get('BENCH_SHELL_SETTLE', '10'))
OPS = int(os.environ.get('BENCH_SHELL_OPS', '2000'))
CREATION = os.path.join(HERE, 'gjs_source_creation.js')
MOZJS = '/usr/lib/x86_64-linux-gnu/libmozjs-102.so.0'
# What a creation site's walk calls: the saved frames' capture, and the
# dump where they cannot name the site.
WALK_SYMBOLS = (('capture', '_ZN2JS19CaptureCurrentStackEP9JSContextNS_13MutableHandleIP8JSObjectEEON7mozilla7'
                 'VariantIJNS_9AllFramesENS_9MaxFramesENS_18FirstSubsumedFrameEEEE'),
                ('dump', '_ZN2JS15FormatStackDumpEP9JSContextbbb'))


def load():
    with open('/proc/loadavg') as f:
        return ' '.join(f.read().split()[:3])


def one(attribution, busy):
    tmp = tempfile.mkdtemp(prefix='bench-shell-addons-')
    env = {} if attribution else {'PERFMON_RUN_NO_ADDONS': '1'}
    with GnomeShellSession(perfmon_args=['--summary', os.path.join(tmp, 'summary.json')],
                           extensions=[BURNER] if busy else [], extra_env=env) as shell:
        time.sleep(SETTLE)
        before = shell.thread_cpu_seconds()
        start = time.monotonic()
        time.sleep(SECONDS)
        after = shell.thread_cpu_seconds()
        elapsed = time.monotonic() - start
        shell.stop()
    spent = {name: after[name] - before.get(name, 0) for name in after}
    # The shell's CPU, and perfmon's threads' (the watchdog, whose JS
    # samples are what attribution adds to a busy shell; the checkpoint
    # writer), each thread by its schedstat.
    return (sum(spent.values()) / elapsed,
            sum(v for name, v in spent.items() if name.startswith('perfmon')) / elapsed)


if gnome_shell_path() is None:
    print('bench-shell-addons: gnome-shell is not installed')
    sys.exit(0)
print('bench-shell-addons: %d interleaved rounds of %.0f s per case (after %.0f s of start-up)'
      % (ROUNDS, SECONDS, SETTLE))
print('load before: %s' % load())
CASES = os.environ.get('BENCH_SHELL_CASES', 'idle,busy,count').split(',')
for busy in [b for b, name in ((False, 'idle'), (True, 'busy')) if name in CASES]:
    ons, offs, ratios, own_ons, own_offs = [], [], [], [], []
    for r in range(ROUNDS):
        order = (False, True) if r % 2 == 0 else (True, False)
        results = {a: one(a, busy) for a in order}
        offs.append(results[False][0])
        ons.append(results[True][0])
        own_offs.append(results[False][1])
        own_ons.append(results[True][1])
        ratios.append(ons[-1] / offs[-1] if offs[-1] > 0 else float('nan'))
        print('  %s round %d: shell CPU attribution off %.2f %%, on %.2f %% (%.3fx); perfmon threads off '
              '%.2f ms/s, on %.2f ms/s; load %s'
              % ('busy' if busy else 'idle', r + 1, offs[-1] * 100, ons[-1] * 100, ratios[-1],
                 own_offs[-1] * 1000, own_ons[-1] * 1000, load()))
    own_extra = statistics.median(own_ons) - statistics.median(own_offs)
    print('%s median: off %.2f %%, on %.2f %%, ratio %.3fx; perfmon threads off %.2f ms/s, on %.2f ms/s: '
          'attribution adds %.2f ms/s there, %.2f %% of the shell\'s CPU (off)'
          % ('busy' if busy else 'idle', statistics.median(offs) * 100, statistics.median(ons) * 100,
             statistics.median(ratios), statistics.median(own_offs) * 1000, statistics.median(own_ons) * 1000,
             own_extra * 1000, own_extra / statistics.median(offs) * 100))


def per_operation(attribution, addon_known):
    """CPU µs per source made and per handler connected from JavaScript; with
    @addon_known, a rule of an add-on none of whose code runs (as in a shell
    with extensions: every site is looked for an add-on's frames)."""
    env = dict(os.environ, PERFMON_RUN_NO_EXPORT='1')
    env['XDG_STATE_HOME'] = tempfile.mkdtemp(prefix='bench-shell-addons-state-')
    if not attribution:
        env['PERFMON_RUN_NO_ADDONS'] = '1'
    rule = ['--addon-path', '/nonexistent/bench-addon=bench'] if addon_known else []
    out = subprocess.run([os.environ.get('PERFMON_TOOL', 'perfmon'), 'run'] + rule + ['--', 'gjs', '-m', CREATION,
                          str(OPS), '30'], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         universal_newlines=True, check=True).stdout
    shutil.rmtree(env['XDG_STATE_HOME'], ignore_errors=True)
    result = json.loads([line for line in out.splitlines() if line.startswith('{')][-1])
    return result['sources_us'] / OPS, result['handlers_us'] / OPS


def stack_walks_per_second(extensions):
    """Calls per second of each of WALK_SYMBOLS in the shell with
    @extensions, attribution on, and the shell's CPU share in that window:
    ({name: rate}, share); None without perf or uprobes."""
    if shutil.which('perf') is None or not os.path.exists(MOZJS):
        return None
    events = {}
    try:
        for name, symbol in WALK_SYMBOLS:
            event = 'i24bench_%s_%d' % (name, os.getpid())
            added = subprocess.run(['perf', 'probe', '-q', '-x', MOZJS, '--no-demangle', '-a',
                                    '%s=%s' % (event, symbol)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
            if not added:
                return None
            events[name] = event
        tmp = tempfile.mkdtemp(prefix='bench-shell-addons-')
        with GnomeShellSession(perfmon_args=['--summary', os.path.join(tmp, 'summary.json')],
                               extensions=extensions) as shell:
            time.sleep(SETTLE)
            before = shell.cpu_seconds()
            start = time.monotonic()
            stat = subprocess.run(['perf', 'stat', '-x,'] +
                                  [a for e in events.values() for a in ('-e', 'probe_libmozjs:' + e)] +
                                  ['-p', str(shell.shell_pid), '--', 'sleep', str(SECONDS)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, universal_newlines=True)
            used = shell.cpu_seconds() - before
            elapsed = time.monotonic() - start
            shell.stop()
        rates = {}
        for name, event in events.items():
            counts = [line.split(',')[0] for line in stat.stderr.splitlines() if event in line]
            if not counts or not counts[0].isdigit():
                return None
            rates[name] = int(counts[0]) / elapsed
        return rates, used / elapsed
    finally:
        for event in events.values():
            subprocess.run(['perf', 'probe', '-q', '-d', 'probe_libmozjs:' + event],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


if 'count' in CASES and shutil.which('gjs') is not None:
    print('per operation from JavaScript, %d of each from 30 frames deep (CPU µs; interleaved rounds):' % OPS)
    extra = {}
    for addon_known in (False, True):
        costs = {True: [], False: []}
        for r in range(ROUNDS):
            for attribution in ((False, True) if r % 2 == 0 else (True, False)):
                costs[attribution].append(per_operation(attribution, addon_known))
        source_on = statistics.median(c[0] for c in costs[True])
        source_off = statistics.median(c[0] for c in costs[False])
        handler_on = statistics.median(c[1] for c in costs[True])
        handler_off = statistics.median(c[1] for c in costs[False])
        what = 'an add-on known' if addon_known else 'no add-on known'
        print('  %s: source made: off %.1f µs, on %.1f µs (+%.1f µs); handler connected: off %.1f µs, '
              'on %.1f µs (+%.1f µs)' % (what, source_off, source_on, source_on - source_off,
                                        handler_off, handler_on, handler_on - handler_off))
        extra[addon_known] = max(source_on - source_off, handler_on - handler_off)
    for what, extensions in (('idle, no extension', []), ('idle, a calm extension', [CALM]),
                             ('busy extension', [BURNER])):
        walks = stack_walks_per_second(extensions)
        if walks is None:
            print('  stack walks in the shell: not counted (no perf, or no uprobes)')
            break
        rates, share = walks
        rate = rates['capture']
        # A walk costs the "add-on known" figure; without an extension the
        # shell makes no walk but where a callback cannot be read.
        cost = extra[True]
        print('  shell %s, attribution on: %.1f stack walks/s (%.2f dumps/s: the fallback, and samples of long dispatches), '
              'shell CPU %.2f %%; at +%.1f µs each: %.3f %% of a CPU, %.2f %% of the shell\'s CPU'
              % (what, rate, rates['dump'], share * 100, cost, rate * cost / 1e4,
                 rate * cost / 1e4 / (share * 100) * 100 if share > 0 else float('nan')))


def instructions_per_operation(depth):
    """Instructions (callgrind's Ir) in the creation hooks per source made
    and per handler connected from @depth frames deep, an add-on known."""
    tmp = tempfile.mkdtemp(prefix='bench-shell-addons-cg-')
    env = dict(os.environ, PERFMON_RUN_NO_EXPORT='1', XDG_STATE_HOME=tmp)
    out = os.path.join(tmp, 'callgrind.out')
    ops = int(os.environ.get('BENCH_SHELL_CG_OPS', '200'))
    try:
        subprocess.run([os.environ.get('PERFMON_TOOL', 'perfmon'), 'run', '--addon-path',
                        '/nonexistent/bench-addon=bench', '--', 'valgrind', '--tool=callgrind',
                        '--callgrind-out-file=' + out, '--toggle-collect=_perfmon_js_site_source_attached',
                        '--toggle-collect=_perfmon_js_site_handler_connected',
                        'gjs', '-m', CREATION, str(ops), str(depth)],
                       env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        with open(out) as f:
            totals = [int(line.split()[1]) for line in f if line.startswith('totals:')]
        return totals[0] / (2 * ops) if totals else None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if 'count' in CASES and shutil.which('gjs') is not None and shutil.which('valgrind') is not None:
    print('instructions per source made or handler connected, an add-on known (callgrind):')
    for depth in (5, 30):
        print('  %d frames deep: %.0f' % (depth, instructions_per_operation(depth)))
print('load after: %s' % load())
