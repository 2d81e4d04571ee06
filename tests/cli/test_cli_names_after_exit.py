#!/usr/bin/python3
# test_cli_names_after_exit.py: the "module+0x…" names of a program that
# has exited are still named by the tool, from what its task log and its
# snapshots recorded of the modules (issue 23, point 10)
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/uninstrumented-loop's callbacks are static functions: perfmon run
# names their groups and tasks "GTimeoutSource (uninstrumented-loop+0x…)".
# Once the program is gone there is no /proc/PID/maps to find its file in:
# the task log and the snapshots must say, once per module, its path, load
# base and GNU build id, so that `perfmon symbolize` (task logs, snapshots,
# perfmon run's summary) and `perfmon tasks` name the callbacks afterwards.
# A stripped copy of the program, whose symbols are only in a debug file
# found by build id, shows that the build id is recorded; the unstripped
# program, whose own .symtab names them, that the path is.

import json
import os
import re
import shutil
import subprocess
import sys
import unittest

from clitest import BusTestCase, TOOL, stripped_copy

UNINSTRUMENTED = os.environ['PERFMON_UNINSTRUMENTED']
TICK = re.compile(r'GTimeoutSource \(uninstrumented-loop\+0x[0-9a-f]+ \(tick\)\)')
TICK_TASK = re.compile(r'uninstrumented-loop\+0x[0-9a-f]+ \(tick\)')
UNNAMED_TASK = re.compile(r'uninstrumented-loop\+0x[0-9a-f]+\)')


