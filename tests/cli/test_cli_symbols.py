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


if __name__ == '__main__':
    unittest.main()
