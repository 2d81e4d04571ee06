#!/usr/bin/python3
# test_version_macros.py: PERFMON_VERSION_MIN_REQUIRED / MAX_ALLOWED warn
# about what a program may not use, and every public symbol carries the
# PERFMON_AVAILABLE_IN_… macro of the version its "Since:" names
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Usage: test_version_macros.py SOURCE_ROOT BUILD_ROOT Perfmon-1.gir CC…

import glob
import os
import re
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

SOURCE_ROOT, BUILD_ROOT, GIR = sys.argv[1:4]
CC = sys.argv[4:]
del sys.argv[1:]

C = '{http://www.gtk.org/introspection/c/1.0}'
GLIBNS = '{http://www.gtk.org/introspection/glib/1.0}'
# Helpers of the C-only guard macros: not in the GIR, there since 0.1.
NOT_IN_GIR = {'perfmon_task_label_guard_begin', 'perfmon_task_label_guard_end'}
MACRO = re.compile(r'^PERFMON_(AVAILABLE_IN|DEPRECATED_IN)_(\d+)_(\d+)(_FOR\s*\(.*\))?\s*$|'
                   r'^PERFMON_AVAILABLE_IN_ALL\s*$')


def project_version():
    with open(os.path.join(SOURCE_ROOT, 'meson.build')) as f:
        return re.search(r"version:\s*'(\d+)\.(\d+)\.\d+'", f.read()).groups()


def gir_versions():
    versions = {}
    for element in ET.parse(GIR).getroot().iter():
        version = element.get('version')
        if version is None:
            continue
        if element.get(C + 'identifier'):
            versions[element.get(C + 'identifier')] = version
        if element.get(GLIBNS + 'get-type'):
            versions[element.get(GLIBNS + 'get-type')] = version
            if element.get(C + 'type'):
                versions['TYPE:' + element.get(C + 'type')] = version
    return versions


def public_declarations():
    """(header, macro line, symbol) for each exported declaration."""
    for path in sorted(glob.glob(os.path.join(SOURCE_ROOT, 'src', '**', 'perfmon-*.h'),
                                 recursive=True)):
        if path.endswith('-private.h') or path.endswith('version-macros.h'):
            continue
        with open(path) as f:
            lines = f.read().split('\n')
        for i, line in enumerate(lines):
            if MACRO.match(line.strip()):
                declaration = ' '.join(lines[i + 1:i + 6])
                m = re.search(r'G_DECLARE_FINAL_TYPE\s*\(\s*(\w+)', declaration)
                symbol = 'TYPE:' + m.group(1) if m else re.search(r'(\w+)\s*\(', declaration).group(1)
                yield os.path.relpath(path, SOURCE_ROOT), line.strip(), symbol


class VersionMacrosTest(unittest.TestCase):
    def test_macro_matches_since(self):
        self.maxDiff = None
        versions = gir_versions()
        wrong = []
        for header, macro, symbol in public_declarations():
            if symbol in NOT_IN_GIR:
                continue
            since = versions.get(symbol)
            if since is None:
                wrong.append('%s: %s has no "Since:" in the GIR' % (header, symbol))
                continue
            want = since.replace('.', '_')
            if not re.match(r'PERFMON_(AVAILABLE|DEPRECATED)_IN_%s\b' % want, macro):
                wrong.append('%s: %s is %s, "Since: %s" wants PERFMON_AVAILABLE_IN_%s'
                             % (header, symbol, macro, since, want))
        self.assertEqual(wrong, [])

    def test_no_since_after_the_project_version(self):
        major, minor = map(int, project_version())
        late = sorted('%s (Since: %s)' % (symbol, version)
                      for symbol, version in gir_versions().items()
                      if tuple(map(int, version.split('.')[:2])) > (major, minor))
        self.assertEqual(late, [])

    def test_every_version_has_its_macros(self):
        major, minor = map(int, project_version())
        with open(os.path.join(SOURCE_ROOT, 'src', 'perfmon-version-macros.h')) as f:
            text = f.read()
        for m in range(1, minor + 1):
            for name in ('PERFMON_VERSION_%d_%d' % (major, m), 'PERFMON_AVAILABLE_IN_%d_%d' % (major, m),
                         'PERFMON_DEPRECATED_IN_%d_%d_FOR' % (major, m)):
                self.assertIn('define ' + name, text)

    def compile(self, program, *defines):
        flags = subprocess.run(['pkg-config', '--cflags', 'gio-2.0', 'json-glib-1.0'],
                               check=True, capture_output=True, text=True).stdout.split()
        includes = ['-I' + os.path.join(SOURCE_ROOT, 'src', d)
                    for d in ('', 'core', 'stack', 'hang', 'tasks', 'dbus', 'timeout')]
        includes += ['-I' + os.path.join(BUILD_ROOT, 'src')]
        with tempfile.TemporaryDirectory() as tmp:
            source = os.path.join(tmp, 'program.c')
            with open(source, 'w') as f:
                f.write('#include <perfmon.h>\n' + program)
            return subprocess.run(CC + ['-fsyntax-only', '-Werror', source] + includes + flags +
                                  ['-D' + d for d in defines], capture_output=True, text=True)

    def symbol_of(self, version):
        """A function of the public API added in @version (0.1, 0.2…)."""
        for header, macro, symbol in public_declarations():
            if macro == 'PERFMON_AVAILABLE_IN_' + version.replace('.', '_') and not symbol.startswith('TYPE:') \
               and not symbol.endswith('_get_type'):
                return symbol
        self.skipTest('no function added in %s' % version)

    def test_max_allowed_warns_about_newer_api(self):
        symbol = self.symbol_of('0.2')
        program = 'void *f (void) { return (void *) %s; }\n' % symbol
        ok = self.compile(program)
        self.assertEqual(ok.returncode, 0, ok.stderr)
        too_new = self.compile(program, 'PERFMON_VERSION_MAX_ALLOWED=PERFMON_VERSION_0_1')
        self.assertNotEqual(too_new.returncode, 0)
        self.assertNotIn('#error', too_new.stderr)
        self.assertIn(symbol, too_new.stderr)
        self.assertIn('0.2', too_new.stderr)

    def test_old_api_compiles_under_any_range(self):
        symbol = self.symbol_of('0.1')
        program = 'void *f (void) { return (void *) %s; }\n' % symbol
        for defines in ([], ['PERFMON_VERSION_MAX_ALLOWED=PERFMON_VERSION_0_1'],
                        ['PERFMON_VERSION_MIN_REQUIRED=PERFMON_VERSION_0_1',
                         'PERFMON_VERSION_MAX_ALLOWED=PERFMON_VERSION_0_1']):
            result = self.compile(program, *defines)
            self.assertEqual(result.returncode, 0, result.stderr)

    def test_inverted_range_is_an_error(self):
        result = self.compile('', 'PERFMON_VERSION_MIN_REQUIRED=PERFMON_VERSION_0_2',
                              'PERFMON_VERSION_MAX_ALLOWED=PERFMON_VERSION_0_1')
        self.assertNotEqual(result.returncode, 0)
        self.assertIn('MAX_ALLOWED must be', result.stderr)


if __name__ == '__main__':
    unittest.main(verbosity=2)
