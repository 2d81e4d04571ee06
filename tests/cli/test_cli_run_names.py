#!/usr/bin/python3
# test_cli_run_names.py: the names perfmon run gives groups are names a
# person can read (issue 23, point 10)
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import json
import os
import unittest

from clitest import CliTestCase

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_LAMBDAS = os.path.join(HERE, 'python_lambdas.py')


class NamesTest(CliTestCase):
    def test_python_lambdas_by_file_and_line(self):
        summary = self.path('summary.json')
        env = self.foreign_env(own=False)
        env['PERFMON_RUN_NO_EXPORT'] = '1'
        result = self.perfmon('run', '--summary', summary, '--', '/usr/bin/python3', PYTHON_LAMBDAS,
                              env=env)
        self.assertExit(result, 0)
        self.assertIn('python_lambdas: done, list preview', result.stdout)
        with open(summary) as f:
            data = json.load(f)
        names = {g['name'] for g in data['snapshot']['groups'] if g['kind'] == 'compartment'}
        with open(PYTHON_LAMBDAS) as f:
            lines = f.read().splitlines()
        # Each lambda its own group, named by its file and line.
        for number, text in enumerate(lines, 1):
            if 'lambda:' in text:
                self.assertIn('__main__.<lambda> (python_lambdas.py:%d)' % number, names)
        self.assertNotIn('__main__.<lambda>', names)


if __name__ == '__main__':
    unittest.main()
