#!/usr/bin/python3
# test_cli_run_automatic.py: automatic groups of unmodified programs under
# perfmon run
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import json
import re
import os
import subprocess
import unittest

from clitest import CliTestCase

UNINSTRUMENTED = os.environ['PERFMON_UNINSTRUMENTED']
PYTHON_SOURCES = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'python_sources.py')


def compartments(summary):
    return {g['name']: g for g in summary['snapshot']['groups'] if g['kind'] == 'compartment'}


class RunAutomaticTest(CliTestCase):
    def run_summary(self, *command, env=None, threshold='100', own=True):
        summary = self.path('summary.json')
        # Leaks of programs not built here (python3) are not ours to find.
        env = self.foreign_env(env=env, own=own)
        env['PERFMON_RUN_NO_EXPORT'] = '1'
        result = self.perfmon('run', '--threshold', threshold, '--summary', summary, '--', *command,
                              env=env)
        with open(summary) as f:
            return result, json.load(f)

    def test_c_program_groups(self):
        result, data = self.run_summary(UNINSTRUMENTED)
        self.assertExit(result, 3)
        groups = compartments(data)
        # Its callbacks are static (no dynamic symbol): named by the
        # source's type and where the callback is.
        names = ' '.join(groups)
        self.assertRegex(names, r'GTimeoutSource \(uninstrumented-loop\+0x[0-9a-f]+\)')
        self.assertRegex(names, r'GIdleSource \(uninstrumented-loop\+0x[0-9a-f]+\)')
        for group in groups.values():
            self.assertLessEqual(len(group['name'].encode()), 95)
        hang = data['hangs'][0]
        self.assertRegex(hang['runnableName'], r'^GIdleSource \(uninstrumented-loop\+0x')
        self.assertEqual(hang['dispatches'][0]['name'], hang['runnableName'])
        self.assertGreaterEqual(hang['dispatches'][0]['duration'], 250)

    def test_interposed_adders_behave_as_glibs(self):
        # perfmon run reimplements g_idle_add & co. to see their attaches.
        result = self.perfmon('run', '--', os.environ['PERFMON_INTERPOSED_ADDERS'],
                              env=self.foreign_env(own=True))
        self.assertExit(result, 0)
        self.assertIn('interposed-adders: 0 failures', result.stdout)

    def test_no_automatic(self):
        env = dict(self.env)
        env['PERFMON_RUN_NO_AUTOMATIC'] = '1'
        result, data = self.run_summary(UNINSTRUMENTED, env=env)
        self.assertExit(result, 3)
        self.assertEqual(compartments(data), {})
        self.assertNotIn('dispatches', data['hangs'][0])

    def test_python_program(self):
        # /usr/bin/python3, the one with PyGObject, and an unmodified script.
        result, data = self.run_summary('/usr/bin/python3', PYTHON_SOURCES, own=False)
        self.assertExit(result, 0)
        self.assertIn('python_sources: done, ticks aaa', result.stdout)
        self.assertNotIn('not named', result.stderr)
        groups = compartments(data)
        for name in ['__main__.short_tick', '__main__.Worker.long_job', '__main__.other_short',
                     '__main__.quit']:
            self.assertIn(name, groups)
            self.assertGreaterEqual(groups[name]['ticks'], 1)
        self.assertGreater(groups['__main__.Worker.long_job']['cpu_time'], 0)
        # The 300 ms callback among the short ones is the hang's runnable.
        self.assertEqual(data['hang_count'], 1)
        hang = data['hangs'][0]
        self.assertEqual(hang['runnableName'], '__main__.Worker.long_job')
        self.assertEqual(hang['dispatches'][0]['name'], '__main__.Worker.long_job')
        self.assertGreaterEqual(hang['dispatches'][0]['duration'], 250)

    def test_work_after_the_loop_is_no_hang(self):
        # Once the main loop has returned, the program is ending: 400 ms of
        # clean-up (Python's finalization, exit handlers) is no hang of the
        # loop, and perfmon's own stop() at exit is never one either. A
        # loop run again later is watched again.
        script = '''
import time
from gi.repository import GLib, Gio

def spin(ms):
    end = time.monotonic() + ms / 1000
    while time.monotonic() < end:
        pass

def stop(loop):
    loop.quit()
    return GLib.SOURCE_REMOVE

def busy_then_stop(loop):
    spin(300)
    loop.quit()
    return GLib.SOURCE_REMOVE

loop = GLib.MainLoop()
GLib.timeout_add(300, stop, loop)
loop.run()
spin(400)
app = Gio.Application(application_id="org.perfmon.AfterLoop", flags=Gio.ApplicationFlags.NON_UNIQUE)
def activate(app):
    app.hold()
    GLib.timeout_add(300, lambda: (app.release(), GLib.SOURCE_REMOVE)[1])
app.connect("activate", activate)
app.run([])
spin(400)
loop = GLib.MainLoop()
GLib.timeout_add(300, busy_then_stop, loop)
loop.run()
spin(400)
print("done")
'''
        result, data = self.run_summary('/usr/bin/python3', '-c', script, own=False)
        self.assertExit(result, 0)
        self.assertIn('done', result.stdout)
        # The one hang is the 300 ms callback of the loop run again.
        self.assertEqual([h['runnableName'] for h in data['hangs']], ['__main__.busy_then_stop'],
                         data['hangs'])

    def test_python_hook_keeps_debian_sitecustomize(self):
        # The hook hides Debian's sitecustomize on sys.path and runs it.
        script = ('import sys, sitecustomize; '
                  'print("meta", any(type(f).__name__ == "_GLibOverridesFinder" for f in sys.meta_path))')
        result = self.perfmon('run', '--', '/usr/bin/python3', '-c', script,
                              env=self.foreign_env())
        self.assertExit(result, 0)
        self.assertIn('meta True', result.stdout)


    def test_python_hook_imports_nothing_heavy(self):
        # Every Python program under perfmon run pays for the hook's
        # imports (issue 22): it loads no module that a plain interpreter
        # start-up does not, but importlib.machinery (and importlib.util
        # where a sitecustomize of the system's runs: Debian has one).
        script = 'import sys; print("modules", " ".join(sorted(sys.modules)))'
        allowed = {'sitecustomize', 'importlib', 'importlib.machinery', 'importlib.util',
                   'importlib._abc', 'contextlib', 'collections', 'functools', 'keyword',
                   'operator', 'reprlib', 'types', '_collections', '_functools', '_operator',
                   'itertools', 'apport_python_hook', 'importlib._bootstrap',
                   'importlib._bootstrap_external', 'warnings'}

        def modules(result):
            self.assertExit(result, 0)
            line = [l for l in result.stdout.splitlines() if l.startswith('modules ')][0]
            return set(line.split()[1:])

        plain = modules(subprocess.run(['/usr/bin/python3', '-c', script], env=self.foreign_env(),
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       universal_newlines=True, timeout=60))
        run = modules(self.perfmon('run', '--', '/usr/bin/python3', '-c', script, env=self.foreign_env()))
        self.assertEqual(run - plain - allowed, set())
    def test_identical_hangs_are_merged(self):
        # A Python program that hangs the same way six times: one block in
        # the summary, with the count and the range of durations, though
        # each stack stops at another step of the interpreter and another
        # address of each function.
        script = '''
from gi.repository import GLib

n = 0

def busy():
    global n
    now = GLib.get_monotonic_time
    end = now() + 250_000
    while now() < end:
        pass
    n += 1
    if n == 6:
        loop.quit()
    return n < 6

loop = GLib.MainLoop()
GLib.timeout_add(20, busy)
loop.run()
'''
        env = self.foreign_env(own=False)
        env['PERFMON_RUN_NO_EXPORT'] = '1'
        result = self.perfmon('run', '--threshold', '100', '--', '/usr/bin/python3', '-c', script,
                              env=env)
        self.assertExit(result, 0)
        n_hangs = int(re.search(r'hangs: (\d+) \(threshold 100 ms\)', result.stderr).group(1))
        # A hang is promised only when the watchdog gets a core in time.
        self.assertGreaterEqual(n_hangs, 1, result.stderr)
        # Blocks: the first line and the labels line of each.
        lines = result.stderr.split('\n')
        blocks = [(l, lines[i + 1]) for i, l in enumerate(lines) if l.startswith('  - ')]
        # Every hang is in one block, counted.
        counts = [int(m.group(1)) if m else 1
                  for m in (re.match(r'  - (\d+) hangs', b[0]) for b in blocks)]
        self.assertEqual(sum(counts), n_hangs, result.stderr)
        # The hangs inside busy() (labels ending in it: another hang, such
        # as a slow checkpoint write between two calls, has other labels)
        # are one block.
        in_busy = [b for b in blocks if re.search(r'> busy \(<string>:\d+\)$', b[1])]
        self.assertEqual(len(in_busy), 1, result.stderr)
        if counts[blocks.index(in_busy[0])] >= 2:
            self.assertRegex(in_busy[0][0], r'^  - \d+ hangs of \d+( to \d+)? ms \(wall\) in '
                             r'__main__\.busy, same stack$')
        self.assertLess(len(lines), 20 + 20 * len(blocks), result.stderr)


if __name__ == '__main__':
    unittest.main()
