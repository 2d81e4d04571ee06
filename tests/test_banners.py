#!/usr/bin/python3
# test_banners.py: every section banner of src/ has the one house style,
#   /* --- what the section holds ------------------------------------ */
# one line of at most 79 columns, nothing else on it (text about the section
# goes in a comment below it)
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Usage: test_banners.py SOURCEDIR

import os
import re
import sys
import unittest

SOURCEDIR = sys.argv.pop(1)
MAX_WIDTH = 79

# Anything that looks like a banner: a comment opening on a rule of dashes,
# equals signs or stars.
BANNER_LIKE = re.compile(r'^\s*/\*+\s*[-=*]{3,}')
BANNER = re.compile(r'^/\* --- (\S.*\S|\S) -{3,} \*/$')


def source_files():
    for root, dirs, files in os.walk(os.path.join(SOURCEDIR, 'src')):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(('.c', '.h')):
                yield os.path.join(root, name)


class BannerTest(unittest.TestCase):
    def test_one_banner_style(self):
        wrong = []
        for path in source_files():
            with open(path, encoding='utf-8') as f:
                for number, line in enumerate(f, 1):
                    line = line.rstrip('\n')
                    if not BANNER_LIKE.match(line):
                        continue
                    if not BANNER.match(line) or len(line) > MAX_WIDTH:
                        where = os.path.relpath(path, SOURCEDIR)
                        wrong.append(f'{where}:{number}: {line}')
        self.assertEqual(wrong, [], '\n' + '\n'.join(wrong))

    def test_the_style_is_used(self):
        found = 0
        for path in source_files():
            with open(path, encoding='utf-8') as f:
                found += sum(1 for line in f if BANNER.match(line.rstrip('\n')))
        self.assertGreater(found, 0)


if __name__ == '__main__':
    unittest.main(verbosity=2)
