# clitest.py: what the perfmon command-line tests share
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The tests get the build's paths from the environment that
# tests/cli/meson.build sets: PERFMON_TOOL (the perfmon binary),
# PERFMON_PRELOAD_PATH (the uninstalled preload module) and
# PERFMON_UNINSTRUMENTED (tests/uninstrumented-loop).

import os
import shutil
import subprocess
import tempfile
import unittest

TOOL = os.environ['PERFMON_TOOL']


class CliTestCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='perfmon-cli-')
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.env = dict(os.environ)
        # Hang pings and jank logs of monitored programs stay in the test's
        # directory, never in the user's state directory.
        self.env['XDG_STATE_HOME'] = os.path.join(self.tmp, 'state')

    def path(self, name):
        return os.path.join(self.tmp, name)

    def perfmon(self, *args, timeout=60, env=None, prefix=()):
        return subprocess.run(list(prefix) + [TOOL] + list(args), env=env or self.env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=timeout)

    def assertExit(self, result, status):
        self.assertEqual(result.returncode, status,
                         'exit status %d, expected %d\nstdout:\n%s\nstderr:\n%s'
                         % (result.returncode, status, result.stdout, result.stderr))
