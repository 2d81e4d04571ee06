#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Perfmon.HangReport.new_from_json() through PyGObject: the reports of
tests/hang-reports/cases.json judged as listed, and a report read back to
the JSON it came from.

Usage: test_hang_report.py CASES_JSON (with the environment that
tests/bindings/meson.build sets up; Debian's /usr/bin/python3).
"""

import json
import os
import sys
import unittest

os.environ.setdefault('G_DEBUG', 'fatal-criticals')

import gi  # noqa: E402

gi.require_version('GLib', '2.0')
gi.require_version('Perfmon', '1')
from gi.repository import GLib, Perfmon  # noqa: E402

CASES = sys.argv.pop(1)


def load_cases():
    with open(CASES, encoding='utf-8') as f:
        return json.load(f)


class HangReportFromJsonTest(unittest.TestCase):
    def test_cases(self):
        for case in load_cases():
            with self.subTest(case=case['name']):
                if case['field'] is None:
                    report = Perfmon.HangReport.new_from_json(case['report'], -1)
                    self.assertEqual(json.loads(report.to_json()), json.loads(
                        Perfmon.HangReport.new_from_json(report.to_json(), -1).to_json()))
                    continue
                with self.assertRaises(GLib.Error) as raised:
                    Perfmon.HangReport.new_from_json(case['report'], -1)
                self.assertTrue(raised.exception.matches(Perfmon.error_quark(),
                                                         Perfmon.Error.INVALID_DATA))
                self.assertRegex(raised.exception.message, '^' + case['field'].replace('[', r'\[')
                                 .replace(']', r'\]').replace('(', r'\(').replace(')', r'\)')
                                 + r'[:.\[]')
                self.assertLess(len(raised.exception.message), 300)

    def test_read_back(self):
        text = next(c['report'] for c in load_cases() if c['name'] == 'writer-full')
        report = Perfmon.HangReport.new_from_json(text, -1)
        self.assertEqual(report.to_json(), text)
        self.assertEqual(report.get_duration(), 1001.5)
        self.assertEqual(report.get_thread(), 'main')
        self.assertEqual(report.get_runnable_name(), 'spell-check')
        self.assertEqual(report.get_remote_type(), 'web')
        self.assertEqual(report.get_annotation('UserInteracting'), 'ja été')
        self.assertEqual(list(report.get_dispatch_names()), ['spell-check', 'clock'])
        self.assertEqual(report.get_dispatch_duration(1), 2.5)
        self.assertEqual(list(report.get_pseudo_stack()), ['outer label', 'inner label dyn'])
        self.assertEqual(report.dup_stack()[1], 'app+0x1a2b (main+0x1b)')
        self.assertEqual(report.get_script_stack_unavailable_reason(),
                         'the GIL was not released in time')


if __name__ == '__main__':
    unittest.main(verbosity=2)
