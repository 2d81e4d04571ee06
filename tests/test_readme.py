#!/usr/bin/python3
# test_readme.py: every code example of README.md works as written
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Usage: test_readme.py README.md BUILDDIR MESON
#
# Runs each fenced block of the README, in order, in one scratch directory,
# in the environment of `meson devenv -C BUILDDIR` (which the README tells
# readers to use), with the interpreters the README names (Debian's
# /usr/bin first on PATH after the build's own programs):
#   c        the first line names the file ("/* app.c: …"); it is written,
#            compiled with `pkg-config --cflags --libs perfmon-1` and run;
#   python   the first line names the file ("# app.py"); written, run with
#            python3;
#   js       likewise ("// app.js"), run with gjs;
#            the programs that use perfmon (app.*) also run under
#            `perfmon run`, which must change nothing of what they print,
#            and whose summary must report their hang;
#   meson    written as meson.build (a later "run" block builds it);
#   sh       preceded by "<!-- README test: run -->": run with sh -e;
#            preceded by "<!-- README test: check options -->": each
#            "perfmon CMD …" line names a command whose --help lists every
#            --option the line uses; otherwise only its syntax is checked
#            (sh -n: installing, the two commands of "Try it");
#   text     output shown to the reader; after a run block, if marked
#            "<!-- README test: expected output -->", the run's output must
#            have the same lines, numbers aside.
# Any other language fails the test: a new kind of example needs a rule.

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import unittest

README, BUILDDIR, MESON = sys.argv[1:4]
del sys.argv[1:4]

FENCE = re.compile(r'^```(\w*)\s*$')
MARKER = re.compile(r'^<!-- README test: (.*) -->\s*$')


def blocks(path):
    """(language, marker, text, line number) of each fenced block."""
    with open(path) as f:
        lines = f.read().split('\n')
    result = []
    marker = None
    i = 0
    while i < len(lines):
        m = MARKER.match(lines[i])
        if m:
            marker = m.group(1)
            i += 1
            continue
        m = FENCE.match(lines[i])
        if m:
            start = i + 1
            i += 1
            while i < len(lines) and lines[i] != '```':
                i += 1
            result.append((m.group(1), marker, '\n'.join(lines[start:i]) + '\n', start))
            marker = None
        elif lines[i].strip():
            marker = None
        i += 1
    return result


def devenv():
    out = subprocess.run([MESON, 'devenv', '-C', BUILDDIR, 'env', '-0'], check=True,
                         stdout=subprocess.PIPE).stdout.decode()
    env = dict(item.split('=', 1) for item in out.split('\0') if '=' in item)
    # Debian's interpreters (the ones with PyGObject) right after the
    # build's own programs.
    dirs = env['PATH'].split(':')
    build_dirs = [d for d in dirs if d.startswith(os.path.abspath(BUILDDIR))]
    env['PATH'] = ':'.join(build_dirs + ['/usr/bin', '/bin'] +
                           [d for d in dirs if d not in build_dirs])
    env.pop('MESON_DEVENV', None)
    return env


def normalise(text):
    return [re.sub(r'\d+(\.\d+)?', 'N', line.strip()) for line in text.strip().split('\n')]


class ReadmeTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix='perfmon-readme-')
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        self.env = devenv()
        self.env['XDG_STATE_HOME'] = os.path.join(self.dir, 'state')
        self.env['TMPDIR'] = self.dir
        # No session bus: the examples must work without one.
        self.env.pop('DBUS_SESSION_BUS_ADDRESS', None)
        self.env['XDG_RUNTIME_DIR'] = os.path.join(self.dir, 'runtime')
        os.makedirs(self.env['XDG_RUNTIME_DIR'], mode=0o700)

    def run_here(self, argv, what, line):
        result = subprocess.run(argv, cwd=self.dir, env=self.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
        self.assertEqual(result.returncode, 0,
                         'README.md line %d (%s) failed with %d:\nstdout:\n%s\nstderr:\n%s'
                         % (line, what, result.returncode, result.stdout, result.stderr))
        return result

    def file_name(self, text, pattern, line):
        m = re.match(pattern, text)
        self.assertIsNotNone(m, 'README.md line %d: the first line must name the file' % line)
        return m.group(1)

    def write(self, name, text):
        with open(os.path.join(self.dir, name), 'w') as f:
            f.write(text)

    def check_options(self, text, line):
        for command_line in text.split('\n'):
            command_line = command_line.split('#', 1)[0].strip()
            if not command_line.startswith('perfmon '):
                continue
            words = shlex.split(command_line)
            help_text = self.run_here(['perfmon', words[1], '--help'],
                                      'perfmon %s --help' % words[1], line).stdout
            own = command_line.split(' -- ', 1)[0]
            for option in re.findall(r'(?<![\w-])(--[a-z][a-z-]*)', own):
                self.assertIn(option, help_text,
                              'README.md line %d: perfmon %s has no %s' % (line, words[1], option))

    def check_under_run(self, argv, name, alone, line):
        """A program that uses perfmon runs under `perfmon run` as alone:
        its own hang monitor reports its hang, its compartment is charged,
        and perfmon run's summary has the hang too."""
        if not name.startswith('app.'):
            return
        result = self.run_here(['perfmon', 'run', '--no-export', '--no-state', '--'] + argv,
                               'perfmon run -- ' + name, line)
        # A hang is only promised when the watchdog gets a core in time
        # (README, "No periodic wake-ups"): the program's own hang monitor
        # and perfmon run's summary must agree on how many there were.
        hangs = [l for l in result.stdout.split('\n') if l.startswith('hang: ')]
        others = [l for l in normalise(result.stdout) if not l.startswith('hang: ')]
        self.assertEqual(others, [l for l in normalise(alone) if not l.startswith('hang: ')],
                         'README.md line %d: %s prints other things under perfmon run:\n%s\n%s'
                         % (line, name, result.stdout, result.stderr))
        self.assertRegex(result.stderr, r'hangs: %d \(threshold 128 ms\)' % len(hangs),
                         'README.md line %d: perfmon run did not report the hangs of %s:\n%s\n%s'
                         % (line, name, result.stdout, result.stderr))
        for hang in hangs:
            where = re.search(r'ms in "(.*)"', hang).group(1)
            # The runnable (Python, GJS) or the label (C) the program names.
            self.assertIn(where, result.stderr)

    def test_examples(self):
        checked = {}
        last_output = None
        for language, marker, text, line in blocks(README):
            name = None
            with self.subTest(line=line, language=language):
                if language == 'c':
                    name = self.file_name(text, r'/\* (\S+\.c)', line)
                    self.write(name, text)
                    flags = self.run_here(['pkg-config', '--cflags', '--libs', 'perfmon-1'],
                                          'pkg-config', line).stdout.split()
                    exe = os.path.join(self.dir, name[:-2] + '-direct')
                    self.run_here(['cc', '-Wall', '-Werror', '-o', exe, name] + flags, 'cc', line)
                    last_output = self.run_here([exe], name, line).stdout
                    self.check_under_run([exe], name, last_output, line)
                elif language == 'python':
                    name = self.file_name(text, r'# (\S+\.py)', line)
                    self.write(name, text)
                    last_output = self.run_here(['python3', name], name, line).stdout
                    self.check_under_run(['python3', name], name, last_output, line)
                elif language == 'js':
                    name = self.file_name(text, r'// (\S+\.js)', line)
                    self.write(name, text)
                    last_output = self.run_here(['gjs', name], name, line).stdout
                    self.check_under_run(['gjs', name], name, last_output, line)
                elif language == 'meson':
                    self.write('meson.build', text)
                elif language == 'sh' and marker == 'run':
                    last_output = self.run_here(['sh', '-e', '-c', text], 'sh', line).stdout
                elif language in ('sh', 'text') and marker == 'check options':
                    self.check_options(text, line)
                elif language == 'sh':
                    self.run_here(['sh', '-n', '-c', text], 'sh -n', line)
                elif language == 'text':
                    if marker == 'expected output':
                        self.assertIsNotNone(last_output)
                        self.assertEqual(normalise(last_output), normalise(text),
                                         'README.md line %d: not what the example prints' % line)
                else:
                    self.fail('README.md line %d: no rule for ```%s blocks' % (line, language))
                checked[language] = checked.get(language, 0) + 1
                if name in ('app.py', 'app.js'):
                    # The bindings' examples do what the C one does; from
                    # Python, importing Perfmon names each source after its
                    # callable.
                    where = '__main__.on_timeout' if name == 'app.py' else 'spell check'
                    self.assertRegex(last_output, r'hang: \d+ ms in "%s"' % where)
                    self.assertRegex(last_output, r'Spell checker: \d+ ms of CPU')
        # The README has examples in each language the project serves.
        for language in ('c', 'python', 'js', 'meson', 'sh'):
            self.assertIn(language, checked)


if __name__ == '__main__':
    unittest.main(verbosity=2)
