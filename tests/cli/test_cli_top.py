#!/usr/bin/python3
# test_cli_top.py: perfmon top hides the rows of perfmon's own groups and
# of callbacks that show nothing, unless asked (--all, or a at a terminal)
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import json
import os
import re
import select
import subprocess
import sys
import time
import unittest

from clitest import BusTestCase, CliTestCase

# A Python program as users write them, run under perfmon run: it works
# 20 ms every 100 ms, so that its own callback has a row with figures.
PROGRAM = '''
from gi.repository import GLib


def work():
    end = GLib.get_monotonic_time() + 20_000
    while GLib.get_monotonic_time() < end:
        pass
    return GLib.SOURCE_CONTINUE


loop = GLib.MainLoop()
GLib.timeout_add(100, work)
GLib.timeout_add(60_000, loop.quit)
loop.run()
'''

ROW = re.compile(r'^(?P<name>.*?) +(?P<kind>thread|window|add-on|compt) +(?P<cpu>[0-9.]+) +'
                 r'(?P<blocked>[0-9.]+)(?P<counts>(?: +(?:\.|[0-9.]+[kM]?|\+\+M)){10})$')
HIDDEN = re.compile(r'^\((\d+) idle groups hidden: --all, or the a key, shows them\)$', re.M)


def rows(table):
    return [m.groupdict() for m in map(ROW.match, table.splitlines()) if m]


def shows_nothing(row):
    return (float(row['cpu']) == 0.0 and float(row['blocked']) == 0.0
            and row['counts'].split() == ['.'] * 10)


class TopTest(BusTestCase):
    def setUp(self):
        super().setUp()
        self.start_daemon()
        script = self.path('busy_loop.py')
        with open(script, 'w') as f:
            f.write(PROGRAM)
        self.program = self.start([os.environ['PERFMON_TOOL'], 'run', '--', '/usr/bin/python3', script],
                                  env=self.foreign_env(), stderr=subprocess.DEVNULL)

        def perfmon_groups():
            result = self.perfmon('snapshot', '--json')
            if result.returncode != 0:
                return None
            names = [g['name'] for g in json.loads(result.stdout)['groups']]
            return [n for n in names if n.startswith('[perfmon] ')] and \
                [n for n in names if n.startswith('__main__.work')]
        self.eventually(perfmon_groups, "the program's groups in perfmond", timeout=60)

    def test_idle_rows_hidden_unless_all(self):
        env = dict(self.env)
        env.pop('COLUMNS', None)   # in a pipe: names uncut
        result = self.perfmon('top', '--once', '--interval', '0.5', env=env)
        self.assertExit(result, 0)
        shown = rows(result.stdout)
        self.assertTrue(shown, result.stdout)
        # What is hidden: rows of perfmon's groups and of callbacks
        # (compartments) that show nothing; threads are always there.
        for row in shown:
            if row['name'].startswith('[perfmon] ') or row['kind'] == 'compt':
                self.assertFalse(shows_nothing(row), result.stdout)
        self.assertIn('thread', {row['kind'] for row in shown})
        # perfmon's export never runs once registered: hidden, and counted.
        self.assertNotIn('[perfmon] export', result.stdout)
        hidden = HIDDEN.search(result.stdout)
        self.assertIsNotNone(hidden, result.stdout)
        self.assertGreaterEqual(int(hidden.group(1)), 1)

        result = self.perfmon('top', '--once', '--all', '--interval', '0.5', env=env)
        self.assertExit(result, 0)
        self.assertIn('[perfmon] export', result.stdout)
        self.assertIsNone(HIDDEN.search(result.stdout), result.stdout)
        self.assertTrue(any(shows_nothing(row) for row in rows(result.stdout)), result.stdout)

        # --json is for programs: every group.
        result = self.perfmon('top', '--once', '--json', '--interval', '0.5', env=env)
        self.assertExit(result, 0)
        self.assertIn('[perfmon] export', {g['name'].split(' (')[0] for g in json.loads(result.stdout)['groups']})

    def test_a_key_shows_and_hides_them(self):
        import pty
        env = dict(self.env, COLUMNS='200')
        pid, fd = pty.fork()
        if pid == 0:
            os.execvpe(os.environ['PERFMON_TOOL'], ['perfmon', 'top', '--interval', '0.5'], env)
        output = b''

        def read_until(what, since, timeout=60):
            nonlocal output
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if what in output[since:]:
                    return True
                if select.select([fd], [], [], 0.5)[0]:
                    try:
                        output += os.read(fd, 65536)
                    except OSError:
                        break
            return what in output[since:]

        try:
            self.assertTrue(read_until(b'idle groups hidden', 0), output.decode(errors='replace')[-2000:])
            self.assertNotIn(b'[perfmon] export', output)
            mark = len(output)
            os.write(fd, b'a')
            self.assertTrue(read_until(b'[perfmon] export', mark), output.decode(errors='replace')[-2000:])
            mark = len(output)
            os.write(fd, b'a')
            self.assertTrue(read_until(b'idle groups hidden', mark), output.decode(errors='replace')[-2000:])
            # The last table, after the second a, hides them again.
            last = output[output.rindex(b'perfmon top:'):]
            if b'idle groups hidden' in last:
                self.assertNotIn(b'[perfmon] export', last)
            status, output = self.quit_with_q(pid, fd, output)
            self.assertTrue(os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status)
        finally:
            os.close(fd)


