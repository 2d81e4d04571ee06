#!/usr/bin/python3
# test_cli_readable_names.py: names that a program can only give as
# "module+0x…" are symbolized by the tool, never in the program (issue 23,
# point 10)
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/uninstrumented-loop's callbacks are static functions: perfmon run
# names their automatic groups "GTimeoutSource (uninstrumented-loop+0x…)"
# and its tasks the same (dladdr() knows no name for them, and the program
# does not symbolize). A stripped copy of it, whose symbols are only in a
# debug file found by build id under $PERFMON_DEBUG_DIRS, is a stripped
# program. While it runs, `perfmon snapshot --pid`, `perfmon top --pid`,
# `perfmon tasks dump` and `perfmon symbolize` of its trace, and `perfmon
# hangs list` must show the function ("tick", "block_then_quit") next to
# the module and offset, with the symbolizer that names stack frames
# ("module+0xOFF (function)").

import os
import re
import shutil
import subprocess
import sys
import unittest

from clitest import BusTestCase, TOOL, stripped_copy

UNINSTRUMENTED = os.environ['PERFMON_UNINSTRUMENTED']
# A group or task name with a module and offset, named by the tool.
READABLE = re.compile(r'uninstrumented-loop\+0x[0-9a-f]+ \((tick|[a-z_]+)\)')


@unittest.skipIf(shutil.which('objcopy') is None or shutil.which('strip') is None, 'binutils missing')
class ReadableNamesTest(BusTestCase):
    def stripped_program(self):
        """A stripped copy of uninstrumented-loop, and a debug directory
        holding its symbols by build id."""
        program, debug_dir, _ = stripped_copy(UNINSTRUMENTED, self.path(''))
        symbols = subprocess.run(['nm', program], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 universal_newlines=True).stdout
        self.assertIn('no symbols', symbols)
        return program, debug_dir

    def start_program(self, program):
        trace = self.path('run.trace')
        env = self.foreign_env()
        # Lingers 60 s after its hang: the tool asks while it lives.
        process = self.start([TOOL, 'run', '--trace', trace, '--', program, '60'], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def command_pid():
            try:
                with open('/proc/%d/task/%d/children' % (process.pid, process.pid)) as f:
                    children = f.read().split()
                return int(children[0]) if children else 0
            except (OSError, ValueError):
                return 0
        return self.eventually(command_pid, 'the program to start'), trace

    def test_stripped_program(self):
        program, debug_dir = self.stripped_program()
        self.start_daemon()
        pid, trace = self.start_program(program)
        env = dict(self.env)
        env['PERFMON_DEBUG_DIRS'] = debug_dir

        def snapshot_names():
            result = self.perfmon('snapshot', '--pid', str(pid), env=env)
            return result.stdout if result.returncode == 0 and READABLE.search(result.stdout) else None
        out = self.eventually(snapshot_names, 'a snapshot naming the static callbacks', timeout=60)
        self.assertRegex(out, r'GTimeoutSource \(uninstrumented-loop\+0x[0-9a-f]+ \(tick\)\)')

        # --all: the callbacks' rows are idle in the interval, and hidden
        # without it.
        result = self.perfmon('top', '--pid', str(pid), '--once', '--all', env=env)
        self.assertExit(result, 0)
        self.assertRegex(result.stdout, READABLE)

        def task_names():
            if not os.path.exists(trace):
                return None
            result = self.perfmon('tasks', 'dump', trace, env=env)
            return result.stdout if result.returncode == 0 and READABLE.search(result.stdout) else None
        out = self.eventually(task_names, 'the task log to name the static callbacks', timeout=60)
        self.assertRegex(out, r'uninstrumented-loop\+0x[0-9a-f]+ \(tick\)')

        # perfmon symbolize on the task log, with the debug directory as
        # an option.
        result = self.perfmon('symbolize', '--debug-dir', debug_dir, trace)
        self.assertExit(result, 0)
        self.assertRegex(result.stdout, r'uninstrumented-loop\+0x[0-9a-f]+ \(tick\)')

        # Its 300 ms hang, in block_then_quit, as perfmond lists it.
        def hang_listed():
            result = self.perfmon('hangs', 'list', env=env)
            return result.stdout if result.returncode == 0 and 'block_then_quit' in result.stdout else None
        out = self.eventually(hang_listed, 'the hang to be listed with its callback named', timeout=60)
        self.assertRegex(out, r'GIdleSource \(uninstrumented-loop\+0x[0-9a-f]+ \(block_then_quit\)\)')

        # Without the debug file, the stripped program's names stay as the
        # program gave them: the tool invents nothing.
        result = self.perfmon('snapshot', '--pid', str(pid))
        self.assertExit(result, 0)
        self.assertNotRegex(result.stdout, READABLE)
        self.assertRegex(result.stdout, r'uninstrumented-loop\+0x[0-9a-f]+\)')


if __name__ == '__main__':
    unittest.main(verbosity=2, argv=[sys.argv[0]])
