#!/usr/bin/python3
# test_cli_run.py: perfmon run on unmodified GLib programs
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The uninstrumented program blocks its loop 300 ms once and exits 3; the
# Debian-shipped one is gdbus (GLib 2.74's "gdbus wait" runs a GMainLoop),
# on a private bus from dbus-run-session.

import json
import os
import shutil
import unittest

from clitest import CliTestCase

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
        self.assertEqual(data['hang_count'], 1)
        hang = data['hangs'][0]
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
        self.assertIn('hangs: 1 (threshold 128 ms)', result.stderr)
        self.assertRegex(result.stderr, r'- \d+ ms in GIdleSource')

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
