#!/usr/bin/python3
# test_symbolizer.py HANG-IN-STATIC
#
# Native symbols with elfutils: a static function is named from the .symtab
# of an unstripped program, and from a separate debug file found by build
# id in a private .build-id tree ($PERFMON_DEBUG_DIRS) once the program is
# stripped; without the debug file it is not.
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

PROGRAM = os.path.abspath(sys.argv.pop(1))
FUNCTION = 'hang_in_static_function'


def build_id(path):
    out = subprocess.run(['readelf', '-n', path], check=True,
                         capture_output=True, text=True).stdout
    return re.search(r'Build ID: ([0-9a-f]+)', out).group(1)


def run_hang(program, debug_dirs, json_path=None):
    env = dict(os.environ)
    env['PERFMON_DEBUG_DIRS'] = debug_dirs
    env.pop('DEBUGINFOD_URLS', None)
    args = [program] + (['--json', json_path] if json_path else [])
    out = subprocess.run(args, env=env, check=True, capture_output=True,
                         text=True, timeout=60).stdout
    return out.splitlines()


def named(stack):
    return [line for line in stack if '(%s+0x' % FUNCTION in line]


class Symbolizer(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix='test-symbolizer-')
        self.addCleanup(shutil.rmtree, self.dir)

    def test_unstripped(self):
        # Not exported (no -rdynamic): dladdr() could not name it.
        dynsym = subprocess.run(['nm', '-D', PROGRAM], capture_output=True, text=True).stdout
        self.assertNotIn(FUNCTION, dynsym)
        stack = run_hang(PROGRAM, os.path.join(self.dir, 'none'))
        self.assertTrue(named(stack), '\n'.join(stack))

    def test_separate_debug_file(self):
        stripped = os.path.join(self.dir, 'hang-in-static')
        debug = os.path.join(self.dir, 'hang-in-static.debug')
        subprocess.run(['objcopy', '--only-keep-debug', PROGRAM, debug], check=True)
        subprocess.run(['objcopy', '--strip-all', PROGRAM, stripped], check=True)
        symtab = subprocess.run(['nm', stripped], capture_output=True, text=True)
        self.assertNotIn(FUNCTION, symtab.stdout + symtab.stderr)

        # Without the debug file the function has no name.
        stack = run_hang(stripped, os.path.join(self.dir, 'debug'))
        self.assertFalse(named(stack), '\n'.join(stack))

        bid = build_id(stripped)
        tree = os.path.join(self.dir, 'debug', '.build-id', bid[:2])
        os.makedirs(tree)
        shutil.move(debug, os.path.join(tree, bid[2:] + '.debug'))
        stack = run_hang(stripped, os.path.join(self.dir, 'debug'))
        self.assertTrue(named(stack), '\n'.join(stack))
        # Outermost first: main's frames come before the function's.
        frame = named(stack)[0]
        self.assertRegex(frame, r'^hang-in-static\+0x[0-9a-f]+ \(%s\+0x[0-9a-f]+\)$' % FUNCTION)

    def test_debuglink(self):
        stripped = os.path.join(self.dir, 'hang-in-static')
        debug = os.path.join(self.dir, 'hang-in-static.debug')
        subprocess.run(['objcopy', '--only-keep-debug', PROGRAM, debug], check=True)
        subprocess.run(['objcopy', '--strip-all', '--add-gnu-debuglink=' + debug,
                        PROGRAM, stripped], check=True)
        # Next to the program, found by its .gnu_debuglink.
        stack = run_hang(stripped, os.path.join(self.dir, 'none'))
        self.assertTrue(named(stack), '\n'.join(stack))


if __name__ == '__main__':
    unittest.main()
