#!/usr/bin/python3
# test_task_log.py: PerfmonTaskLog through PyGObject
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# argv[1] is tests/write-task-log, which records idle → thread pool →
# invoke back under a key source event and prints the three task ids.

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import gi
gi.require_version('Perfmon', '1')
from gi.repository import GLib, Perfmon  # noqa: E402

WRITER = sys.argv.pop(1)


class TaskLogTest(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.mkdtemp(prefix='perfmon-task-log-py-')
        self.addCleanup(shutil.rmtree, tmp)
        self.path = os.path.join(tmp, 'chain.tasks')
        out = subprocess.run([WRITER, self.path], stdout=subprocess.PIPE, check=True,
                             universal_newlines=True).stdout
        self.ids = [int(i, 16) for i in out.split()]
        self.log = Perfmon.TaskLog.new_from_file(self.path)

    def test_tasks(self):
        tasks = self.log.get_tasks()
        self.assertEqual([t.get_id() for t in tasks], self.ids)
        self.assertEqual([t.get_name() for t in tasks],
                         ['writer_step_one', 'writer_step_two', 'writer_step_three'])
        first = self.log.find_task(self.ids[0])
        self.assertTrue(first.is_root())
        self.assertEqual(first.get_source_event_type(), Perfmon.SourceEventType.KEY)
        self.assertEqual(first.get_labels(), ['the chain starts'])
        self.assertEqual(first.get_process_name(), 'write-task-log')
        ok, begin, end = first.get_run(0)
        self.assertTrue(ok)
        self.assertLessEqual(first.get_dispatch_time(), begin)
        self.assertLessEqual(begin, end)
        self.assertIsNone(self.log.find_task(1))

    def test_questions(self):
        self.assertEqual(self.log.find_ancestors(self.ids[2]), [self.ids[1], self.ids[0]])
        self.assertEqual(self.log.find_followers(self.ids[0]), [self.ids[1], self.ids[2]])
        self.assertEqual(self.log.find_blockers(self.ids[1]), [])
        self.assertEqual(self.log.find_ancestors(1), [])

    def test_questions_as_tasks(self):
        # The API that JavaScript needs (ids as text, tasks for ids).
        tasks = [self.log.find_task_by_id_string('0x%x' % i) for i in self.ids]
        self.assertEqual([t.get_id() for t in tasks], self.ids)
        self.assertEqual(tasks[2].dup_id_string(), '0x%x' % self.ids[2])
        self.assertEqual(tasks[2].dup_parent_id_string(), '0x%x' % self.ids[1])
        self.assertEqual(self.log.find_task_by_serial(tasks[2].get_process(), tasks[2].get_serial()).get_id(),
                         self.ids[2])
        self.assertEqual([t.get_id() for t in self.log.get_ancestor_tasks(tasks[2])], [self.ids[1], self.ids[0]])
        self.assertEqual([t.get_id() for t in self.log.get_follower_tasks(tasks[0])], [self.ids[1], self.ids[2]])
        self.assertEqual(self.log.get_blocker_tasks(tasks[1]), [])
        self.assertEqual(self.log.get_parent(tasks[1]).get_id(), self.ids[0])
        self.assertIsNone(self.log.get_parent(tasks[0]))
        self.assertIsNone(self.log.find_task_by_id_string('0x0x1'))

    def test_chrome_trace(self):
        events = json.loads(self.log.to_chrome_trace())['traceEvents']
        starts = [e['id'] for e in events if e['ph'] == 's']
        finishes = [e['id'] for e in events if e['ph'] == 'f']
        self.assertEqual(sorted(starts), sorted(finishes))
        # Steps two and three; step one's dispatch, from no task, is left
        # out: no slice encloses it, the tools would drop it.
        self.assertEqual(len(set(starts)), 2)
        slices = [e for e in events if e['ph'] == 'X']
        self.assertEqual({int(e['args']['task_id'], 16) for e in slices}, set(self.ids))

    def test_chrome_trace_named(self):
        # The run slices take the names the function gives (None: as
        # written); labels and flows keep theirs.
        calls = []

        def name(process, text):
            calls.append((process, text))
            return None if text == 'writer_step_two' else text.upper()
        events = json.loads(self.log.to_chrome_trace_named(name))['traceEvents']
        self.assertEqual(sorted(t for _, t in calls), ['writer_step_one', 'writer_step_three', 'writer_step_two'])
        self.assertEqual({p for p, _ in calls}, {self.log.find_task(self.ids[0]).get_process()})
        self.assertEqual(sorted(e['name'] for e in events if e['ph'] == 'X'),
                         ['WRITER_STEP_ONE', 'WRITER_STEP_THREE', 'writer_step_two'])
        self.assertIn('the chain starts', [e['name'] for e in events if e['ph'] == 'i'])
        self.assertEqual(json.loads(self.log.to_chrome_trace_named(None)), json.loads(self.log.to_chrome_trace()))

    def test_errors(self):
        with self.assertRaises(GLib.Error) as caught:
            Perfmon.TaskLog.new_from_file(os.path.join(os.path.dirname(self.path), 'missing'))
        self.assertEqual(caught.exception.domain, 'g-file-error-quark')
        corrupt = self.path + '.corrupt'
        with open(self.path, 'rb') as f, open(corrupt, 'wb') as out:
            out.write(f.read()[:100])
        with self.assertRaises(GLib.Error) as caught:
            Perfmon.TaskLog.new_from_file(corrupt)
        self.assertIn('past the end of the file', caught.exception.message)


if __name__ == '__main__':
    unittest.main(verbosity=2)
