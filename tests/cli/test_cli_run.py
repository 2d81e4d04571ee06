#!/usr/bin/python3
# test_cli_run.py: perfmon run on unmodified GLib programs
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The uninstrumented program blocks its loop 300 ms once and exits 3; the
# Debian-shipped one is gdbus (GLib 2.74's "gdbus wait" runs a GMainLoop),
# on a private bus from dbus-run-session.

import glob
import json
import os
import re
import shutil
import signal
import subprocess
import time
import unittest

from clitest import CliTestCase, TOOL

UNINSTRUMENTED = os.environ['PERFMON_UNINSTRUMENTED']


class RunTest(CliTestCase):
    def test_uninstrumented_summary_json(self):
        summary = self.path('summary.json')
        result = self.perfmon('run', '--threshold', '100', '--summary', summary,
                              '--', UNINSTRUMENTED, env=self.foreign_env(own=True))
        # The command's own exit status comes back.
        self.assertExit(result, 3)
        self.assertIn('uninstrumented-loop: done', result.stdout)
        with open(summary) as f:
            data = json.load(f)
        self.assertEqual(data['process_name'], 'uninstrumented-loop')
        self.assertGreater(data['iterations'], 5)
        self.assertEqual(data['hang_threshold'], 100)
        # The program blocks once for 300 ms. On a loaded machine another
        # stretch can also last a threshold in wall time, and is a hang too:
        # the product promises the block, not that it is alone.
        self.assertGreaterEqual(data['hang_count'], 1)
        self.assertEqual(data['hang_count'], len(data['hangs']))
        hang = max(data['hangs'], key=lambda h: h['duration'])
        self.assertGreaterEqual(hang['duration'], 100)
        self.assertIn('GIdleSource', hang['runnableName'])
        # The stack of a preloaded program: native frames or a reason.
        self.assertTrue(hang['stack'] or hang.get('stackUnavailable'))
        # The summary's snapshot is a snapshot 'perfmon diff' reads.
        kinds = [g['kind'] for g in data['snapshot']['groups']]
        self.assertIn('thread', kinds)

    def test_identity_from_the_environment(self):
        env = self.foreign_env(own=True)
        env.update({'PERFMON_APP_NAME': 'Loop', 'PERFMON_APP_VERSION': '12.0.1',
                    'PERFMON_APP_CHANNEL': 'nightly', 'PERFMON_APP_BUILD_ID': '20261124000000'})
        result = self.perfmon('run', '--threshold', '100', '--', UNINSTRUMENTED, env=env)
        self.assertExit(result, 3)
        pings_dir = os.path.join(self.env['XDG_STATE_HOME'], 'perfmon', 'pings')
        pings = [name for name in os.listdir(pings_dir) if name.endswith('.json')]
        self.assertEqual(len(pings), 1, pings)
        with open(os.path.join(pings_dir, pings[0])) as f:
            application = json.load(f)['application']
        self.assertEqual(application['name'], 'Loop')
        self.assertEqual(application['version'], '12.0.1')
        self.assertEqual(application['channel'], 'nightly')
        self.assertEqual(application['buildId'], '20261124000000')

    def test_uninstrumented_summary_text(self):
        result = self.perfmon('run', '--', UNINSTRUMENTED, env=self.foreign_env(own=True))
        self.assertExit(result, 3)
        self.assertIn('perfmon: summary of uninstrumented-loop', result.stderr)
        # At least the 300 ms block (see above).
        match = re.search(r'hangs: (\d+) \(threshold 128 ms\)', result.stderr)
        self.assertIsNotNone(match, result.stderr)
        self.assertGreaterEqual(int(match.group(1)), 1)
        self.assertRegex(result.stderr, r'- \d+ ms \(wall\) in GIdleSource')

    def test_high_threshold_no_hang(self):
        summary = self.path('summary.json')
        result = self.perfmon('run', '--threshold', '5000', '--summary', summary,
                              '--', UNINSTRUMENTED, env=self.foreign_env(own=True))
        self.assertExit(result, 3)
        with open(summary) as f:
            self.assertEqual(json.load(f)['hang_count'], 0)

    def test_existing_ld_preload_is_kept(self):
        # A module already preloaded stays, first; ours is appended.
        summary = self.path('summary.json')
        module = os.environ['PERFMON_PRELOAD_PATH']
        env = self.foreign_env()
        first = env['LD_PRELOAD'] + ':' + module if 'LD_PRELOAD' in env else module
        env['LD_PRELOAD'] = first
        result = self.perfmon('run', '--summary', summary, '--', '/bin/sh', '-c',
                              'echo "$LD_PRELOAD"', env=env)
        self.assertExit(result, 0)
        self.assertEqual(result.stdout.strip(), first + ':' + module)

    def test_clock_rate_is_handed_down(self):
        # The command calibrates the cycle counter (2 ms of spinning) and
        # hands its rate down: the processes it starts check it in 0.1 ms
        # instead of spinning 2 ms each (tests/test-clock checks that they
        # take it). A rate set before the run is replaced by the one found.
        summary = self.path('summary.json')
        env = self.foreign_env()
        env['PERFMON_RUN_CYCLES_PER_US'] = '1e400'
        result = self.perfmon('run', '--summary', summary, '--', '/bin/sh', '-c',
                              'echo "$PERFMON_RUN_CYCLES_PER_US"; '
                              '/bin/sh -c \'echo "$PERFMON_RUN_CYCLES_PER_US"\'', env=env)
        self.assertExit(result, 0)
        rates = result.stdout.split()
        self.assertEqual(len(rates), 2, result.stdout)
        self.assertGreater(float(rates[0]), 1.0)
        self.assertLess(float(rates[0]), 1e6)
        # The child's: the command's, or, where its check was split by a
        # preemption, its own calibration of the same rate.
        self.assertLess(abs(float(rates[1]) / float(rates[0]) - 1), 0.01, rates)

    @unittest.skipIf(shutil.which('strace') is None, 'strace is not installed')
    def test_no_addon_scan_without_an_addon_system(self):
        # The built-in add-on rules are GNOME Shell extensions' (GJS) and
        # libpeas plugins'. A process with neither (/bin/true here) reads
        # none of their directories: the scan (some 300 system calls) was
        # most of what perfmon run added to each command of a shell script.
        # (A Python program that loads libpeas later gets them as it makes
        # its engine: test_cli_run_peas.)
        trace = self.path('trace.txt')
        result = self.perfmon('run', '--', 'strace', '-f', '-qq', '-o', trace,
                              '-e', 'trace=%file,getdents64', '/bin/true', env=self.foreign_env())
        self.assertExit(result, 0)
        with open(trace) as f:
            calls = f.read()
        self.assertIn('execve(', calls)
        scans = [line for line in calls.splitlines()
                 if '/plugins"' in line or 'gnome-shell/extensions' in line]
        self.assertEqual(scans, [])

    def run_dir_files(self, tmpdir):
        return glob.glob(os.path.join(tmpdir, 'perfmon-run-*', '*.json'))

    def start_lingering(self, *options, command=None):
        """perfmon run on a program that hangs once, then idles for a minute:
        returns the perfmon process once the program has left its checkpoint
        with the hang in the run's private directory."""
        tmpdir = self.path('tmp')
        os.makedirs(tmpdir)
        env = self.foreign_env(own=command is None)
        env['TMPDIR'] = tmpdir
        process = subprocess.Popen([TOOL, 'run', '--threshold', '100'] + list(options) +
                                   ['--'] + (command or [UNINSTRUMENTED, '60']), env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   universal_newlines=True, start_new_session=True)
        self.addCleanup(self.kill_group, process)
        deadline = time.monotonic() + 30
        while True:
            hung = False
            for name in self.run_dir_files(tmpdir):
                try:
                    with open(name) as f:
                        hung = hung or json.load(f)['hang_count'] >= 1
                except (OSError, ValueError):
                    pass
            if hung:
                return process
            if process.poll() is not None or time.monotonic() > deadline:
                self.fail('no checkpoint with the hang: ' + process.stderr.read())
            time.sleep(0.05)

    def kill_group(self, process):
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        process.stdout.close()
        process.stderr.close()

    def test_summary_survives_sigterm(self):
        process = self.start_lingering()
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
        # The command was terminated (perfmon passed SIGTERM on), and perfmon
        # ends the same way, so that the shell sees it.
        self.assertEqual(process.returncode, -signal.SIGTERM, err)
        self.assertIn('perfmon: summary of uninstrumented-loop', err)
        self.assertIn('hangs: 1 (threshold 100 ms)', err)
        self.assertIn('SIGTERM', err)
        # Nothing left behind.
        self.assertEqual(self.run_dir_files(self.path('tmp')), [])

    def test_summary_survives_ctrl_c(self):
        summary = self.path('summary.json')
        process = self.start_lingering('--summary', summary)
        # What a terminal does on Ctrl-C: SIGINT to the whole process group.
        os.killpg(process.pid, signal.SIGINT)
        out, err = process.communicate(timeout=30)
        self.assertEqual(process.returncode, -signal.SIGINT, err)
        with open(summary) as f:
            data = json.load(f)
        self.assertEqual(data['process_name'], 'uninstrumented-loop')
        self.assertEqual(data['hang_count'], 1)
        self.assertGreater(data['iterations'], 5)
        self.assertEqual(data['exit_signal'], signal.SIGINT)
        self.assertFalse(data['complete'])

    def test_summary_survives_ctrl_c_of_python(self):
        # PyGObject turns SIGINT into KeyboardInterrupt, and Python then
        # kills itself with SIGINT: no C exit handler runs.
        script = self.path('linger.py')
        with open(script, 'w') as f:
            f.write('from gi.repository import GLib\n'
                    'def hang():\n'
                    '    end = GLib.get_monotonic_time() + 300000\n'
                    '    while GLib.get_monotonic_time() < end:\n'
                    '        pass\n'
                    '    return False\n'
                    'GLib.timeout_add(50, hang)\n'
                    'GLib.MainLoop().run()\n')
        process = self.start_lingering(command=['/usr/bin/python3', script])
        os.killpg(process.pid, signal.SIGINT)
        out, err = process.communicate(timeout=30)
        self.assertEqual(process.returncode, -signal.SIGINT, err)
        self.assertIn('KeyboardInterrupt', err)
        self.assertIn('perfmon: summary of python3', err)
        self.assertIn('hangs: 1 (threshold 100 ms)', err)
        self.assertIn('killed by SIGINT', err)

    def test_summary_of_sh_c_wrapper(self):
        # sh runs the program as its child (the "; true" keeps it from
        # exec'ing it): the summary is the program's, the one that ran a
        # main loop.
        summary = self.path('summary.json')
        result = self.perfmon('run', '--threshold', '100', '--summary', summary, '--',
                              '/bin/sh', '-c', UNINSTRUMENTED + '; exit 5',
                              env=self.foreign_env(own=True))
        self.assertExit(result, 5)
        with open(summary) as f:
            data = json.load(f)
        self.assertEqual(data['process_name'], 'uninstrumented-loop')
        self.assertEqual(data['hang_count'], 1)
        self.assertTrue(data['complete'])
        names = sorted(p['process_name'] for p in data['processes'])
        self.assertIn('uninstrumented-loop', names)
        self.assertEqual(data['exit_status'], 5)

    def test_summary_when_program_closes_stderr(self):
        # ls closes its standard error before it exits: perfmon itself prints.
        result = self.perfmon('run', '--', 'ls', '/', env=self.foreign_env())
        self.assertExit(result, 0)
        self.assertIn('perfmon: summary of ls', result.stderr)
        self.assertIn('main loop: 0 iterations', result.stderr)

    def test_histogram_says_cpu(self):
        result = self.perfmon('run', '--', UNINSTRUMENTED, env=self.foreign_env(own=True))
        self.assertExit(result, 3)
        self.assertIn('iterations that used over N ms of CPU', result.stderr)
        # A hang is wall time, and says so.
        self.assertRegex(result.stderr, r'- \d+ ms \(wall\) in GIdleSource')

    def test_stale_run_dirs_are_deleted(self):
        # The private directory of a perfmon run that was killed (SIGKILL:
        # it could not clean up) goes at the next run; one of a perfmon run
        # still going stays.
        tmpdir = self.path('tmp')
        os.makedirs(os.path.join(tmpdir, 'perfmon-run-999999999-AbCdEf'))
        with open(os.path.join(tmpdir, 'perfmon-run-999999999-AbCdEf', '42.json'), 'w') as f:
            f.write('{}')
        live = os.path.join(tmpdir, 'perfmon-run-%d-GhIjKl' % os.getpid())
        os.makedirs(live)
        env = self.foreign_env()
        env['TMPDIR'] = tmpdir
        result = self.perfmon('run', '--', 'true', env=env)
        self.assertExit(result, 0)
        self.assertEqual(sorted(os.listdir(tmpdir)), [os.path.basename(live)])

    def test_command_not_found(self):
        result = self.perfmon('run', '--', self.path('no-such-program'))
        self.assertExit(result, 127)
        self.assertIn('no-such-program', result.stderr)

    @unittest.skipIf(shutil.which('dbus-run-session') is None, 'dbus-run-session missing')
    def test_gdbus_wait(self):
        summary = self.path('gdbus.json')
        result = self.perfmon('run', '--summary', summary, '--',
                              'gdbus', 'wait', '--session', '--timeout', '1',
                              'org.example.Nothing',
                              prefix=['dbus-run-session', '--'], env=self.foreign_env())
        # gdbus wait fails when the name never appears: that status is
        # gdbus's, passed on.
        self.assertNotEqual(result.returncode, 2, result.stderr)
        with open(summary) as f:
            data = json.load(f)
        self.assertTrue(data['process_name'].startswith('gdbus'), data['process_name'])
        self.assertGreater(data['iterations'], 0)
        self.assertEqual(data['hang_count'], 0)


if __name__ == '__main__':
    unittest.main(verbosity=2)
