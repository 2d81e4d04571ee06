#!/usr/bin/python3
# test_cli_run_trace.py: "perfmon run --trace FILE" on programs that know
# nothing of perfmon, and what their task logs say
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# - Every process of the run leaves its task log (FILE, FILE.PID…), also
#   when killed, and "perfmon tasks" reads them as one.
# - Sources added from Python and GJS (GLib.idle_add, GLib.timeout_add,
#   Gio async calls run in GTask's pool) are children of the callback that
#   added them, dispatched while it ran: timeout → thread → completion →
#   idle → timeout is one chain of parents (the preload module interposes
#   g_typelib_symbol(): see src/preload/perfmon-preload-typelib.c).
# - The Chrome trace of such a run draws each flow from the parent's run
#   to the child's (tests/check-chrome-trace, with
#   tests/perfmon-chrome-trace-test.h).

import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import unittest

from clitest import BusTestCase

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_CHAIN = os.path.join(HERE, 'python_chain.py')
GJS_CHAIN = os.path.join(HERE, 'gjs_chain.js')
CHECK_CHROME_TRACE = os.environ['PERFMON_CHECK_CHROME_TRACE']
# The interval of the chains' last timeout.
LAST_TIMEOUT_US = 20000


class TraceTestCase(BusTestCase):
    def run_traced(self, *command, trace=None, env=None):
        trace = trace or self.path('run.trace')
        result = self.perfmon('run', '--no-export', '--trace', trace, '--', *command,
                              env=self.foreign_env(env), timeout=90)
        self.assertExit(result, 0)
        return trace

    def tasks(self, *logs):
        result = self.perfmon('tasks', 'dump', *logs, '--json')
        self.assertExit(result, 0)
        return json.loads(result.stdout)['tasks']

    def assert_chain(self, tasks, pid, names=None):
        """timeout → worker thread → completion → idle → timeout, in the
        process @pid, each the child of the one before, each dispatched
        while its parent ran."""
        by_id = {t['id']: t for t in tasks}
        mine = [t for t in tasks if t['process'] == pid]
        workers = [t for t in mine if t['thread'] != pid]
        self.assertEqual(len(workers), 1, 'one task in a worker thread expected: %s' % mine)
        worker = workers[0]

        def only_child(parent, main_thread=True):
            children = [t for t in mine if t['parent_id'] == parent['id'] and t['id'] != parent['id'] and
                        (t['thread'] == pid) == main_thread]
            self.assertEqual(len(children), 1, 'one child of %s expected: %s' % (parent['name'], mine))
            return children[0]

        starter = by_id.get(worker['parent_id'])
        self.assertIsNotNone(starter, 'the worker has no parent: %s' % worker)
        self.assertEqual(starter['thread'], pid)
        completion = only_child(worker)
        idle = only_child(completion)
        last = only_child(idle)
        chain = [starter, worker, completion, idle, last]
        # The last is a 20 ms timeout, dated when it was due: from the
        # time of its loop iteration (GLib's) plus 20 ms. So 20 ms before
        # its date, the iteration that added it had begun (after the
        # completion's) and not ended.
        self.assertLessEqual(completion['end_time'], last['dispatch_time'] - LAST_TIMEOUT_US)
        self.assertLessEqual(last['dispatch_time'] - LAST_TIMEOUT_US, idle['end_time'])
        for parent, child in zip(chain, chain[1:-1]):
            # Dispatched (added, or pushed to the pool) while the parent
            # ran: queueing counts from then.
            self.assertLessEqual(parent['begin_time'], child['dispatch_time'], (parent, child))
            self.assertLessEqual(child['dispatch_time'], parent['end_time'], (parent, child))
            self.assertGreaterEqual(child['queueing_time'], 0)
            self.assertLessEqual(child['queueing_time'], child['begin_time'] - child['dispatch_time'])
        # An idle is due when added: its queueing is all the wait (µs
        # rounded from ns).
        self.assertAlmostEqual(idle['queueing_time'], idle['begin_time'] - idle['dispatch_time'], delta=1)
        if names is not None:
            self.assertEqual([starter['name'], idle['name'], last['name']], names)
        return chain


