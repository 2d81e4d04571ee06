#!/usr/bin/python3
# test_completion.py: bash completion of perfmon, in a real bash with
# bash-completion loaded
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import os
import shlex
import subprocess
import unittest

from clitest import CliTestCase, TOOL

BASH_COMPLETION = '/usr/share/bash-completion/bash_completion'
SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                      'data', 'perfmon.bash-completion')


@unittest.skipUnless(os.path.exists(BASH_COMPLETION), 'bash-completion missing')
class CompletionTest(CliTestCase):
    def complete(self, line):
        """The words bash offers for the end of @line ("perfmon ..."), with
        perfmon being the build's."""
        words = shlex.split(line) + ([''] if line.endswith(' ') else [])
        program = '''
            source %s
            source %s
            COMP_WORDS=(%s)
            COMP_CWORD=%d
            COMP_LINE=%s
            COMP_POINT=${#COMP_LINE}
            _perfmon perfmon "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
            printf '%%s\\n' "${COMPREPLY[@]}"
        ''' % (BASH_COMPLETION, SCRIPT,
               ' '.join(shlex.quote(w) for w in words), len(words) - 1, shlex.quote(line))
        env = dict(self.env)
        # The completion runs "perfmon": the build's, under that name.
        link = self.path('bin')
        os.makedirs(link, exist_ok=True)
        if not os.path.exists(os.path.join(link, 'perfmon')):
            os.symlink(TOOL, os.path.join(link, 'perfmon'))
        env['PATH'] = link + ':' + env['PATH']
        result = subprocess.run(['bash', '--norc', '--noprofile', '-c', program], env=env,
                                cwd=self.tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                universal_newlines=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        return sorted(w for w in result.stdout.split('\n') if w)

    def test_commands(self):
        self.assertEqual(self.complete('perfmon t'), ['tasks', 'top'])
        offered = self.complete('perfmon ')
        for command in ('top', 'snapshot', 'diff', 'hangs', 'tasks', 'run', 'state', 'demo', 'help'):
            self.assertIn(command, offered)

    def test_options_come_from_help(self):
        # GOption's --count=N: offered as "--count=", no space after.
        self.assertIn('--count=', self.complete('perfmon top --c'))
        self.assertIn('--no-state', self.complete('perfmon run --no-'))
        self.assertIn('--json', self.complete('perfmon tasks dump --j'))

    def test_verbs(self):
        self.assertEqual(self.complete('perfmon state '), ['clean', 'list'])
        self.assertEqual(self.complete('perfmon hangs '), ['list', 'show'])
        self.assertEqual(self.complete('perfmon tasks a'), ['ancestors'])

    def test_command_after_double_dash(self):
        self.assertIn('echo', self.complete('perfmon run --threshold 50 -- ech'))


if __name__ == '__main__':
    unittest.main(verbosity=2)
