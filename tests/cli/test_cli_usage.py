#!/usr/bin/python3
# test_cli_usage.py: every perfmon subcommand has --help; wrong command
# lines exit 2 with a message
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import unittest

from clitest import CliTestCase

SUBCOMMANDS = ['top', 'snapshot', 'diff', 'hangs', 'tasks', 'run', 'demo']


class UsageTest(CliTestCase):
    def test_main_help(self):
        result = self.perfmon('--help')
        self.assertExit(result, 0)
        for name in SUBCOMMANDS:
            self.assertIn(name, result.stdout)

    def test_version(self):
        result = self.perfmon('--version')
        self.assertExit(result, 0)
        self.assertRegex(result.stdout, r'^perfmon \d+\.\d+\.\d+')

    def test_every_subcommand_help(self):
        for name in SUBCOMMANDS:
            with self.subTest(subcommand=name):
                result = self.perfmon(name, '--help')
                self.assertExit(result, 0)
                self.assertIn('perfmon ' + name, result.stdout)
                result = self.perfmon('help', name)
                self.assertExit(result, 0)
                self.assertIn('perfmon ' + name, result.stdout)

    def test_unknown_option(self):
        for name in SUBCOMMANDS:
            with self.subTest(subcommand=name):
                result = self.perfmon(name, '--no-such-option')
                self.assertExit(result, 2)
                self.assertTrue(result.stderr.startswith('perfmon: '), result.stderr)
                self.assertIn('--no-such-option', result.stderr)

    def test_no_command(self):
        self.assertExit(self.perfmon(), 2)

    def test_unknown_command(self):
        result = self.perfmon('frobnicate')
        self.assertExit(result, 2)
        self.assertIn("'frobnicate' is not a perfmon command", result.stderr)
        self.assertExit(self.perfmon('help', 'frobnicate'), 2)

    def test_bad_values(self):
        for args in (['top', '--interval', 'soon'], ['top', '--interval', '0'],
                     ['top', '--pid', '-4'], ['snapshot', '--pid', '-1'],
                     ['snapshot', 'extra'], ['hangs', 'forget'], ['hangs', 'show'],
                     ['diff', 'only-one.json'], ['run', '--threshold', '0', '--', 'true'],
                     ['run'], ['demo', '--refreshes', '0'], ['demo', 'extra']):
            with self.subTest(args=args):
                result = self.perfmon(*args)
                self.assertExit(result, 2)
                self.assertTrue(result.stderr.startswith('perfmon: '), result.stderr)


if __name__ == '__main__':
    unittest.main(verbosity=2)