class TraceTest(TraceTestCase):
    def test_python_chain(self):
        trace = self.run_traced('/usr/bin/python3', PYTHON_CHAIN)
        self.assertEqual(sorted(glob.glob(trace + '*')), [trace])
        tasks = self.tasks(trace)
        pid = tasks[0]['process']
        self.assert_chain(tasks, pid, ['__main__.on_timeout', '__main__.on_idle', '__main__.call_service'])

    @unittest.skipUnless(shutil.which('gjs'), 'gjs missing')
    def test_gjs_chain(self):
        trace = self.run_traced('gjs', GJS_CHAIN)
        tasks = self.tasks(trace)
        self.assert_chain(tasks, tasks[0]['process'])

    def test_every_process(self):
        # A shell (no GLib loop: the command's log, empty) runs two Python
        # programs: a log each, FILE.PID, read as one.
        trace = self.run_traced('/bin/sh', '-c', '/usr/bin/python3 "$0" & /usr/bin/python3 "$0"; wait',
                                PYTHON_CHAIN)
        logs = sorted(glob.glob(trace + '*'))
        self.assertEqual(len(logs), 3, logs)
        self.assertIn(trace, logs)
        tasks = self.tasks(*logs)
        pids = sorted({t['process'] for t in tasks})
        self.assertEqual(len(pids), 2, pids)
        for log in logs:
            if log != trace:
                self.assertIn(int(log.rsplit('.', 1)[1]), pids)
        for pid in pids:
            self.assert_chain(tasks, pid)

    def test_killed(self):
        # A program that never ends, ended by SIGTERM: its log is there,
        # written by perfmon's thread while it ran.
        trace = self.path('killed.trace')
        script = ('from gi.repository import GLib\n'
                  'GLib.timeout_add(10, lambda: True)\n'
                  'GLib.MainLoop().run()\n')
        run = self.start([os.environ['PERFMON_TOOL'], 'run', '--no-export', '--trace', trace, '--',
                          '/usr/bin/python3', '-c', script],
                         env=self.foreign_env(), stderr=subprocess.PIPE, universal_newlines=True)
        self.eventually(lambda: os.path.exists(trace) and len(self.tasks(trace)) > 3,
                        'the task log of a running program', timeout=60)
        run.send_signal(signal.SIGTERM)
        run.wait(timeout=30)
        self.assertGreater(len(self.tasks(trace)), 3)

    def test_bad_path(self):
        result = self.perfmon('run', '--trace', self.path('no/such/dir/trace'), '--', 'true')
        self.assertExit(result, 2)
        self.assertIn('--trace', result.stderr)


class FlowTest(TraceTestCase):
    def test_python_chain_flows(self):
        trace = self.run_traced('/usr/bin/python3', PYTHON_CHAIN)
        out = self.path('trace.json')
        self.assertExit(self.perfmon('tasks', 'export', out, trace), 0)
        check = subprocess.run([CHECK_CHROME_TRACE, out], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, universal_newlines=True)
        self.assertEqual(check.returncode, 0, check.stderr)
        # Four children in the chain: four flows.
        self.assertEqual(check.stdout.strip(), '4 flows')


PEER = os.path.join(HERE, 'slow_dbus_peer.py')
PEER_NAME = 'org.perfmon.test.SlowPeer'
PEER_PATH = '/org/perfmon/test/SlowPeer'
PEER_METHOD = 'org.perfmon.test.SlowPeer.Slow'


