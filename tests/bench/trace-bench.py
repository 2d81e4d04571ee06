#!/usr/bin/python3
# trace-bench.py: perfmond's /api/trace on a task log of many tasks (issue
# 23, point 10): the time to answer, now that it names a C program's
# static callbacks ("module+0xOFF (function)") as perfmon tasks export
# does. A stripped-of-nothing C program, built here, runs --tasks idle
# callbacks among 16 static functions under `perfmon run --trace`, then
# waits; the script times the first GET (the symbolizer loads the
# program's tables) and the next ones (its cache), and `perfmon tasks
# export` of the same log for comparison. Prints figures, asserts nothing.
#
# Usage: trace-bench.py [--tasks N] [--build DIR]
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(here))
from perfmond_fixture import Perfmond  # noqa: E402

PROGRAM = r"""
#include <stdlib.h>
#include <glib.h>

static guint left;
static GSourceFunc callbacks[16];

#define CALLBACK(n) static gboolean callback_##n (gpointer data) { return next (); }
static gboolean next (void);
CALLBACK(0) CALLBACK(1) CALLBACK(2) CALLBACK(3) CALLBACK(4) CALLBACK(5) CALLBACK(6) CALLBACK(7)
CALLBACK(8) CALLBACK(9) CALLBACK(10) CALLBACK(11) CALLBACK(12) CALLBACK(13) CALLBACK(14) CALLBACK(15)

static gboolean
next (void)
{
  if (left > 0)
    {
      left--;
      g_idle_add (callbacks[left % 16], NULL);
    }
  return G_SOURCE_REMOVE;
}

int
main (int argc, char *argv[])
{
  GSourceFunc all[16] = { callback_0, callback_1, callback_2, callback_3, callback_4, callback_5, callback_6,
                          callback_7, callback_8, callback_9, callback_10, callback_11, callback_12, callback_13,
                          callback_14, callback_15 };
  GMainLoop *loop = g_main_loop_new (NULL, FALSE);

  for (int i = 0; i < 16; i++)
    callbacks[i] = all[i];
  left = (guint) atoi (argv[1]);
  g_set_prgname ("trace-bench-program");
  /* One chain of idles, then nothing: the log is complete while it waits. */
  next ();
  g_timeout_add_seconds ((guint) atoi (argv[2]), (GSourceFunc) g_main_loop_quit, loop);
  g_main_loop_run (loop);
  return 0;
}
"""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--tasks', type=int, default=4000)
    parser.add_argument('--build', default=os.path.join(here, '..', '..', '_build'))
    args = parser.parse_args()
    build = os.path.abspath(args.build)
    perfmond = os.path.join(build, 'src', 'daemon', 'perfmond')
    perfmon = os.path.join(build, 'src', 'tools', 'perfmon')

    with tempfile.TemporaryDirectory(prefix='trace-bench-') as tmp:
        source = os.path.join(tmp, 'trace-bench-program.c')
        program = os.path.join(tmp, 'trace-bench-program')
        with open(source, 'w') as f:
            f.write(PROGRAM)
        flags = subprocess.run(['pkg-config', '--cflags', '--libs', 'glib-2.0'], capture_output=True,
                               text=True, check=True).stdout.split()
        subprocess.run(['cc', '-O2', '-g', '-o', program, source] + flags, check=True)

        load = subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()
        print(f'trace-bench: {args.tasks} tasks; uptime: {load}', flush=True)
        with Perfmond(perfmond, ['--poll-interval', '500']) as daemon:
            env = dict(daemon.env)
            url = None
            deadline = time.monotonic() + 60
            while url is None and time.monotonic() < deadline:
                result = subprocess.run([perfmon, 'view', '--print-url'], env=env, capture_output=True, text=True)
                url = result.stdout.strip() if result.returncode == 0 else None
                time.sleep(0.2)
            base, token = url.split('?token=')
            trace = os.path.join(tmp, 'run.trace')
            run = subprocess.Popen([perfmon, 'run', '--trace', trace, '--', program, str(args.tasks), '600'],
                                   env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                pid = 0
                while pid == 0:
                    time.sleep(0.2)
                    with open(f'/proc/{run.pid}/task/{run.pid}/children') as f:
                        children = f.read().split()
                    pid = int(children[0]) if children else 0
                request = urllib.request.Request(f'{base}api/trace?pid={pid}',
                                                 headers={'Authorization': 'Bearer ' + token})

                def get():
                    start = time.monotonic()
                    try:
                        with urllib.request.urlopen(request, timeout=60) as response:
                            body = response.read()
                    except urllib.error.HTTPError:
                        return None, 0
                    return body, time.monotonic() - start

                # Until the log holds every task (the tracer writes it in
                # batches). Only these GETs warm perfmond's symbolizer up:
                # the first one that returns all the tasks is timed cold
                # only if it was the first to see a static callback.
                deadline = time.monotonic() + 300
                first = None
                while time.monotonic() < deadline:
                    body, seconds = get()
                    if body is not None:
                        slices = [e['name'] for e in json.loads(body)['traceEvents'] if e.get('ph') == 'X']
                        if first is None and any('trace-bench-program+0x' in n for n in slices):
                            first = (seconds, len(slices))
                        if sum('callback_' in n for n in slices) >= args.tasks * 9 // 10:
                            break
                    time.sleep(0.5)
                named = sum('(callback_' in n for n in slices)
                times = []
                for _ in range(10):
                    body, seconds = get()
                    times.append(seconds)
                print(f'log: {os.path.getsize(trace)} bytes, {len(slices)} slices, {named} named callback_N; '
                      f'trace {len(body)} bytes')
                if first is not None:
                    print(f'first GET with static callbacks (symbolizer cold, {first[1]} slices): '
                          f'{first[0] * 1000:.1f} ms')
                print(f'10 GETs back to back: median {statistics.median(times) * 1000:.1f} ms, '
                      f'min {min(times) * 1000:.1f}, max {max(times) * 1000:.1f}')
                export_times = []
                for _ in range(5):
                    start = time.monotonic()
                    subprocess.run([perfmon, 'tasks', 'export', os.path.join(tmp, 'out.json'), trace], env=env,
                                   check=True, stderr=subprocess.DEVNULL)
                    export_times.append(time.monotonic() - start)
                print(f'perfmon tasks export of the same log (process start included): median '
                      f'{statistics.median(export_times) * 1000:.1f} ms')
            finally:
                run.terminate()
                run.wait()


if __name__ == '__main__':
    main()
