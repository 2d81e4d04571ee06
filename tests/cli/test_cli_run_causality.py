#!/usr/bin/python3
# test_cli_run_causality.py: what perfmon run finds in an unmodified
# program without its help: synchronous D-Bus calls as blocked time, and
# tasks across threads
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Blocked time: tests/uninstrumented-dbus-call (and Debian's gdbus) call a
# peer on a private bus that answers 300 ms late; the calls must show as at
# least that much blocked time in the summary's snapshot. (The reply cannot
# come before the peer's delay: a lower bound, not a timing.)
#
# Causality: tests/uninstrumented-gtask janks, then, in the 3 s of the jank
# trace's capture (which starts when the jank is detected), runs idle →
# g_task_run_in_thread → completion callback; the jank trace holds the
# GTask's run in the pool as a task, and, with the per-dispatch hook of
# issue 12 part A, the idle and the completion as its parent and child.

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import unittest

from clitest import BusTestCase, CliTestCase

DBUS_CALL = os.environ['PERFMON_UNINSTRUMENTED_DBUS_CALL']
GTASK = os.environ['PERFMON_UNINSTRUMENTED_GTASK']
PEER = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'slow_dbus_peer.py')
DELAY_MS = 300
NAME = 'org.perfmon.test.SlowPeer'
PATH = '/org/perfmon/test/SlowPeer'
INTERFACE = 'org.perfmon.test.SlowPeer'

# The idle and the completion callback are tasks only through core/'s
# per-dispatch hook (issue 12 part A, which calls the tracer's dispatch
# observer). Set to True when the hook is merged.
DISPATCH_HOOK_WIRED = True


def thread_group(summary_path):
    with open(summary_path) as f:
        data = json.load(f)
    groups = [g for g in data['snapshot']['groups'] if g['kind'] == 'thread']
    assert len(groups) == 1, groups
    return groups[0]


class BlockedTimeTest(BusTestCase):
    def setUp(self):
        super().setUp()
        peer = subprocess.Popen(['/usr/bin/python3', PEER, str(DELAY_MS)], env=self.env,
                                stdout=subprocess.PIPE, universal_newlines=True)
        self.addCleanup(self.stop, peer)
        self.assertEqual(peer.stdout.readline().strip(), 'ready')

    def run_blocked(self, *command):
        summary = self.path('summary.json')
        result = self.perfmon('run', '--no-export', '--summary', summary, '--', *command,
                              env=self.foreign_env())
        self.assertExit(result, 0)
        return thread_group(summary)['blocked_time']

    def test_connection_call_sync(self):
        blocked = self.run_blocked(DBUS_CALL, 'connection', NAME, PATH, INTERFACE, 'Slow')
        self.assertGreaterEqual(blocked, DELAY_MS * 1000)

    def test_connection_call_with_unix_fd_list_sync(self):
        blocked = self.run_blocked(DBUS_CALL, 'connection-fds', NAME, PATH, INTERFACE, 'Slow')
        self.assertGreaterEqual(blocked, DELAY_MS * 1000)

    def test_send_message_with_reply_sync(self):
        blocked = self.run_blocked(DBUS_CALL, 'message', NAME, PATH, INTERFACE, 'Slow')
        self.assertGreaterEqual(blocked, DELAY_MS * 1000)

    def test_proxy_call_sync(self):
        blocked = self.run_blocked(DBUS_CALL, 'proxy', NAME, PATH, INTERFACE, 'Slow')
        self.assertGreaterEqual(blocked, DELAY_MS * 1000)

    def test_proxy_call_with_unix_fd_list_sync(self):
        blocked = self.run_blocked(DBUS_CALL, 'proxy-fds', NAME, PATH, INTERFACE, 'Slow')
        self.assertGreaterEqual(blocked, DELAY_MS * 1000)

    @unittest.skipUnless(shutil.which('gdbus'), 'gdbus missing')
    def test_gdbus_call(self):
        # Debian's own tool: its call goes through g_dbus_connection_call_sync.
        blocked = self.run_blocked('gdbus', 'call', '--session', '--dest', NAME, '--object-path', PATH,
                                   '--method', INTERFACE + '.Slow')
        self.assertGreaterEqual(blocked, DELAY_MS * 1000)


# One line of "perfmon tasks LOG dump": id, parent, source event, pid/tid,
# name.
TASK_LINE = re.compile(r'^(0x[0-9a-f]+)\s+parent\s+(0x[0-9a-f]+)\s+(\S+)\s+(\d+)/(\d+)\s+(\S+)')


class CausalityTest(CliTestCase):
    def tasks(self, log):
        result = self.perfmon('tasks', log, 'dump')
        self.assertExit(result, 0)
        tasks = {}
        for line in result.stdout.splitlines():
            match = TASK_LINE.match(line)
            if match:
                task_id, parent, _, pid, tid, name = match.groups()
                tasks[task_id] = {'parent': parent, 'pid': int(pid), 'tid': int(tid), 'name': name}
        return tasks

    def ids(self, log, question, task_id):
        result = self.perfmon('tasks', log, question, task_id)
        self.assertExit(result, 0)
        return re.findall(r'^(0x[0-9a-f]+)', result.stdout, re.M)

    def test_idle_gtask_completion(self):
        result = self.perfmon('run', '--no-export', '--', GTASK, env=self.foreign_env(own=True), timeout=90)
        self.assertExit(result, 0)
        traces = glob.glob(os.path.join(self.env['XDG_STATE_HOME'], '**', 'MAIN_THREAD_JANK_*.trace'),
                           recursive=True)
        self.assertEqual(len(traces), 1, 'one jank trace expected:\n%s' % result.stderr)
        tasks = self.tasks(traces[0])

        # The GTask's run in GLib's pool, named after its source tag, on a
        # worker thread: interposed g_thread_pool_push().
        # GTask names its completion source after the task too, so the run
        # is the one task of that name off the main thread.
        workers = [i for i, t in tasks.items() if t['name'] == 'gtask_worker' and t['tid'] != t['pid']]
        self.assertEqual(len(workers), 1, tasks)
        worker = workers[0]

        if not DISPATCH_HOOK_WIRED:
            self.skipTest('the idle and the completion callback are tasks only through core/\'s '
                          'per-dispatch hook (issue 12 part A, the dispatch observer\'s caller)')

        # The idle dispatched the worker ...
        self.assertNotEqual(tasks[worker]['parent'], worker, 'the worker is a root task')
        starter = tasks[worker]['parent']
        self.assertIn('gtask_starter', tasks[starter]['name'])
        # ... and the completion callback, on the main thread, is the
        # worker's child: its ancestors are the worker and the idle.
        followers = self.ids(traces[0], 'followers', worker)
        completions = [i for i in followers if tasks[i]['tid'] == tasks[i]['pid']]
        self.assertTrue(completions, 'no task of the worker ran on the main thread')
        # The tool prints the task itself first, then its ancestors.
        ancestors = self.ids(traces[0], 'ancestors', completions[0])
        self.assertEqual(ancestors[:3], [completions[0], worker, starter])


if __name__ == '__main__':
    unittest.main(verbosity=2, argv=[sys.argv[0]])
