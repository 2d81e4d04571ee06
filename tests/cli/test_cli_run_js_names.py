#!/usr/bin/python3
# test_cli_run_js_names.py: a GJS program's JavaScript callbacks are named
# after the function called, where it is written, not after the function
# that made the source (issue 24, point 3)
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import json
import os
import shutil
import unittest

from clitest import CliTestCase

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, 'gjs_callback_names.js')
GJS = shutil.which('gjs')


def line_of(text):
    with open(SCRIPT) as f:
        for number, line in enumerate(f, 1):
            if text in line:
                return number
    raise AssertionError('%r is not in %s' % (text, SCRIPT))


@unittest.skipIf(GJS is None, 'gjs is not installed')
class JsCallbackNamesTest(CliTestCase):
    def test_timeouts_of_one_function_are_named_by_callback(self):
        summary = self.path('summary.json')
        env = self.foreign_env()
        env['PERFMON_RUN_NO_EXPORT'] = '1'
        result = self.perfmon('run', '--summary', summary, '--', GJS, '-m', SCRIPT, env=env, timeout=120)
        self.assertExit(result, 0)
        with open(summary) as f:
            groups = json.load(f)['snapshot']['groups']
        names = {g['name'] for g in groups if g['kind'] == 'compartment'}
        # Two callbacks given in the same function, start(): each its own
        # group, named after itself and the line it is written on.
        self.assertIn('refreshClock (gjs_callback_names.js:%d)' % line_of('function refreshClock'), names)
        self.assertIn('pollWeather (gjs_callback_names.js:%d)' % line_of('function pollWeather'), names)
        # A bound method: the method, not "bound tick".
        bound = [n for n in names if n.startswith('tick (gjs_callback_names.js:')]
        self.assertTrue(bound, sorted(names))
        # Never the function that made them, nor GLib's type name.
        self.assertFalse([n for n in names if n.startswith('start (')], sorted(names))
        self.assertNotIn('GTimeoutSource', names)
        self.assertNotIn('GIdleSource', names)


if __name__ == '__main__':
    unittest.main()
