#!/usr/bin/python3
# test_cli_symbols.py: the stacks 'perfmon run' prints name static functions
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The uninstrumented program hangs in block_then_quit(), a static function
# that no dynamic symbol table has: the summary names it from the
# program's .symtab (elfutils), in the one frame format.

import json
import os
import re
import shutil
import subprocess
import unittest

from clitest import CliTestCase

UNINSTRUMENTED = os.environ['PERFMON_UNINSTRUMENTED']
FRAME = re.compile(r'^uninstrumented-loop\+0x[0-9a-f]+ \(block_then_quit\+0x[0-9a-f]+\)$')


class SymbolsTest(CliTestCase):
    def test_run_summary_names_static_function(self):
        dynsym = subprocess.run(['nm', '-D', UNINSTRUMENTED], capture_output=True, text=True).stdout
        self.assertNotIn('block_then_quit', dynsym)
        summary = self.path('summary.json')
        result = self.perfmon('run', '--threshold', '100', '--summary', summary,
                              '--', UNINSTRUMENTED, env=self.foreign_env(own=True))
        self.assertExit(result, 3)
        with open(summary) as f:
            hang = json.load(f)['hangs'][0]
        # The report's JSON: "symbols" beside the machine form of "stack".
        self.assertTrue(any(s and s.startswith('block_then_quit+0x') for s in hang['symbols']),
                        hang['symbols'])
        # The text summary prints the frame in the one frame format.
        result = self.perfmon('run', '--threshold', '100', '--', UNINSTRUMENTED,
                              env=self.foreign_env(own=True))
        self.assertExit(result, 3)
        frames = [line.split(None, 1)[1] for line in result.stderr.splitlines()
                  if line.strip().startswith('#')]
        self.assertTrue(any(FRAME.match(frame) for frame in frames), result.stderr)

    def test_run_python_program(self):
        # A PyGObject program that knows nothing of perfmon: the summary
        # names the Python function that hung, "function (file:line)".
        script = self.path('hang.py')
        with open(script, 'w') as f:
            f.write(PYTHON_PROGRAM)
        summary = self.path('summary.json')
        env = self.foreign_env(own=True)
        # Under AddressSanitizer: the interpreter does not free all it
        # allocated at exit, which is not perfmon's to report.
        env['ASAN_OPTIONS'] = env.get('ASAN_OPTIONS', '') + ':detect_leaks=0'
        result = self.perfmon('run', '--threshold', '100', '--summary', summary,
                              '--', '/usr/bin/python3', script, env=env)
        self.assertExit(result, 0)
        with open(summary) as f:
            hang = json.load(f)['hangs'][0]
        frame = re.compile(r'^hang_in_python_script \(%s:\d+\)$' % re.escape(script))
        self.assertTrue(any(frame.match(f) for f in hang['pseudoStack']), hang)
        self.assertTrue(any(isinstance(f, str) and frame.match(f) for f in hang['stack']), hang)

    @unittest.skipUnless(shutil.which('gjs'), 'gjs is not installed')
    def test_run_gjs_program(self):
        # The same for a GJS program: the JavaScript function.
        script = self.path('hang.js')
        with open(script, 'w') as f:
            f.write(GJS_PROGRAM)
        summary = self.path('summary.json')
        result = self.perfmon('run', '--threshold', '100', '--summary', summary,
                              '--', 'gjs', script, env=self.foreign_env(own=True))
        self.assertExit(result, 0)
        with open(summary) as f:
            hang = json.load(f)['hangs'][0]
        frame = re.compile(r'^hangInScript \(%s:\d+\)$' % re.escape(script))
        self.assertTrue(any(frame.match(f) for f in hang['pseudoStack']), hang)


GJS_PROGRAM = '''
const {GLib} = imports.gi;
const loop = new GLib.MainLoop(null, false);
function hangInScript() {
    const end = GLib.get_monotonic_time() + 400000;
    while (GLib.get_monotonic_time() < end)
        ;
}
GLib.timeout_add(GLib.PRIORITY_DEFAULT, 50, () => {
    hangInScript();
    loop.quit();
    return GLib.SOURCE_REMOVE;
});
loop.run();
'''


PYTHON_PROGRAM = '''
import time
from gi.repository import GLib

loop = GLib.MainLoop()


def hang_in_python_script():
    end = time.monotonic() + 0.4
    while time.monotonic() < end:
        pass


def on_timeout():
    hang_in_python_script()
    loop.quit()
    return False


GLib.timeout_add(50, on_timeout)
loop.run()
'''


if __name__ == '__main__':
    unittest.main()
