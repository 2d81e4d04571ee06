#!/usr/bin/python3
# test_exported_symbols.py: libperfmon exports its public API and nothing
# else (issue 28, point 4)
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Usage: test_exported_symbols.py LIBPERFMON.so PRELOAD-MODULE.so
#
# Private functions (`_perfmon_*`) are reached by the preload module of
# `perfmon run` through a table the library hands it at load
# (src/hang/perfmon-preload-internals-private.h), never through the
# dynamic symbol table, where any program could link to them.

import re
import subprocess
import sys
import unittest

LIBRARY, PRELOAD = sys.argv[1:3]
del sys.argv[1:3]

PUBLIC = re.compile(r'^perfmon_[a-z0-9_]+$')


def exported(path):
    out = subprocess.run(['nm', '-D', '--defined-only', path], check=True,
                         capture_output=True, text=True).stdout
    names = []
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 3:
            name = fields[2].split('@')[0]
            names.append(name)
    return names


class ExportedSymbolsTest(unittest.TestCase):
    def test_library_exports_only_public_names(self):
        names = exported(LIBRARY)
        self.assertIn('perfmon_monitor_get_default', names)
        self.assertEqual([n for n in names if not PUBLIC.match(n)], [])

    def test_no_private_name_is_exported(self):
        self.assertEqual([n for n in exported(LIBRARY) if n.startswith('_perfmon')], [])

    def test_preload_module_offers_to_receive_the_internals(self):
        self.assertIn('perfmon_preload_receive_internals', exported(PRELOAD))

    def test_preload_module_exports_no_private_name(self):
        # Its interposers (g_*) and the receiver only.
        self.assertEqual([n for n in exported(PRELOAD) if n.startswith('_perfmon')], [])


if __name__ == '__main__':
    unittest.main()
