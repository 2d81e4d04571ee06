#!/usr/bin/python3
# test_license.py: COPYING, meson.build and every source file name the same
# license
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Usage: test_license.py SOURCEDIR

import os
import re
import sys
import unittest

SOURCEDIR = sys.argv.pop(1)
SOURCE_SUFFIXES = ('.c', '.h', '.py', '.js', '.in')
# Generated, third-party or not source: not ours to label.
SKIP_DIRS = {'subprojects', '.git', 'corpus'}


class LicenseTest(unittest.TestCase):
    def project_license(self):
        with open(os.path.join(SOURCEDIR, 'meson.build')) as f:
            return re.search(r"license:\s*'([^']+)'", f.read()).group(1)

    def test_copying_matches_the_project(self):
        self.assertEqual(self.project_license(), 'LGPL-2.1-or-later')
        with open(os.path.join(SOURCEDIR, 'COPYING')) as f:
            head = f.read(200)
        self.assertIn('GNU LESSER GENERAL PUBLIC LICENSE', head)
        self.assertIn('Version 2.1', head)

    def test_every_source_file_says_it(self):
        expected = 'SPDX-License-Identifier: ' + self.project_license()
        missing = []
        for root, dirs, files in os.walk(SOURCEDIR):
            # Build directories, whatever their names (meson's mark them).
            dirs[:] = [d for d in dirs if d not in SKIP_DIRS
                       and not os.path.isdir(os.path.join(root, d, 'meson-private'))]
            for name in files:
                if not name.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.join(root, name)
                with open(path, errors='replace') as f:
                    if expected not in f.read(2000):
                        missing.append(os.path.relpath(path, SOURCEDIR))
        self.assertEqual(missing, [], 'without "%s" near the top' % expected)


if __name__ == '__main__':
    unittest.main(verbosity=2)
