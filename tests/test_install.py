#!/usr/bin/python3
# test_install.py: install into a temporary directory and use only that copy
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Usage: test_install.py BUILDDIR MESON
#
# `meson install --destdir` puts the build under a scratch directory; then a
# C program built with pkg-config, a Python script and a GJS script use the
# library, typelib and PyGObject override from there, in an environment that
# names no part of the build tree, and check that they did. The layout is
# checked too: perfmond in libexec, where the D-Bus activation file and the
# systemd unit start it; the PyGObject override inside the prefix; the
# programs' RUNPATH; what Python says without LD_LIBRARY_PATH; libunwind,
# libdw and libelf among the .pc's private requirements; man pages and bash
# completion. Nothing here may be fooled by, or fail because of, an earlier
# install on the machine.

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

BUILDDIR, MESON = sys.argv[1:3]
del sys.argv[1:3]
BUILDDIR = os.path.abspath(BUILDDIR)
with open(os.path.join(BUILDDIR, 'src', 'perfmon-version.h')) as f:
    PERFMON_VERSION_S = f.read().split('#define PERFMON_VERSION_S "')[1].split('"')[0]
SOURCEDIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

C_PROGRAM = r'''
#define _GNU_SOURCE
#include <dlfcn.h>
#include <perfmon.h>

#if !PERFMON_CHECK_VERSION (0, 1, 0)
#error "PERFMON_CHECK_VERSION says the installed perfmon is older than 0.1.0"
#endif

int
main (void)
{
  PerfmonMonitor *monitor = perfmon_monitor_get_default ();
  g_autoptr(PerfmonSnapshot) snapshot = perfmon_monitor_snapshot (monitor);
  Dl_info info;

  g_assert_true (dladdr ((void *) perfmon_monitor_get_default, &info));
  g_print ("%s\n%s\n", info.dli_fname, PERFMON_VERSION_S);
  return perfmon_snapshot_get_pid (snapshot) > 0 ? 0 : 1;
}
'''

PYTHON_SCRIPT = r'''
import gi
gi.require_version('Perfmon', '1')
from gi.repository import GIRepository, Perfmon
import gi.overrides.Perfmon

monitor = Perfmon.Monitor.get_default()
compartment = monitor.create_compartment('installed', 0, 'installed@example.org')
with compartment:          # the override's context manager
    pass
print(GIRepository.Repository.get_default().get_typelib_path('Perfmon'))
print(gi.overrides.Perfmon.__file__)
print('%d.%d.%d' % (Perfmon.MAJOR_VERSION, Perfmon.MINOR_VERSION, Perfmon.MICRO_VERSION))
'''

GJS_SCRIPT = r'''
imports.gi.versions.Perfmon = '1';
imports.gi.versions.GIRepository = '2.0';
const {GIRepository, Perfmon} = imports.gi;
const monitor = Perfmon.Monitor.get_default();
const compartment = monitor.create_compartment('installed', 0, 'installed@example.org');
compartment.enter();
compartment.leave();
print(GIRepository.Repository.get_default().get_typelib_path('Perfmon'));
'''


class InstallTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix='perfmon-install-')
        cls.destdir = os.path.join(cls.tmp, 'root')
        subprocess.run([MESON, 'install', '-C', BUILDDIR, '--no-rebuild', '--quiet',
                        '--destdir', cls.destdir], check=True, stdout=subprocess.DEVNULL)
        installed = json.loads(subprocess.run([MESON, 'introspect', '--installed', BUILDDIR],
                                              check=True, stdout=subprocess.PIPE).stdout)
        # Where each file went, by its name.
        cls.where = {os.path.basename(k): v for k, v in installed.items()}
        options = json.loads(subprocess.run([MESON, 'introspect', '--buildoptions', BUILDDIR],
                                            check=True, stdout=subprocess.PIPE).stdout)
        cls.options = {o['name']: o['value'] for o in options}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def installed(self, name):
        self.assertIn(name, self.where, '%s is not installed' % name)
        path = self.destdir + self.where[name]
        self.assertTrue(os.path.exists(path), path)
        return path

    def dir_of(self, option):
        value = self.options[option]
        return value if os.path.isabs(value) else os.path.join(self.options['prefix'], value)

    def env(self):
        """The environment of a user of the installed copy: nothing of the build."""
        env = {k: v for k, v in os.environ.items()
               if BUILDDIR not in v and SOURCEDIR not in v
               and k not in ('LD_LIBRARY_PATH', 'GI_TYPELIB_PATH', 'PYTHONPATH', 'PKG_CONFIG_PATH')}
        libdir = os.path.dirname(self.installed('libperfmon-1.so.0'))
        env['LD_LIBRARY_PATH'] = libdir
        env['GI_TYPELIB_PATH'] = os.path.dirname(self.installed('Perfmon-1.typelib'))
        # The installed .pc, with its prefix moved under the staging root
        # (what a relocated install needs; the rest of the file is as is).
        pcdir = os.path.join(self.tmp, 'pkgconfig')
        os.makedirs(pcdir, exist_ok=True)
        with open(self.installed('perfmon-1.pc')) as f:
            pc = f.read()
        self.assertIn('prefix=%s\n' % self.options['prefix'], pc)
        with open(os.path.join(pcdir, 'perfmon-1.pc'), 'w') as f:
            f.write(pc.replace('prefix=%s\n' % self.options['prefix'],
                               'prefix=%s%s\n' % (self.destdir, self.options['prefix']), 1))
        env['PKG_CONFIG_PATH'] = pcdir
        # The override's directory is .../gi/overrides: .../ on sys.path.
        overrides = os.path.dirname(self.installed('Perfmon.py'))
        env['PYTHONPATH'] = os.path.dirname(os.path.dirname(overrides))
        env['XDG_STATE_HOME'] = os.path.join(self.tmp, 'state')
        # GJS's override, in DATADIR/gjs-1.0/overrides, first.
        env['XDG_DATA_DIRS'] = ':'.join([os.path.dirname(os.path.dirname(os.path.dirname(
            self.installed('Perfmon.js'))))] + os.environ.get('XDG_DATA_DIRS', '/usr/local/share:/usr/share').split(':'))
        env.pop('DBUS_SESSION_BUS_ADDRESS', None)
        return env

    def run_checked(self, argv, env, cwd=None):
        result = subprocess.run(argv, env=env, cwd=cwd or self.tmp, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
        self.assertEqual(result.returncode, 0, '%s failed:\n%s%s' % (argv, result.stdout, result.stderr))
        return result.stdout

    def test_perfmond_in_libexec(self):
        perfmond = self.where['perfmond']
        self.assertEqual(os.path.dirname(perfmond), self.dir_of('libexecdir'))
        self.installed('perfmond')
        with open(self.installed('org.perfmon.Daemon1.service')) as f:
            self.assertIn('Exec=%s\n' % perfmond, f.read())
        with open(self.installed('perfmond.service')) as f:
            self.assertIn('ExecStart=%s\n' % perfmond, f.read())

    def test_pkg_config_requires_libunwind_privately(self):
        out = self.run_checked(['pkg-config', '--print-requires-private', 'perfmon-1'], self.env())
        self.assertIn('libunwind', out)
        # A static link needs elfutils' too.
        self.assertIn('libdw', out)
        self.assertIn('libelf', out)

    def test_override_inside_the_prefix(self):
        # Everything goes under the prefix, the override too (before, it
        # went to PyGObject's own directory in /usr whatever the prefix):
        # PYTHONPATH=<its directory's grandparent> finds it.
        if self.options.get('pygobject_overridesdir'):
            self.skipTest('-Dpygobject_overridesdir is set')
        prefix = self.options['prefix'].rstrip('/') + '/'
        for name in ('Perfmon.py', 'perfmon_pygobject.py'):
            self.assertIn(name, self.where)
            self.assertTrue(self.where[name].startswith(prefix), self.where[name])
            self.assertTrue(self.where[name].endswith('/gi/overrides/' + name), self.where[name])

    def test_preload_python_hook_is_compiled(self):
        # perfmon run's Python hook is installed with its bytecode: a
        # program cannot write it into a directory it does not own, and
        # compiling it cost every Python start-up 13 million instructions.
        hook_dir = os.path.dirname(self.installed('sitecustomize.py'))
        tag = subprocess.run(['/usr/bin/python3', '-c', 'import sys; print(sys.implementation.cache_tag)'],
                             stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout.strip()
        for name in ('sitecustomize', 'perfmon_pygobject'):
            self.assertTrue(os.path.isfile(os.path.join(hook_dir, '__pycache__', '%s.%s.pyc' % (name, tag))),
                            os.listdir(hook_dir))

    def library_in_the_system(self):
        """Whether the dynamic loader finds a libperfmon-1 without
        LD_LIBRARY_PATH (an earlier install on this machine)."""
        return subprocess.run(['/usr/bin/python3', '-c', 'import ctypes; ctypes.CDLL("libperfmon-1.so.0")'],
                              env=self.env_without_library_path(), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode == 0

    def shadowing_python_override(self):
        """A Perfmon.py in PyGObject's own gi/overrides (an install of
        before 0.3 put it there, whatever the prefix): PyGObject looks
        there before any PYTHONPATH directory, so it shadows the one
        installed here. The path, or None."""
        result = subprocess.run(['/usr/bin/python3', '-c',
                                 'import gi.overrides, os; print(os.path.dirname(gi.overrides.__file__))'],
                                env=self.env(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                universal_newlines=True)
        path = os.path.join(result.stdout.strip(), 'Perfmon.py')
        overrides = os.path.dirname(self.installed('Perfmon.py'))
        if result.returncode == 0 and os.path.exists(path) and os.path.dirname(path) != overrides:
            return path
        return None

    def skip_if_python_override_shadowed(self):
        path = self.shadowing_python_override()
        if path:
            self.skipTest('%s (an earlier install) shadows any PYTHONPATH: delete it' % path)

    def env_without_library_path(self):
        env = self.env()
        del env['LD_LIBRARY_PATH']
        return env

    def test_python_says_what_to_set(self):
        # A custom prefix without LD_LIBRARY_PATH: the override says what
        # to set, not PyGObject's AssertionError.
        if self.library_in_the_system():
            self.skipTest('a libperfmon-1.so.0 is installed where the loader looks')
        self.skip_if_python_override_shadowed()
        result = subprocess.run(['/usr/bin/python3', '-c', PYTHON_SCRIPT], env=self.env_without_library_path(),
                                cwd=self.tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                universal_newlines=True, timeout=120)
        self.assertNotEqual(result.returncode, 0)
        libdir = os.path.dirname(self.installed('libperfmon-1.so.0'))
        self.assertIn('ImportError', result.stderr)
        self.assertIn('LD_LIBRARY_PATH=%s' % libdir, result.stderr)
        self.assertNotIn('AssertionError', result.stderr)

    @unittest.skipIf(shutil.which('gjs') is None, 'gjs missing')
    def test_gjs_says_what_to_set(self):
        # The same in GJS: its override says what to set, not GJS's
        # "Unsupported type void".
        prefix = self.options['prefix'].rstrip('/') + '/'
        self.assertTrue(self.where['Perfmon.js'].startswith(prefix), self.where['Perfmon.js'])
        self.assertTrue(self.where['Perfmon.js'].endswith('/gjs-1.0/overrides/Perfmon.js'))
        if self.library_in_the_system():
            self.skipTest('a libperfmon-1.so.0 is installed where the loader looks')
        result = subprocess.run(['gjs', '-c', GJS_SCRIPT], env=self.env_without_library_path(),
                                cwd=self.tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                universal_newlines=True, timeout=120)
        self.assertNotEqual(result.returncode, 0)
        libdir = os.path.dirname(self.installed('libperfmon-1.so.0'))
        self.assertIn('libperfmon-1.so.0 cannot be loaded', result.stderr)
        self.assertIn('set LD_LIBRARY_PATH=%s ' % libdir, result.stderr)

    @unittest.skipIf(shutil.which('dbus-daemon') is None, 'dbus-daemon missing')
    def test_activation_failure_says_why(self):
        # D-Bus finds the installed activation file, but the perfmond it
        # names cannot load its library (the staged copy's RUNPATH names
        # the final prefix): exit status 127. perfmon says what failed and
        # what to run, not only "exited with status 127".
        if self.library_in_the_system() or os.path.exists(os.path.join(self.dir_of('libdir'), 'libperfmon-1.so.0')):
            self.skipTest('a libperfmon-1.so.0 is installed where perfmond finds it: it would start')
        services = os.path.join(self.tmp, 'services')
        os.makedirs(services, exist_ok=True)
        with open(self.installed('org.perfmon.Daemon1.service')) as f:
            service = f.read()
        perfmond = os.path.join(self.dir_of('libexecdir'), 'perfmond')
        self.assertIn('Exec=%s\n' % perfmond, service)
        with open(os.path.join(services, 'org.perfmon.Daemon1.service'), 'w') as f:
            f.write(service.replace('Exec=%s\n' % perfmond, 'Exec=%s\n' % self.installed('perfmond'))
                    .replace('SystemdService=', '#SystemdService='))
        config = os.path.join(self.tmp, 'session.conf')
        with open(config, 'w') as f:
            f.write('<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"'
                    ' "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">\n'
                    '<busconfig><type>session</type><listen>unix:tmpdir=%s</listen>'
                    '<servicedir>%s</servicedir><policy context="default">'
                    '<allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/>'
                    '<allow own="*"/></policy></busconfig>\n' % (self.tmp, services))
        bus = subprocess.Popen(['dbus-daemon', '--config-file', config, '--nofork', '--print-address=1'],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True)
        try:
            env = self.env()
            env['DBUS_SESSION_BUS_ADDRESS'] = bus.stdout.readline().strip()
            env['XDG_RUNTIME_DIR'] = self.tmp
            result = subprocess.run([self.installed('perfmon'), 'top', '--once'], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    universal_newlines=True, timeout=120)
        finally:
            bus.terminate()
            bus.wait()
            bus.stdout.close()
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn('exited with status 127', result.stderr)
        self.assertIn('D-Bus could not start the perfmond daemon', result.stderr)
        self.assertIn('Run that file\'s Exec= program (this perfmon\'s is %s)' % perfmond, result.stderr)

    def test_programs_find_their_library(self):
        # perfmon, perfmond (started by D-Bus activation, whose environment
        # has no LD_LIBRARY_PATH), the demo and the preload module find the
        # library of their prefix.
        if self.options['prefix'] == '/usr':
            self.skipTest('the loader searches /usr')
        libdir = self.dir_of('libdir')
        for name in ('perfmon', 'perfmond', 'perfmon-example', 'libperfmon-preload.so'):
            dynamic = subprocess.run(['readelf', '-d', self.installed(name)], check=True,
                                     stdout=subprocess.PIPE, universal_newlines=True).stdout
            paths = [line.split('[', 1)[1].rstrip(']').split(':') for line in dynamic.split('\n')
                     if '(RUNPATH)' in line or '(RPATH)' in line]
            self.assertIn([libdir], paths, '%s:\n%s' % (name, dynamic))

    def test_c_with_pkg_config(self):
        env = self.env()
        with open(os.path.join(self.tmp, 'app.c'), 'w') as f:
            f.write(C_PROGRAM)
        flags = self.run_checked(['pkg-config', '--cflags', '--libs', 'perfmon-1'], env).split()
        self.assertTrue(all(BUILDDIR not in flag and SOURCEDIR not in flag for flag in flags), flags)
        self.run_checked(['cc', '-Wall', '-Werror', '-o', 'app', 'app.c'] + flags, env)
        library, version = self.run_checked([os.path.join(self.tmp, 'app')], env).split()
        self.assertTrue(library.startswith(self.destdir), library)
        info = json.loads(subprocess.run([MESON, 'introspect', '--projectinfo', BUILDDIR],
                                         stdout=subprocess.PIPE, check=True).stdout)
        self.assertEqual(version, info['version'])

    def test_version_string(self):
        info = json.loads(subprocess.run([MESON, 'introspect', '--projectinfo', BUILDDIR],
                                         stdout=subprocess.PIPE, check=True).stdout)
        self.assertEqual(PERFMON_VERSION_S, info['version'])

    def test_python(self):
        self.skip_if_python_override_shadowed()
        typelib, override, version = self.run_checked(['/usr/bin/python3', '-c', PYTHON_SCRIPT],
                                                      self.env()).split()
        self.assertEqual(version, PERFMON_VERSION_S)
        self.assertTrue(typelib.startswith(self.destdir), typelib)
        self.assertTrue(override.startswith(self.destdir), override)

    @unittest.skipIf(shutil.which('gjs') is None, 'gjs missing')
    def test_gjs(self):
        typelib = self.run_checked(['gjs', '-c', GJS_SCRIPT], self.env()).strip()
        self.assertTrue(typelib.startswith(self.destdir), typelib)

    def test_api_reference(self):
        if not self.options['documentation']:
            self.skipTest('built without -Ddocumentation=true')
        reference = self.installed('perfmon-1')
        self.assertEqual(os.path.dirname(self.where['perfmon-1']),
                         os.path.join(self.dir_of('datadir'), 'doc'))
        self.assertTrue(os.path.exists(os.path.join(reference, 'index.html')))
        self.assertTrue(os.path.exists(os.path.join(reference, 'class.HangMonitor.html')))

    def test_man_pages_and_completion(self):
        self.installed('perfmon.1')
        self.installed('perfmond.8')
        completions = [v for v in self.where.values() if v.endswith('/bash-completion/completions/perfmon')]
        self.assertEqual(len(completions), 1, self.where)
        self.assertTrue(os.path.exists(self.destdir + completions[0]))


if __name__ == '__main__':
    unittest.main(verbosity=2)
