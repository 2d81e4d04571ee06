#!/usr/bin/python3
# test_cli_daemon.py: perfmon snapshot, diff, top and hangs against perfmond
# and monitored processes, each test on its own private bus
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import json
import os
import subprocess
import unittest

from clitest import BusTestCase

EXAMPLE = os.environ['PERFMON_EXAMPLE']


class DaemonCliTest(BusTestCase):
    def start_example(self):
        example = self.start([EXAMPLE, '--export', '--seconds', '60'],
                             stdout=subprocess.DEVNULL)
        self.eventually(lambda: self.perfmon('snapshot', '--pid', str(example.pid)).returncode == 0,
                        'the example to register with perfmond')
        return example

    def snapshot_json(self, pid):
        result = self.perfmon('snapshot', '--pid', str(pid), '--json')
        self.assertExit(result, 0)
        return json.loads(result.stdout)

    def test_snapshot_json_has_the_process_groups(self):
        self.start_daemon()
        example = self.start_example()
        data = self.snapshot_json(example.pid)
        self.assertEqual(data['pid'], example.pid)
        self.assertEqual(data['process_name'], 'perfmon-example')
        names = {(g['kind'], g['name']) for g in data['groups']}
        for expected in [('window', 'window 1: Inbox'), ('window', 'window 2: Editor'),
                         ('addon', 'Spell checker'), ('addon', 'Sync agent'),
                         ('addon', 'Clock widget'), ('compartment', 'spell-checker')]:
            self.assertIn(expected, names)
        self.assertIn('thread', {g['kind'] for g in data['groups']})

        # The table names them too, in 80 columns.
        result = self.perfmon('snapshot', '--pid', str(example.pid))
        self.assertExit(result, 0)
        self.assertIn('Spell checker', result.stdout)
        for line in result.stdout.splitlines():
            self.assertLessEqual(len(line), 80, line)

    def test_aggregate_snapshot(self):
        self.start_daemon()
        self.start_example()
        # The aggregate of every process, the add-ons merged in.
        result = self.perfmon('snapshot', '--json')
        self.assertExit(result, 0)
        aggregate = json.loads(result.stdout)
        self.assertEqual(aggregate['process_name'], 'perfmond aggregate')
        self.assertIn('Spell checker', {g['name'] for g in aggregate['groups']})

    def test_snapshot_files_diff(self):
        self.start_daemon()
        example = self.start_example()
        first = self.path('first.json')
        second = self.path('second.json')
        self.assertExit(self.perfmon('snapshot', '--pid', str(example.pid), '-o', first), 0)

        def newer():
            self.assertExit(self.perfmon('snapshot', '--pid', str(example.pid), '-o', second), 0)
            with open(first) as a, open(second) as b:
                return json.load(b)['timestamp'] > json.load(a)['timestamp']
        self.eventually(newer, 'perfmond to poll the example again')

        result = self.perfmon('diff', first, second)
        self.assertExit(result, 0)
        self.assertIn('Spell checker', result.stdout)
        result = self.perfmon('diff', '--json', first, second)
        self.assertExit(result, 0)
        self.assertGreater(json.loads(result.stdout)['interval'], 0)

    def test_top_once_json(self):
        self.start_daemon()
        example = self.start_example()
        result = self.perfmon('top', '--pid', str(example.pid), '--once', '--json',
                              '--interval', '0.5')
        self.assertExit(result, 0)
        lines = result.stdout.splitlines()
        self.assertEqual(len(lines), 1)
        table = json.loads(lines[0])
        self.assertGreater(table['interval'], 0)
        for group in table['groups']:
            self.assertIn('cpu_percent', group)
            self.assertGreaterEqual(group['cpu_percent'], 0)

        result = self.perfmon('top', '--pid', str(example.pid), '--count', '2',
                              '--interval', '0.5')
        self.assertExit(result, 0)
        self.assertEqual(result.stdout.count('GROUP'), 2)
        for line in result.stdout.splitlines():
            self.assertLessEqual(len(line), 80, line)

    def test_hangs_show_names_the_addon(self):
        self.start_daemon()
        example = self.start_example()

        # A stall of the sync agent: it sleeps at least 200 ms in it, with
        # the StallingAddon annotation. On a busy machine other runs of the
        # sync agent (its short blocking call plus the CPU it waits for) may
        # pass the threshold too, without the annotation: the stall is the
        # hang that has it. The example names its sources after its tasks.
        def stall_of_example():
            result = self.perfmon('hangs', 'list', '--json')
            self.assertExit(result, 0)
            found = []
            for h in json.loads(result.stdout):
                if (h['pid'] == example.pid and h['runnable_name'] == 'sync-agent'
                        and h['duration'] >= 200):
                    shown = self.perfmon('hangs', 'show', h['id'])
                    self.assertExit(shown, 0)
                    if 'StallingAddon = sync@example.org' in shown.stdout:
                        found.append(h)
            return found
        hangs = self.eventually(stall_of_example, 'a stall of the example', timeout=30)

        result = self.perfmon('hangs', 'show', hangs[0]['id'])
        self.assertExit(result, 0)
        self.assertIn('StallingAddon = sync@example.org', result.stdout)
        self.assertIn('add-on sync@example.org', result.stdout)
        self.assertRegex(result.stdout, r'Stack tree of \d+ hangs? of pid %d in sync-agent' % example.pid)
        result = self.perfmon('hangs', 'list')
        self.assertExit(result, 0)
        self.assertIn(hangs[0]['id'], result.stdout)

        result = self.perfmon('hangs', 'show', 'no-such-hang')
        self.assertExit(result, 1)
        self.assertIn('no-such-hang', result.stderr)

    def test_run_exports_an_unmodified_program(self):
        self.start_daemon()
        waiter = self.start([os.environ['PERFMON_TOOL'], 'run', '--summary', self.path('s.json'),
                             '--', 'gdbus', 'wait', '--session', '--timeout', '30',
                             'org.example.Nothing'], env=self.foreign_env())
        self.eventually(lambda: self.perfmon('snapshot', '--pid', str(waiter.pid)).returncode == 0,
                        'gdbus under perfmon run to register')
        data = self.snapshot_json(waiter.pid)
        self.assertIn('thread', {g['kind'] for g in data['groups']})

    def test_run_forwards_hangs_while_the_program_sleeps(self):
        # The preload module queues the hang monitor's signals on a private
        # context; the program's loop, asleep after its hang, must still
        # wake to pass the hang on to perfmond.
        self.start_daemon()
        program = self.start([os.environ['PERFMON_TOOL'], 'run', '--threshold', '100',
                              '--summary', self.path('s.json'), '--',
                              os.environ['PERFMON_UNINSTRUMENTED'], '30'],
                             env=self.foreign_env(own=True), stdout=subprocess.DEVNULL)

        def hang_of_program():
            result = self.perfmon('hangs', 'list', '--json')
            self.assertExit(result, 0)
            return [h for h in json.loads(result.stdout) if h['pid'] == program.pid]
        hangs = self.eventually(hang_of_program, 'the hang of the program under perfmon run')
        self.assertEqual(hangs[0]['process_name'], 'uninstrumented-loop')
        self.assertIsNone(program.poll(), 'the program should still be running')

    def test_unknown_pid(self):
        self.start_daemon()
        result = self.perfmon('snapshot', '--pid', '999999999')
        self.assertExit(result, 1)
        self.assertTrue(result.stderr.startswith('perfmon: '), result.stderr)

    def test_no_daemon(self):
        for args in (['snapshot'], ['top', '--once'], ['hangs']):
            with self.subTest(args=args):
                result = self.perfmon(*args)
                self.assertExit(result, 1)
                self.assertIn('perfmond', result.stderr)

    def test_no_bus(self):
        env = dict(self.env)
        env['DBUS_SESSION_BUS_ADDRESS'] = 'unix:path=' + self.path('no-bus-here')
        result = self.perfmon('snapshot', env=env)
        self.assertExit(result, 1)
        self.assertIn('session bus', result.stderr)


if __name__ == '__main__':
    unittest.main(verbosity=2)
