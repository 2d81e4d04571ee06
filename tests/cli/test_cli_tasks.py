#!/usr/bin/python3
# test_cli_tasks.py: perfmon tasks on a log the real tracer wrote
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# PERFMON_WRITE_TASK_LOG (tests/write-task-log) records, under a key
# source event, idle → thread pool → invoke back, and prints the three
# task ids in chain order.

import json
import os
import subprocess
import unittest

from clitest import CliTestCase

WRITER = os.environ['PERFMON_WRITE_TASK_LOG']


class TasksTest(CliTestCase):
    def setUp(self):
        super().setUp()
        self.log = self.path('chain.tasks')
        out = subprocess.run([WRITER, self.log], stdout=subprocess.PIPE, check=True,
                             universal_newlines=True, env=self.foreign_env(own=True)).stdout
        self.ids = out.split()
        self.assertEqual(len(self.ids), 3)

    def test_dump(self):
        result = self.perfmon('tasks', self.log, 'dump')
        self.assertExit(result, 0)
        self.assertIn('3 tasks', result.stdout)
        for task_id, name in zip(self.ids, ['writer_step_one', 'writer_step_two', 'writer_step_three']):
            line = [l for l in result.stdout.splitlines() if l.startswith(task_id)]
            self.assertEqual(len(line), 1, result.stdout)
            self.assertIn(name, line[0])
            self.assertIn('key', line[0])
        self.assertIn('label: the chain starts', result.stdout)

    def listed(self, command, task_id):
        result = self.perfmon('tasks', self.log, command, task_id)
        self.assertExit(result, 0)
        section = result.stdout.split('\n', 2)[2].split('\n', 1)[1]
        return [l.split()[0] for l in section.splitlines() if l.startswith('0x')]

    def test_ancestors_and_followers(self):
        self.assertEqual(self.listed('ancestors', self.ids[2]), [self.ids[1], self.ids[0]])
        self.assertEqual(self.listed('followers', self.ids[0]), [self.ids[1], self.ids[2]])
        self.assertEqual(self.listed('blockers', self.ids[1]), [])
        # Decimal ids work too.
        self.assertEqual(self.listed('ancestors', str(int(self.ids[1], 16))), [self.ids[0]])

    def test_export(self):
        out = self.path('trace.json')
        result = self.perfmon('tasks', self.log, 'export', out)
        self.assertExit(result, 0)
        with open(out) as f:
            events = json.load(f)['traceEvents']
        starts = {e['id'] for e in events if e['ph'] == 's'}
        finishes = {e['id'] for e in events if e['ph'] == 'f'}
        self.assertEqual(starts, finishes)
        self.assertEqual(len([e for e in events if e['ph'] == 'X']), 3)

    def test_export_error_names_the_path(self):
        # The user's path, not the temporary file it is written through.
        out = self.path(os.path.join('nonexistent', 'dir', 'trace.json'))
        result = self.perfmon('tasks', 'export', out, self.log)
        self.assertExit(result, 1)
        self.assertIn(out, result.stderr)
        self.assertNotRegex(result.stderr, r'trace\.json\.\w{6}')
        self.assertIn('No such file or directory', result.stderr)

    def test_verb_first(self):
        # Like the other commands: the verb, its argument, then the logs.
        result = self.perfmon('tasks', 'dump', self.log)
        self.assertExit(result, 0)
        self.assertIn('3 tasks', result.stdout)
        result = self.perfmon('tasks', 'ancestors', self.ids[2], self.log)
        self.assertExit(result, 0)
        self.assertIn(self.ids[0], result.stdout)
        out = self.path('trace.json')
        self.assertExit(self.perfmon('tasks', 'export', out, self.log), 0)
        self.assertTrue(os.path.exists(out))

    def test_json(self):
        result = self.perfmon('tasks', 'dump', '--json', self.log)
        self.assertExit(result, 0)
        data = json.loads(result.stdout)
        self.assertEqual(len(data['tasks']), 3)
        first = [t for t in data['tasks'] if t['id'] == int(self.ids[0], 16)][0]
        self.assertEqual(first['name'], 'writer_step_one')
        self.assertEqual(first['source_event_type'], 'key')
        self.assertIn('the chain starts', first['labels'])
        self.assertIn('dropped_records', data)

        result = self.perfmon('tasks', 'followers', self.ids[0], self.log, '--json')
        self.assertExit(result, 0)
        data = json.loads(result.stdout)
        self.assertEqual(data['task']['id'], int(self.ids[0], 16))
        self.assertEqual([t['id'] for t in data['followers']],
                         [int(self.ids[1], 16), int(self.ids[2], 16)])

    def test_errors(self):
        self.assertExit(self.perfmon('tasks', 'dump'), 2)
        self.assertExit(self.perfmon('tasks', 'ancestors', self.log), 2)
        self.assertExit(self.perfmon('tasks', self.log), 2)
        self.assertExit(self.perfmon('tasks', self.log, 'ancestors'), 2)
        self.assertExit(self.perfmon('tasks', self.log, 'ancestors', 'not-an-id'), 2)
        result = self.perfmon('tasks', self.log, 'ancestors', '0x1')
        self.assertExit(result, 1)
        self.assertIn('no task 0x1', result.stderr)
        corrupt = self.path('corrupt.tasks')
        with open(self.log, 'rb') as f:
            data = f.read()
        with open(corrupt, 'wb') as f:
            f.write(data[:len(data) - 5])
        result = self.perfmon('tasks', corrupt, 'dump')
        self.assertExit(result, 1)
        self.assertIn(corrupt, result.stderr)
        self.assertIn('past the end of the file', result.stderr)


if __name__ == '__main__':
    unittest.main(verbosity=2)
