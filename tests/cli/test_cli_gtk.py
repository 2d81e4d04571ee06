#!/usr/bin/python3
# test_cli_gtk.py: automatic groups of real GTK 4 programs under perfmon
# run, on Xvfb (xvfb-run) and a private bus with perfmond
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# gtk4-demo (Debian's gtk-4-examples) is a program nobody here wrote: its
# frame clock's sources must show as automatic groups with CPU time. A
# stall inside GTK's paint (a PyGObject GTK 4 program whose drawing
# function blocks) must be a hang whose runnable is GTK's paint source.

import json
import os
import shutil
import subprocess
import unittest

from clitest import BusTestCase, TOOL

HERE = os.path.dirname(os.path.abspath(__file__))


def have_pygobject_gtk4():
    return subprocess.run(['/usr/bin/python3', '-c', 'import gi; gi.require_version("Gtk", "4.0")'],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


@unittest.skipIf(shutil.which('xvfb-run') is None, 'xvfb-run missing (Debian: xvfb, xauth)')
class GtkTest(BusTestCase):
    def start_under_xvfb(self, *command, env=None, run_args=()):
        """Starts perfmon run -- COMMAND under xvfb-run; returns the
        process and the command's pid (the child of perfmon run)."""
        pidfile = self.path('pid')
        script = 'echo $$ > "$0"; exec "$@"'
        process = self.start(['xvfb-run', '-a', 'sh', '-c', script, pidfile, TOOL, 'run'] + list(run_args) + ['--']
                             + list(command),
                             env=self.foreign_env(env=env), stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, universal_newlines=True)

        def read_pid():
            try:
                with open(pidfile) as f:
                    run_pid = int(f.read().strip() or 0)
                with open('/proc/%d/task/%d/children' % (run_pid, run_pid)) as f:
                    children = f.read().split()
                return int(children[0]) if children else 0
            except (OSError, ValueError):
                return 0
        pid = self.eventually(read_pid, 'the program to start')
        return process, pid

    def snapshot(self, pid):
        result = self.perfmon('snapshot', '--pid', str(pid), '--json')
        if result.returncode != 0:
            return None
        return json.loads(result.stdout)

    def automatic_groups(self, pid):
        data = self.snapshot(pid)
        if data is None:
            return None
        return {g['name']: g for g in data['groups'] if g['kind'] == 'compartment'}

    @unittest.skipIf(shutil.which('gtk4-demo') is None, 'gtk4-demo missing (Debian: gtk-4-examples)')
    def test_gtk4_demo_frame_clock_groups(self):
        self.start_daemon()
        env = dict(self.env)
        env['GSK_RENDERER'] = 'cairo'
        _, pid = self.start_under_xvfb('gtk4-demo', '--run=spinner', env=env)

        def frame_clock_ran():
            groups = self.automatic_groups(pid) or {}
            paint = groups.get('[gtk] gdk_frame_clock_paint_idle')
            return groups if paint and paint['cpu_time'] > 0 and paint['ticks'] > 0 else None
        groups = self.eventually(frame_clock_ran, 'gtk4-demo to paint frames', timeout=60)
        # GDK's own kind of source (its X11 event source, made in libgtk
        # with GDK's GSourceFuncs) is seen too, and GIO's named idles.
        self.assertTrue(any(name.startswith('GDK X11 Event source') for name in groups), sorted(groups))
        self.assertTrue(any(name.startswith('[gio] ') for name in groups), sorted(groups))
        for name in groups:
            self.assertLessEqual(len(name.encode()), 95)

    def wait_for_hang(self, pid, runnable='[gtk] gdk_frame_clock_paint_idle'):
        """The program's hangs whose runnable is @runnable, once there is
        one. A loaded machine (the sanitizer step) may add other hangs
        first (a slow start-up, an event source): what is promised is that
        the stall is a hang with that runnable, not that it comes first."""
        def hang_listed():
            result = self.perfmon('hangs', 'list', '--json')
            if result.returncode != 0:
                return None
            hangs = [h for h in json.loads(result.stdout)
                     if h.get('pid') == pid and h.get('runnable_name') == runnable]
            return hangs or None
        return self.eventually(hang_listed, 'the stall to be reported to perfmond', timeout=60)

    @unittest.skipIf(shutil.which('gtk4-demo') is None, 'gtk4-demo missing (Debian: gtk-4-examples)')
    def test_gtk4_demo_stall_is_the_hang_runnable(self):
        # The stall is provoked without touching gtk4-demo: a theme whose
        # every widget is blurred and shadowed far beyond what the cairo
        # renderer draws quickly makes each of GTK's paints take long.
        theme = os.path.join(self.tmp, 'data', 'themes', 'Slow', 'gtk-4.0')
        os.makedirs(theme)
        with open(os.path.join(theme, 'gtk.css'), 'w') as f:
            f.write('* { filter: blur(40px); box-shadow: 0 0 300px 150px rgba(0, 0, 0, 0.5); }\n')
        self.start_daemon()
        env = dict(self.env)
        env.update(GSK_RENDERER='cairo', GTK_THEME='Slow', XDG_DATA_HOME=os.path.join(self.tmp, 'data'))
        _, pid = self.start_under_xvfb('gtk4-demo', '--run=spinner', env=env,
                                       run_args=['--threshold', '100'])
        hangs = self.wait_for_hang(pid)
        self.assertEqual(hangs[0]['runnable_name'], '[gtk] gdk_frame_clock_paint_idle')
        self.assert_dispatches_listed(hangs[0]['id'])

    def assert_dispatches_listed(self, hang_id):
        # The report lists the stretch's longest dispatches, GTK's paint
        # first.
        result = self.perfmon('hangs', 'show', hang_id)
        self.assertExit(result, 0)
        self.assertRegex(result.stdout, r'Dispatches \(longest first\):\n +\d+ ms  \[gtk\] gdk_frame_clock_paint_idle\n')

    @unittest.skipUnless(have_pygobject_gtk4(), 'GTK 4 for PyGObject missing (Debian: gir1.2-gtk-4.0)')
    def test_gtk_paint_stall_is_the_hang_runnable(self):
        self.start_daemon()
        env = dict(self.env)
        env['GSK_RENDERER'] = 'cairo'
        _, pid = self.start_under_xvfb('/usr/bin/python3', os.path.join(HERE, 'gtk_stall.py'),
                                       env=env, run_args=['--threshold', '150'])

        hangs = self.wait_for_hang(pid)
        self.assertEqual(hangs[0]['runnable_name'], '[gtk] gdk_frame_clock_paint_idle')
        self.assert_dispatches_listed(hangs[0]['id'])
        groups = self.automatic_groups(pid)
        if groups is not None:
            self.assertIn('[gtk] gdk_frame_clock_paint_idle', groups)


if __name__ == '__main__':
    unittest.main(verbosity=2)
