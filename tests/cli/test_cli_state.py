#!/usr/bin/python3
# test_cli_state.py: perfmon state lists and deletes what perfmon left on disk
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import fcntl
import json
import os
import unittest

from clitest import CliTestCase

UNINSTRUMENTED = os.environ['PERFMON_UNINSTRUMENTED']


class StateTest(CliTestCase):
    def state(self, *parts):
        return os.path.join(self.env['XDG_STATE_HOME'], 'perfmon', *parts)

    def make_pending(self, name):
        path = self.state('pings', 'pending', name)
        os.makedirs(path)
        with open(os.path.join(path, 'hang-1.json'), 'w') as f:
            f.write('{}')
        return open(os.path.join(path, 'lock'), 'w')

    def test_run_writes_state_and_clean_deletes_it(self):
        # A hang under perfmon run leaves a ping and the client id.
        result = self.perfmon('run', '--threshold', '100', '--', UNINSTRUMENTED,
                              env=self.foreign_env(own=True))
        self.assertExit(result, 3)
        self.assertTrue(os.path.exists(self.state('pings', 'client-id')))

        # One process still running (it holds its lock), one that died
        # (Ctrl-C'd: the lock is free).
        live = self.make_pending('100-live')
        self.addCleanup(live.close)
        fcntl.flock(live, fcntl.LOCK_EX)
        self.make_pending('200-dead').close()

        result = self.perfmon('state', '--json')
        self.assertExit(result, 0)
        data = json.loads(result.stdout)
        self.assertEqual(data['directory'], self.state())
        self.assertIn('pings', [e['name'] for e in data['entries']])
        self.assertGreater(data['files'], 2)
        self.assertEqual(data['pending_live'], 1)
        self.assertEqual(data['pending_stale'], 1)

        result = self.perfmon('state')
        self.assertExit(result, 0)
        self.assertIn('1 directories of running processes, 1 of processes that died', result.stdout)

        result = self.perfmon('state', 'clean')
        self.assertExit(result, 0)
        self.assertIn('except the pending hangs of 1 running process', result.stdout)
        self.assertFalse(os.path.exists(self.state('pings', 'client-id')))
        self.assertFalse(os.path.exists(self.state('pings', 'pending', '200-dead')))
        self.assertTrue(os.path.exists(self.state('pings', 'pending', '100-live', 'hang-1.json')))

    def test_run_no_state_leaves_nothing(self):
        result = self.perfmon('run', '--no-state', '--threshold', '100', '--', UNINSTRUMENTED,
                              env=self.foreign_env(own=True))
        self.assertExit(result, 3)
        self.assertIn('hangs: 1', result.stderr)
        self.assertFalse(os.path.exists(self.state()))

    def test_empty_and_bad_usage(self):
        result = self.perfmon('state', 'clean')
        self.assertExit(result, 0)
        result = self.perfmon('state', 'list')
        self.assertExit(result, 0)
        self.assertIn('nothing', result.stdout)
        result = self.perfmon('state', 'frobnicate')
        self.assertExit(result, 2)
        self.assertIn('list or clean', result.stderr)


if __name__ == '__main__':
    unittest.main(verbosity=2)
