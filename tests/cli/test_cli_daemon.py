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

    def daemon_log(self, debug):
        """What perfmond prints while a process registers, hangs and leaves."""
        env = dict(self.env)
        env.pop('G_MESSAGES_DEBUG', None)
        if debug:
            env['G_MESSAGES_DEBUG'] = 'perfmond'
        daemon = self.start([os.environ['PERFMOND_PATH'], '--poll-interval', '200',
                             '--pidfile', self.path('perfmond-%d.pid' % debug)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            universal_newlines=True)
        self.eventually(lambda: self.perfmon('hangs', 'list').returncode == 0,
                        'perfmond to own its name')
        example = self.start_example()

        def hang_of_example():
            result = self.perfmon('hangs', 'list', '--json')
            return [h for h in json.loads(result.stdout) if h['pid'] == example.pid]
        self.eventually(hang_of_example, 'a hang of the example', timeout=30)
        self.stop(example)
        daemon.terminate()
        # GLib prints debug messages on standard output, others on error.
        return daemon.communicate(timeout=30)[0]

    def test_daemon_routine_messages_are_debug(self):
        quiet = self.daemon_log(debug=False)
        for routine in ('registered', 'hang ', 'owns '):
            self.assertNotIn(routine, quiet)
        verbose = self.daemon_log(debug=True)
        for routine in ('registered', 'hang ', 'owns '):
            self.assertIn(routine, verbose)

    def test_top_into_a_closed_pipe(self):
        # head exits after two lines; top must notice and exit, not refresh
        # forever into a pipe nobody reads.
        self.start_daemon()
        self.start_example()
        result = subprocess.run(['sh', '-c', '"$0" top --interval 0.2 | head -2; echo done',
                                 os.environ['PERFMON_TOOL']], env=self.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                universal_newlines=True, timeout=60)
        self.assertEqual(result.stdout.splitlines()[-1], 'done')
        self.assertEqual(len(result.stdout.splitlines()), 3)

    def test_top_quits_on_q(self):
        # At a terminal, q quits, as in top(1); the terminal's settings
        # come back.
        import pty
        import select
        import termios
        import time
        self.start_daemon()
        self.start_example()
        pid, fd = pty.fork()
        if pid == 0:
            os.execvpe(os.environ['PERFMON_TOOL'], ['perfmon', 'top', '--interval', '0.5'], self.env)
        output = b''
        try:
            deadline = time.monotonic() + 60
            while b'perfmon top:' not in output and time.monotonic() < deadline:
                if select.select([fd], [], [], 1)[0]:
                    output += os.read(fd, 65536)
            self.assertIn(b'perfmon top:', output)
            self.assertFalse(termios.tcgetattr(fd)[3] & termios.ICANON, 'keys read one by one')
            status, output = self.quit_with_q(pid, fd, output)
            self.assertTrue(os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status)
            self.assertTrue(termios.tcgetattr(fd)[3] & termios.ICANON, 'the terminal is restored')
        finally:
            os.close(fd)

    def test_session_end_is_no_warning(self):
        # At logout the session bus goes away: perfmond ends with status 1
        # (Restart=on-failure, see /daemon/bus-lost) and says nothing (no
        # WARNING in the journal at every logout).
        bus = subprocess.Popen(['dbus-daemon', '--session', '--nofork', '--print-address=1'],
                               stdout=subprocess.PIPE, universal_newlines=True)
        self.addCleanup(self.stop, bus)
        env = dict(self.env)
        env['DBUS_SESSION_BUS_ADDRESS'] = bus.stdout.readline().strip()
        env.pop('G_MESSAGES_DEBUG', None)
        daemon = self.start([os.environ['PERFMOND_PATH'], '--pidfile', self.path('session.pid')],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            universal_newlines=True)
        self.eventually(lambda: os.path.exists(self.path('session.pid')), 'perfmond to own its name')
        bus.kill()
        bus.wait()
        out, err = daemon.communicate(timeout=30)
        self.assertEqual(daemon.returncode, 1, err)
        self.assertNotIn('WARNING', err)
        self.assertEqual(err.strip(), '')

    def test_top_count_zero(self):
        result = self.perfmon('top', '--count', '0')
        self.assertExit(result, 2)
        self.assertIn('--count must be in [1, 1000000], got 0', result.stderr)

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

    def test_top_fits_80_columns(self):
        # The title and every row fit in 80 columns (less the last, which
        # makes a terminal wrap); a long name keeps its start and its end.
        self.start_daemon()
        self.start_example()
        env = dict(self.env)
        env['COLUMNS'] = '80'
        result = self.perfmon('top', '--once', '--interval', '0.5', env=env)
        self.assertExit(result, 0)
        for line in result.stdout.splitlines():
            self.assertLessEqual(len(line), 79, line)
        self.assertNotIn('~ ', result.stdout)
        data = json.loads(self.perfmon('snapshot', '--json').stdout)
        long_names = [g['name'] for g in data['groups'] if len(g['name']) > 18]
        lines = result.stdout.splitlines()
        header = [line for line in lines if line.startswith('GROUP')][0]
        kind_column = header.index('KIND')
        rows = [line[:kind_column].rstrip() for line in lines[lines.index(header) + 1:]]
        for name in long_names:
            shown = [r for r in rows if '…' in r and name.startswith(r.split('…')[0])
                     and name.endswith(r.split('…')[1].rstrip())]
            if any(r.startswith(name[:8]) for r in rows):
                self.assertTrue(shown, (name, rows))

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
        # Frames in the one frame format (doc/stacks.md), named by the symbolizer.
        self.assertRegex(result.stdout, r'#\d+ +perfmon-example\+0x[0-9a-f]+ \(run_task\+0x[0-9a-f]+\)')
        # The stack tree merges by function, not by address.
        tree = result.stdout.split('Stack tree of', 1)[1]
        self.assertRegex(tree, r'\d+  perfmon-example \(run_task\)')
        self.assertNotIn('+0x', tree)
        result = self.perfmon('hangs', 'list')
        self.assertExit(result, 0)
        self.assertIn(hangs[0]['id'], result.stdout)

        result = self.perfmon('hangs', 'show', 'no-such-hang')
        self.assertExit(result, 1)
        self.assertIn('no-such-hang', result.stderr)

    def command_pid(self, run):
        """The pid of the command that the perfmon run process @run started."""
        try:
            with open('/proc/%d/task/%d/children' % (run.pid, run.pid)) as f:
                children = f.read().split()
        except OSError:
            return None
        return int(children[0]) if children else None

    def test_run_exports_an_unmodified_program(self):
        self.start_daemon()
        waiter = self.start([os.environ['PERFMON_TOOL'], 'run', '--summary', self.path('s.json'),
                             '--', 'gdbus', 'wait', '--session', '--timeout', '30',
                             'org.example.Nothing'], env=self.foreign_env())
        # perfmon run waits for the command, its child, to print the summary.
        pid = self.eventually(lambda: self.command_pid(waiter), 'gdbus to start')
        self.eventually(lambda: self.perfmon('snapshot', '--pid', str(pid)).returncode == 0,
                        'gdbus under perfmon run to register')
        data = self.snapshot_json(pid)
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

        pid = self.eventually(lambda: self.command_pid(program), 'the program to start')

        def hang_of_program():
            result = self.perfmon('hangs', 'list', '--json')
            self.assertExit(result, 0)
            return [h for h in json.loads(result.stdout) if h['pid'] == pid]
        hangs = self.eventually(hang_of_program, 'the hang of the program under perfmon run')
        self.assertEqual(hangs[0]['process_name'], 'uninstrumented-loop')
        self.assertIsNone(program.poll(), 'the program should still be running')

    def test_unknown_pid(self):
        self.start_daemon()
        result = self.perfmon('snapshot', '--pid', '999999999')
        self.assertExit(result, 1)
        self.assertTrue(result.stderr.startswith('perfmon: '), result.stderr)
        # perfmond's message, without the D-Bus error name programs use.
        self.assertIn('999999999', result.stderr)
        self.assertNotIn('GDBus.Error', result.stderr)

    def test_no_daemon(self):
        # Every call the tool makes of perfmond says the same when there is
        # none to call and none to start.
        for args in (['snapshot'], ['snapshot', '--pid', '1'], ['top', '--once'], ['hangs'],
                     ['hangs', 'show', '1-1']):
            with self.subTest(args=args):
                result = self.perfmon(*args)
                self.assertExit(result, 1)
                self.assertIn('the perfmond daemon (org.perfmon.Daemon1) is not running '
                              'on the session bus, and cannot be activated', result.stderr)

    def test_no_bus(self):
        env = dict(self.env)
        env['DBUS_SESSION_BUS_ADDRESS'] = 'unix:path=' + self.path('no-bus-here')
        result = self.perfmon('snapshot', env=env)
        self.assertExit(result, 1)
        self.assertIn('session bus', result.stderr)


if __name__ == '__main__':
    unittest.main(verbosity=2)