@unittest.skipIf(shutil.which('objcopy') is None or shutil.which('strip') is None, 'binutils missing')
class NamesAfterExitTest(BusTestCase):
    def stripped_program(self):
        """A stripped copy of uninstrumented-loop, and a debug directory
        holding its symbols by build id."""
        return stripped_copy(UNINSTRUMENTED, self.path(''))

    def run_to_the_end(self, program, snapshot=None):
        """Runs @program under perfmon run with a task log and a summary;
        with @snapshot, lingers 10 s after its hang and has `perfmon
        snapshot -o SNAPSHOT` taken while it lives. Returns when it has
        exited."""
        trace = self.path('run.trace')
        summary = self.path('summary.json')
        env = self.foreign_env()
        argv = [TOOL, 'run', '--trace', trace, '--summary', summary, '--', program]
        if snapshot is not None:
            argv.append('10')
        else:
            env['PERFMON_RUN_NO_EXPORT'] = '1'
        process = self.start(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             universal_newlines=True)
        if snapshot is not None:
            def command_pid():
                try:
                    with open('/proc/%d/task/%d/children' % (process.pid, process.pid)) as f:
                        children = f.read().split()
                    return int(children[0]) if children else 0
                except (OSError, ValueError):
                    return 0
            pid = self.eventually(command_pid, 'the program to start')

            def take():
                result = self.perfmon('snapshot', '--pid', str(pid), '-o', snapshot)
                if result.returncode != 0:
                    return None
                with open(snapshot) as f:
                    return 'uninstrumented-loop+0x' in f.read()
            self.eventually(take, 'a snapshot with the static callbacks', timeout=60)
        _, err = process.communicate(timeout=60)
        self.assertEqual(process.returncode, 3, err)
        # Gone: no /proc/PID/maps names its file any more.
        return trace, summary

    def test_stripped_program_after_exit(self):
        program, debug_dir, build_id = self.stripped_program()
        self.start_daemon()
        snapshot = self.path('snapshot.json')
        trace, summary = self.run_to_the_end(program, snapshot)
        env = dict(self.env)
        env['PERFMON_DEBUG_DIRS'] = debug_dir

        # The snapshots say, once, which file the module was and its build id.
        with open(snapshot) as f:
            data = json.load(f)
        modules = [m for m in data.get('modules', []) if m['name'] == 'uninstrumented-loop']
        self.assertEqual(len(modules), 1, data.get('modules'))
        self.assertEqual(modules[0]['path'], program)
        self.assertEqual(modules[0]['build_id'], build_id)
        with open(summary) as f:
            data = json.load(f)
        self.assertIn(build_id, [m['build_id'] for m in data['snapshot'].get('modules', [])])

        # perfmon symbolize, on the task log, the snapshot and the summary.
        for path, expected in ((trace, TICK_TASK), (snapshot, TICK), (summary, TICK)):
            result = self.perfmon('symbolize', '--debug-dir', debug_dir, path)
            self.assertExit(result, 0)
            self.assertRegex(result.stdout, expected, path)

        # perfmon tasks, with the debug directory in the environment.
        result = self.perfmon('tasks', 'dump', trace, env=env)
        self.assertExit(result, 0)
        self.assertRegex(result.stdout, TICK_TASK)

        # Without the debug file the tool invents nothing: perfmon
        # symbolize names no group, perfmon tasks shows the program's names.
        result = self.perfmon('symbolize', '--debug-dir', self.path('nothing'), snapshot)
        self.assertExit(result, 0)
        self.assertNotRegex(result.stdout, TICK)
        env['PERFMON_DEBUG_DIRS'] = self.path('nothing')
        result = self.perfmon('tasks', 'dump', trace, env=env)
        self.assertExit(result, 0)
        self.assertNotRegex(result.stdout, TICK_TASK)
        self.assertRegex(result.stdout, UNNAMED_TASK)

    def test_hangs_after_exit(self):
        # perfmond lists the hang with the name the program gave its
        # runnable, "GIdleSource (uninstrumented-loop+0x…)": once the
        # program has exited, `perfmon hangs` names the callback from the
        # modules its report recorded (file name and build id), with the
        # same symbolizer and debug directories as the stacks.
        program, debug_dir, build_id = self.stripped_program()
        self.start_daemon()
        env = self.foreign_env()
        result = self.perfmon('run', '--', program, '2', env=env)
        self.assertEqual(result.returncode, 3, result.stderr)

        def listed():
            result = self.perfmon('hangs', 'list', '--json')
            return [h for h in json.loads(result.stdout)
                    if h['process_name'] == 'uninstrumented-loop'] if result.returncode == 0 else []
        hangs = self.eventually(listed, 'perfmond to list the hang')
        self.assertRegex(hangs[0]['runnable_name'], r'uninstrumented-loop\+0x[0-9a-f]+\)$')
        self.assertFalse(os.path.exists('/proc/%d' % hangs[0]['pid']))
        env = dict(self.env)
        env['PERFMON_DEBUG_DIRS'] = debug_dir
        block = r'GIdleSource \(uninstrumented-loop\+0x[0-9a-f]+ \(block_then_quit\)\)'

        result = self.perfmon('hangs', 'list', env=env)
        self.assertExit(result, 0)
        self.assertRegex(result.stdout, r'\n%s +%d uninstrumented-l +\d+ms  %s\n'
                         % (re.escape(hangs[0]['id']), hangs[0]['pid'], block))
        result = self.perfmon('hangs', 'show', hangs[0]['id'], env=env)
        self.assertExit(result, 0)
        self.assertRegex(result.stdout, r'^Hang %s: \d+ ms on thread "[^"]*", running %s\n'
                         % (re.escape(hangs[0]['id']), block))
        self.assertRegex(result.stdout, r'Stack tree of 1 hang of pid %d in %s ' % (hangs[0]['pid'], block))
        # The stack names it too: the same symbolizer.
        self.assertRegex(result.stdout, r'#\d+ +uninstrumented-loop\+0x[0-9a-f]+ \(block_then_quit\+0x')

        # Without the debug file the tool invents nothing.
        env['PERFMON_DEBUG_DIRS'] = self.path('nothing')
        result = self.perfmon('hangs', 'list', env=env)
        self.assertExit(result, 0)
        self.assertNotIn('block_then_quit', result.stdout)
        self.assertRegex(result.stdout, r'GIdleSource \(uninstrumented-loop\+0x[0-9a-f]+\)\n')

    def test_unstripped_program_after_exit(self):
        # Its own .symtab names the static callbacks: the recorded path is
        # what finds it.
        program = self.path('uninstrumented-loop')
        shutil.copy(UNINSTRUMENTED, program)
        trace, summary = self.run_to_the_end(program)
        env = dict(self.env)
        env['PERFMON_DEBUG_DIRS'] = self.path('nothing')

        result = self.perfmon('tasks', 'dump', trace, env=env)
        self.assertExit(result, 0)
        self.assertRegex(result.stdout, TICK_TASK)
        for path, expected in ((trace, TICK_TASK), (summary, TICK)):
            result = self.perfmon('symbolize', path, env=env)
            self.assertExit(result, 0)
            self.assertRegex(result.stdout, expected, path)

    def test_gtask_without_source_tag(self):
        # GTask's pool runs the task through a static function of libgio:
        # without libgio's debug symbols it could only be
        # "libgio-2.0.so.0+0x…". The task is named after the thread
        # function the program gave g_task_run_in_thread().
        program = os.environ['PERFMON_UNTAGGED_GTASK']
        trace = self.path('gtask.trace')
        env = self.foreign_env()
        env['PERFMON_RUN_NO_EXPORT'] = '1'
        result = self.perfmon('run', '--trace', trace, '--', program, env=env)
        self.assertExit(result, 0)
        # perfmon run's summary, printed once the program has ended, names
        # its static callback from the modules the summary recorded.
        self.assertRegex(result.stderr, r'busiest groups \(CPU\): .*GTimeoutSource \(untagged-gtask\+0x[0-9a-f]+ \(start\)\)')
        result = self.perfmon('tasks', 'dump', '--json', trace)
        self.assertExit(result, 0)
        tasks = json.loads(result.stdout)['tasks']
        # The task the program's timeout ran in GLib's pool (the preload
        # module's own D-Bus connection may run GIO's tasks there too).
        starts = {t['id'] for t in tasks if t['name'].startswith('GTimeoutSource (untagged-gtask+0x')}
        workers = [t for t in tasks if t['parent_id'] in starts and t['thread'] != t['process']]
        self.assertEqual(len(workers), 1, result.stdout)
        # The program's name: the function itself, or its module and
        # offset, which the tool names.
        self.assertRegex(workers[0]['name'], r'^(untagged_worker|untagged-gtask\+0x[0-9a-f]+)$')
        result = self.perfmon('tasks', 'dump', trace)
        self.assertExit(result, 0)
        self.assertRegex(result.stdout, r'/\d+ +(untagged-gtask\+0x[0-9a-f]+ \()?untagged_worker')


if __name__ == '__main__':
    unittest.main(verbosity=2, argv=[sys.argv[0]])
