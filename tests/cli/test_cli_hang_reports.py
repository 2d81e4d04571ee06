#!/usr/bin/python3
# test_cli_hang_reports.py: perfmond and `perfmon hangs show` judge the
# reports of tests/hang-reports/cases.json as the ping store and the
# reader do (test-ping-store, test-hang-report): one reader, one verdict
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import json
import os
import subprocess
import sys
import unittest

from clitest import BusTestCase

CASES = os.environ['PERFMON_HANG_REPORT_CASES']


def load_cases():
    with open(CASES, encoding='utf-8') as f:
        return json.load(f)


def case_duration(case):
    """The duration of a valid case: its mark in perfmond's list."""
    return json.loads(case['report'])['duration']


class HangReportsCliTest(BusTestCase):
    def test_perfmond_keeps_the_valid_reports_only(self):
        self.start_daemon()
        self.start([os.environ['PERFMON_MONITORED_PROCESS'], '--mode=hang-reports',
                    '--reports=' + CASES], stdout=subprocess.DEVNULL)
        valid = sorted(case_duration(c) for c in load_cases() if c['field'] is None)

        def listed():
            result = self.perfmon('hangs', 'list', '--json')
            hangs = json.loads(result.stdout) if result.returncode == 0 else []
            # One GetHangReports reply holds them all: once one is
            # listed, every case has been judged.
            return hangs if hangs else None
        hangs = self.eventually(listed, 'the reports of the monitored process')
        self.assertEqual(sorted(h['duration'] for h in hangs), valid)

    def test_hangs_show_refuses_what_the_reader_refuses(self):
        daemon = self.start([sys.executable, os.path.join(os.path.dirname(__file__), 'fake_hang_daemon.py'),
                             CASES], stdout=subprocess.PIPE, universal_newlines=True)
        self.assertEqual(daemon.stdout.readline().strip(), 'ready')
        for case in load_cases():
            with self.subTest(case=case['name']):
                result = self.perfmon('hangs', 'show', case['name'])
                if case['field'] is None:
                    self.assertExit(result, 0)
                    self.assertIn('Hang %s:' % case['name'], result.stdout)
                    # Issue 24: the add-on, said to be exact or sampled.
                    if case['name'] == 'addon-exact':
                        self.assertIn('Add-on: slow@test (exact', result.stdout)
                    elif case['name'] == 'addon-sampled':
                        self.assertIn('Add-on: promise@test (sampled', result.stdout)
                    else:
                        self.assertNotIn('Add-on:', result.stdout)
                else:
                    self.assertExit(result, 1)
                    self.assertIn('hang %s: %s' % (case['name'], case['field']), result.stderr)
                    self.assertLess(len(result.stderr), 400)


if __name__ == '__main__':
    unittest.main(verbosity=2)
