#!/usr/bin/python3
# test_license.py: COPYING, meson.build and every source file name the same
# license
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Usage: test_license.py SOURCEDIR

import os
import re
import subprocess
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

    def sources(self):
        # The project's own files: in a git checkout, those git tracks or
        # would add (whatever build directories, GLib sources unpacked for
        # the ThreadSanitizer build or scratch files lie beside them);
        # elsewhere (a release tarball) every file but build directories.
        try:
            listed = subprocess.run(['git', '-C', SOURCEDIR, 'ls-files', '--cached', '--others',
                                     '--exclude-standard'],
                                    capture_output=True, text=True, check=True).stdout.split('\n')
            for relative in listed:
                parts = relative.split('/')
                if relative and not SKIP_DIRS & set(parts[:-1]) and os.path.isfile(os.path.join(SOURCEDIR, relative)):
                    yield relative
            return
        except (OSError, subprocess.CalledProcessError):
            pass
        for root, dirs, files in os.walk(SOURCEDIR):
            # Build directories, whatever their names (meson's mark them).
            dirs[:] = [d for d in dirs if d not in SKIP_DIRS
                       and not os.path.isdir(os.path.join(root, d, 'meson-private'))
                       and not d.startswith('_build')]
            for name in files:
                yield os.path.relpath(os.path.join(root, name), SOURCEDIR)

    def test_every_source_file_says_it(self):
        expected = 'SPDX-License-Identifier: ' + self.project_license()
        missing = []
        for relative in self.sources():
            if not relative.endswith(SOURCE_SUFFIXES):
                continue
            with open(os.path.join(SOURCEDIR, relative), errors='replace') as f:
                if expected not in f.read(2000):
                    missing.append(relative)
        self.assertEqual(missing, [], 'without "%s" near the top' % expected)


if __name__ == '__main__':
    unittest.main(verbosity=2)