def matches(shown, name):
    """Whether @shown (a name abbreviated with "…") can stand for @name."""
    parts = shown.split('…')
    if len(parts) == 1:
        return shown == name
    if not (name.startswith(parts[0]) and name.endswith(parts[-1])):
        return False
    at = len(parts[0])
    for part in parts[1:-1]:
        at = name.find(part, at)
        if at < 0:
            return False
        at += len(part)
    return at <= len(name) - len(parts[-1])


class NarrowTableTest(CliTestCase):
    """At 80 columns the names are cut to 18 characters: each cut name
    still tells its group apart from the others of the table."""

    NAMES = ['[gtk] gdk_frame_clock_paint_idle (gtk4-demo, pid 1234)',
             '[gtk] gdk_frame_clock_flush_idle (gtk4-demo, pid 1234)',
             '[perfmon] run checkpoint (python3, pid 28972)',
             '[perfmon] export (python3, pid 28972)',
             'main thread (python3, pid 28972)',
             'main thread (gjs, pid 28973)',
             'window 12: Inbox',
             'window 13: Inbox']

    def snapshot(self, timestamp, cpu):
        groups = [{'id': i + 1, 'kind': 'thread' if name.startswith('main') else 'compartment',
                   'name': name, 'window_id': 0, 'addon_id': None, 'cpu_time': cpu * (i + 1),
                   'blocked_time': 0, 'ticks': cpu, 'durations': [cpu] + [0] * 9}
                  for i, name in enumerate(self.NAMES)]
        path = self.path('%d.json' % timestamp)
        with open(path, 'w') as f:
            json.dump({'version': 1, 'timestamp': timestamp, 'interval': 0, 'pid': 4242,
                       'process_name': 'perfmond aggregate', 'user_time': 0, 'system_time': 0,
                       'groups': groups}, f)
        return path

    def test_cut_names_tell_groups_apart(self):
        older = self.snapshot(1000000, 1)
        newer = self.snapshot(2000000, 5)
        result = self.perfmon('diff', older, newer, env=dict(self.env, COLUMNS='80'))
        self.assertExit(result, 0)
        lines = result.stdout.splitlines()
        for line in lines:
            self.assertLessEqual(len(line), 79, line)
        header = [line for line in lines if line.startswith('GROUP')][0]
        shown = [line[:header.index('KIND')].rstrip() for line in lines[lines.index(header) + 1:]
                 if line.strip()]
        self.assertEqual(len(shown), len(self.NAMES), result.stdout)
        for cut in shown:
            self.assertLessEqual(len(cut), 18, cut)
            self.assertEqual([n for n in self.NAMES if matches(cut, n)].__len__(), 1,
                             '%r stands for %r' % (cut, [n for n in self.NAMES if matches(cut, n)]))


if __name__ == '__main__':
    unittest.main(verbosity=2, argv=[sys.argv[0]])