class DBusTest(TraceTestCase):
    """An unmodified Python client calls an unmodified Python service on a
    private bus, each under its own perfmon run --trace: the two logs,
    read together, make the handler the child of the client's task that
    called, and name it after the method."""

    def start_service(self):
        trace = self.path('service.trace')
        service = self.start([os.environ['PERFMON_TOOL'], 'run', '--no-export', '--trace', trace, '--',
                              '/usr/bin/python3', PEER, '0'],
                             env=self.foreign_env(), stdout=subprocess.PIPE, universal_newlines=True)
        self.assertEqual(service.stdout.readline().strip(), 'ready')
        return service, trace

    def handlers(self, service_trace, client_trace, count):
        def handled():
            if not os.path.exists(service_trace):
                return None
            tasks = self.tasks(service_trace, client_trace)
            found = [t for t in tasks if t['name'] == PEER_METHOD]
            return (tasks, found) if len(found) >= count else None
        return self.eventually(handled, 'the service\'s log to hold the handler', timeout=60)

    def test_python_client(self):
        service, service_trace = self.start_service()
        client_trace = self.run_traced('/usr/bin/python3', PYTHON_CHAIN, PEER_NAME, PEER_PATH,
                                       PEER_METHOD.rsplit('.', 1)[0], 'Slow', trace=self.path('client.trace'))
        tasks, handlers = self.handlers(service_trace, client_trace, 1)
        by_id = {t['id']: t for t in tasks}
        self.assertEqual(len(handlers), 1, handlers)
        handler = handlers[0]
        caller = by_id.get(handler['parent_id'])
        self.assertIsNotNone(caller, 'the handler is not linked to its caller: %s' % handler)
        self.assertEqual(caller['name'], '__main__.call_service')
        self.assertNotEqual(caller['process'], handler['process'])
        # The reply, sent from a timeout the handler added, is its child.
        self.assertTrue([t for t in tasks if t['parent_id'] == handler['id'] and t['id'] != handler['id']])

        # The Chrome trace draws the message as a flow from the caller.
        service.send_signal(signal.SIGTERM)
        service.wait(timeout=30)
        out = self.path('trace.json')
        self.assertExit(self.perfmon('tasks', 'export', out, service_trace, client_trace), 0)
        check = subprocess.run([CHECK_CHROME_TRACE, out], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, universal_newlines=True)
        self.assertEqual(check.returncode, 0, check.stderr)
        with open(out) as f:
            events = json.load(f)['traceEvents']
        self.assertTrue([e for e in events if e['ph'] == 'f' and e['name'] == 'D-Bus message'])

    @unittest.skipUnless(shutil.which('gjs'), 'gjs missing')
    def test_gjs_client(self):
        # GJS's call_sync reaches the interposer through the typelib hook.
        service, service_trace = self.start_service()
        client_trace = self.run_traced('gjs', GJS_CHAIN, PEER_NAME, PEER_PATH, PEER_METHOD.rsplit('.', 1)[0],
                                       'Slow', trace=self.path('client.trace'))
        tasks, handlers = self.handlers(service_trace, client_trace, 1)
        by_id = {t['id']: t for t in tasks}
        caller = by_id.get(handlers[0]['parent_id'])
        self.assertIsNotNone(caller, 'the handler is not linked to its caller: %s' % handlers[0])
        self.assertEqual(caller['process_name'], 'gjs')
        # The caller is the chain's last timeout.
        self.assertEqual(self.assert_chain(tasks, caller['process'])[-1]['id'], caller['id'])

    @unittest.skipUnless(shutil.which('gdbus'), 'gdbus missing')
    def test_gdbus_call(self):
        # Debian's own client, calling from main(), outside any task: the
        # call is a task of its own, named after the function.
        service, service_trace = self.start_service()
        client_trace = self.run_traced('gdbus', 'call', '--session', '--dest', PEER_NAME,
                                       '--object-path', PEER_PATH, '--method', PEER_METHOD,
                                       trace=self.path('client.trace'))
        tasks, handlers = self.handlers(service_trace, client_trace, 1)
        by_id = {t['id']: t for t in tasks}
        caller = by_id.get(handlers[0]['parent_id'])
        self.assertIsNotNone(caller, 'the handler is not linked to its caller: %s' % handlers[0])
        self.assertTrue(caller['process_name'].startswith('gdbus'), caller)
        # (gdbus calls g_dbus_connection_call_with_unix_fd_list_sync.)
        self.assertTrue(caller['name'].startswith('g_dbus_connection_call'), caller)


if __name__ == '__main__':
    unittest.main(verbosity=2, argv=[sys.argv[0]])
