#!/usr/bin/python3
# test_cli_run_frozen.py: perfmon run on a program the user ends while it
# is frozen
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# frozen-loop (tests/frozen-loop.c) runs its loop a little, then waits for
# ever in wait_for_the_lock(). The user ends it with Ctrl-C (SIGINT to the
# process group), SIGTERM to perfmon, or SIGKILL to the program: the
# summary, text and JSON, shows the hang going on with its duration and
# stack, and the run's real duration.

import glob
import json
import os
import re
import signal
import subprocess
import time
import unittest

from clitest import CliTestCase, TOOL

FROZEN = os.environ['PERFMON_FROZEN_LOOP']
FROZEN_FOR_S = 2.0


class FrozenTest(CliTestCase):
    def run_frozen(self, end, *options):
        """Runs frozen-loop under perfmon run, lets it be frozen FROZEN_FOR_S
        past the moment perfmon saw the hang, ends it with @end(process,
        child pid); returns (perfmon's exit status, stderr, seconds from
        the start to the end)."""
        tmpdir = self.path('tmp')
        os.makedirs(tmpdir, exist_ok=True)
        env = self.foreign_env(own=True)
        env['TMPDIR'] = tmpdir
        started = time.monotonic()
        process = subprocess.Popen([TOOL, 'run', '--threshold', '100'] + list(options) +
                                   ['--', FROZEN], env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   universal_newlines=True, start_new_session=True)
        self.addCleanup(self.kill_group, process)
        self.assertEqual(process.stdout.readline(), 'frozen-loop: frozen\n')
        deadline = time.monotonic() + 30
        while not glob.glob(os.path.join(tmpdir, 'perfmon-run-*', '*.hang')):
            if time.monotonic() > deadline:
                self.fail('the hang was never caught')
            time.sleep(0.05)
        time.sleep(FROZEN_FOR_S)
        children = subprocess.run(['pgrep', '-P', str(process.pid)], stdout=subprocess.PIPE,
                                  universal_newlines=True).stdout.split()
        self.assertEqual(len(children), 1, children)
        end(process, int(children[0]))
        ended = time.monotonic()
        out, err = process.communicate(timeout=60)
        return process.returncode, err, ended - started

    def kill_group(self, process):
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        process.stdout.close()
        process.stderr.close()

    def assertFrozenText(self, err, elapsed):
        self.assertIn('perfmon: summary of frozen-loop', err)
        line = [l for l in err.splitlines() if 'frozen when it ended: a hang going on for' in l]
        self.assertEqual(len(line), 1, err)
        hang_ms = float(line[0].split('going on for ')[1].split(' ms')[0])
        self.assertGreaterEqual(hang_ms, FROZEN_FOR_S * 1000, err)
        self.assertIn('wait_for_the_lock', err)
        header = [l for l in err.splitlines() if l.startswith('perfmon: summary of frozen-loop')][0]
        seconds = float(header.rsplit(', ', 1)[1].split(' s')[0])
        # The run's real duration: longer than the hang, not longer than
        # the test saw it run.
        self.assertGreaterEqual(seconds * 1000, hang_ms, err)
        self.assertLessEqual(seconds, elapsed + 0.5, err)

    def test_ctrl_c(self):
        status, err, elapsed = self.run_frozen(lambda p, child: os.killpg(p.pid, signal.SIGINT))
        self.assertEqual(status, -signal.SIGINT, err)
        self.assertFrozenText(err, elapsed)

    def test_sigterm(self):
        status, err, elapsed = self.run_frozen(lambda p, child: p.send_signal(signal.SIGTERM))
        self.assertEqual(status, -signal.SIGTERM, err)
        self.assertFrozenText(err, elapsed)

    def test_sigkill_json(self):
        summary = self.path('summary.json')
        status, err, elapsed = self.run_frozen(lambda p, child: os.kill(child, signal.SIGKILL),
                                               '--summary', summary)
        self.assertEqual(status, -signal.SIGKILL, err)
        with open(summary) as f:
            data = json.load(f)
        self.assertEqual(data['exit_signal'], signal.SIGKILL)
        hang = data['ongoing_hang']
        self.assertGreaterEqual(hang['duration'], FROZEN_FOR_S * 1000)
        self.assertTrue(any('wait_for_the_lock' in (symbol or '') for symbol in hang['symbols']), hang)
        self.assertGreaterEqual(data['run_seconds'] * 1000, hang['duration'])
        self.assertLessEqual(data['run_seconds'], elapsed + 0.5)

    def test_idle_program_duration(self):
        # uninstrumented-loop blocks 300 ms once, then idles: its last
        # checkpoint is soon after; the summary's duration is the run's.
        tmpdir = self.path('idle')
        os.makedirs(tmpdir)
        env = self.foreign_env(own=True)
        env['TMPDIR'] = tmpdir
        started = time.monotonic()
        process = subprocess.Popen([TOOL, 'run', '--threshold', '100', '--',
                                    os.environ['PERFMON_UNINSTRUMENTED'], '60'], env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   universal_newlines=True, start_new_session=True)
        self.addCleanup(self.kill_group, process)
        time.sleep(4)
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
        elapsed = time.monotonic() - started
        header = [l for l in err.splitlines() if l.startswith('perfmon: summary of uninstrumented-loop')]
        self.assertEqual(len(header), 1, err)
        seconds = float(header[0].rsplit(', ', 1)[1].split(' s')[0])
        # (The program starts a little after perfmon; its last checkpoint,
        # after the block, is about 1 s in.)
        self.assertGreaterEqual(seconds, 3.0, err)
        self.assertLessEqual(seconds, elapsed, err)
        # The figures are that checkpoint's, and the summary says how old
        # they are: an idle program's checkpoints back off (up to a
        # minute apart), so "at most 1 s before" was not true.
        killed = [l for l in err.splitlines() if l.startswith('  killed by SIGTERM: the figures of its last checkpoint')]
        self.assertEqual(len(killed), 1, err)
        found = re.search(r', ([0-9.]+) s before its end \(its first ([0-9.]+) s\)$', killed[0])
        self.assertIsNotNone(found, killed[0])
        age, covered = float(found.group(1)), float(found.group(2))
        self.assertGreaterEqual(age, 1.0, err)
        self.assertAlmostEqual(age + covered, seconds, delta=0.11)


if __name__ == '__main__':
    unittest.main()
