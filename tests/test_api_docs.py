#!/usr/bin/python3
# test_api_docs.py: every public symbol is documented and says since when
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Usage: test_api_docs.py Perfmon-1.gir
#
# Reads the GIR that g-ir-scanner writes from the gi-docgen comments: an
# element without <doc> has no comment, one without a version attribute
# has no "Since:" line.

import sys
import unittest
import xml.etree.ElementTree as ET

GIR = sys.argv.pop(1)
CORE = '{http://www.gtk.org/introspection/core/1.0}'
GLIB = '{http://www.gtk.org/introspection/glib/1.0}'
C = '{http://www.gtk.org/introspection/c/1.0}'
# Elements that are API of their own.
KINDS = ('class', 'record', 'enumeration', 'bitfield', 'constant', 'function', 'method',
         'constructor', 'property', 'callback', 'alias', 'interface')
SIGNAL = GLIB + 'signal'


class ApiDocsTest(unittest.TestCase):
    def symbols(self):
        namespace = ET.parse(GIR).getroot().find(CORE + 'namespace')
        for element in namespace.iter():
            if element.tag == SIGNAL:
                kind = 'signal'
            elif element.tag.startswith(CORE) and element.tag[len(CORE):] in KINDS:
                kind = element.tag[len(CORE):]
            else:
                continue
            # The class structs G_DECLARE_FINAL_TYPE declares: no API.
            if element.get(GLIB + 'is-gtype-struct-for') is not None:
                continue
            yield kind, element.get(C + 'identifier') or element.get(C + 'type') or element.get('name'), element

    def test_every_symbol_is_documented(self):
        self.maxDiff = None
        missing = sorted('%s %s' % (kind, name) for kind, name, element in self.symbols()
                         if element.find(CORE + 'doc') is None)
        self.assertEqual(missing, [], 'without a documentation comment')

    def test_every_symbol_says_since(self):
        self.maxDiff = None
        missing = sorted('%s %s' % (kind, name) for kind, name, element in self.symbols()
                         if element.get('version') is None)
        self.assertEqual(missing, [], 'without "Since:"')


if __name__ == '__main__':
    unittest.main(verbosity=2)
