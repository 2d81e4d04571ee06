#!/usr/bin/python3
# test_layering.py: each directory of src/ includes only the directories
# below it (the house rules of doc/design.md)
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Usage: test_layering.py SOURCEDIR

import os
import re
import sys
import unittest

SOURCEDIR = sys.argv.pop(1)

# Which directories of the library a directory may include headers of,
# besides its own. Keep in step with doc/design.md, "House rules".
LIBRARY_MAY_USE = {
    'support': set(),   # libperfmon-support.a: below everything
    'core': {'support'},
    'stack': {'support', 'core'},
    'tasks': {'support', 'core', 'stack'},   # stack/: the symbolizer, log-dir aging
    'hang': {'support', 'core', 'stack', 'tasks'},   # tasks/: the jank flight recorder
    'timeout': {'support', 'core', 'stack'},
    'dbus': {'support', 'core', 'stack', 'hang', 'tasks', 'timeout'},
}
# Named internal libraries built for the programs beside the library (as
# sysprof builds libsysprof-capture): the programs may use their headers,
# which are those libraries' API. Each is a static library of its own
# (src/meson.build), never the library's sources compiled again.
INTERNAL_LIBRARIES = ('support',)
# Programs built on the library: its public headers only.
PUBLIC_ONLY = ('tools', 'daemon', 'demo')
# Built beside the library to interpose GLib (LD_PRELOAD, TSan builds):
# they may reach into it.
BESIDE = ('preload', 'tsan')

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def sources(directory):
    path = os.path.join(SOURCEDIR, 'src', directory)
    for name in sorted(os.listdir(path)):
        if name.endswith(('.c', '.h')):
            yield name, os.path.join(path, name)


def includes(path):
    with open(path, encoding='utf-8') as f:
        return INCLUDE.findall(f.read())


class LayeringTest(unittest.TestCase):
    def home_of_headers(self):
        home = {}
        for directory in LIBRARY_MAY_USE:
            for name, _ in sources(directory):
                if name.endswith('.h'):
                    home[name] = directory
        return home

    def test_library_directories_include_only_lower_ones(self):
        home = self.home_of_headers()
        wrong = []
        for directory, allowed in LIBRARY_MAY_USE.items():
            for name, path in sources(directory):
                for header in includes(path):
                    other = home.get(os.path.basename(header))
                    if other is not None and other != directory and other not in allowed:
                        wrong.append(f'src/{directory}/{name} includes {other}/{header}')
        self.assertEqual(wrong, [])

    def test_programs_include_no_private_header(self):
        home = self.home_of_headers()
        wrong = []
        for directory in PUBLIC_ONLY:
            for name, path in sources(directory):
                wrong += [f'src/{directory}/{name} includes {header}'
                          for header in includes(path) if header.endswith('-private.h')
                          and home.get(os.path.basename(header)) not in INTERNAL_LIBRARIES]
        self.assertEqual(wrong, [])

    def test_programs_compile_no_library_source(self):
        # A program links the library or a named internal library; it never
        # lists one of their sources among its own.
        library_dirs = set(LIBRARY_MAY_USE)
        wrong = []
        for directory in PUBLIC_ONLY:
            build = os.path.join(SOURCEDIR, 'src', directory, 'meson.build')
            if not os.path.exists(build):
                continue
            with open(build, encoding='utf-8') as f:
                for source in re.findall(r"'\.\./(\w+)/[^']+\.c'", f.read()):
                    if source in library_dirs:
                        wrong.append(f'src/{directory}/meson.build compiles a source of src/{source}/')
        self.assertEqual(wrong, [])

    def test_every_library_directory_has_a_rule(self):
        library = {d for d in os.listdir(os.path.join(SOURCEDIR, 'src'))
                   if os.path.isdir(os.path.join(SOURCEDIR, 'src', d))}
        library -= set(PUBLIC_ONLY) | set(BESIDE)
        self.assertEqual(library, set(LIBRARY_MAY_USE))


# The symbolizer knows modules and functions only: the files that carry
# frames (hang reports, pings, jank stack trees, task logs) are read and
# named by the rooms that own their formats (doc/design.md, "Frames are
# named above the symbolizer").
SYMBOLIZER_FILES = ('perfmon-symbolizer.c', 'perfmon-symbolizer.h', 'perfmon-symbolizer-private.h')
FORMAT_MARKERS = ('json-glib', 'perfmon-stack-tree', 'perfmon-task-log', '"payload"', '"hangs"')


class SymbolizerTest(unittest.TestCase):
    def test_symbolizer_reads_no_file_format(self):
        wrong = []
        for name in SYMBOLIZER_FILES:
            with open(os.path.join(SOURCEDIR, 'src', 'stack', name), encoding='utf-8') as f:
                text = f.read()
            wrong += [f'src/stack/{name} knows {marker}' for marker in FORMAT_MARKERS if marker in text]
        self.assertEqual(wrong, [])


# The D-Bus names of perfmond and of the per-process export: spelled once,
# in the public header; every program and the library take them from there.
DBUS_NAMES = ('"org.perfmon.Daemon1"', '"/org/perfmon/Daemon1"',
              '"org.perfmon.Monitor1"', '"/org/perfmon/Monitor1"')
DBUS_NAMES_HOME = os.path.join('dbus', 'perfmon-export.h')


class OneNameTest(unittest.TestCase):
    def test_dbus_names_are_spelled_once(self):
        wrong = []
        src = os.path.join(SOURCEDIR, 'src')
        for directory, _, names in os.walk(src):
            for name in sorted(names):
                path = os.path.join(directory, name)
                relative = os.path.relpath(path, src)
                if not name.endswith(('.c', '.h')) or relative == DBUS_NAMES_HOME:
                    continue
                with open(path, encoding='utf-8') as f:
                    text = f.read()
                wrong += [f'src/{relative} spells {literal}' for literal in DBUS_NAMES if literal in text]
        self.assertEqual(wrong, [])


if __name__ == '__main__':
    unittest.main(verbosity=2)
