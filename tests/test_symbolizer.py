#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# test_symbolizer.py HANG-IN-STATIC PERFMON TRACE-STATIC-TASK
#
# Native symbols with elfutils: a static function is named from the .symtab
# of an unstripped program, and from a separate debug file found by build
# id in a private .build-id tree ($PERFMON_DEBUG_DIRS) once the program is
# stripped; without the debug file it is not.
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest

PROGRAM = os.path.abspath(sys.argv.pop(1))
PERFMON = os.path.abspath(sys.argv.pop(1))
TRACE_STATIC_TASK = os.path.abspath(sys.argv.pop(1))
FUNCTION = 'hang_in_static_function'


def build_id(path):
    out = subprocess.run(['readelf', '-n', path], check=True,
                         capture_output=True, text=True).stdout
    return re.search(r'Build ID: ([0-9a-f]+)', out).group(1)


def run_hang(program, debug_dirs, json_path=None, pings_dir=None, extra_env=None):
    env = dict(os.environ)
    env['PERFMON_DEBUG_DIRS'] = debug_dirs
    env.pop('DEBUGINFOD_URLS', None)
    env.update(extra_env or {})
    args = [program] + (['--json', json_path] if json_path else [])
    args += ['--pings-dir', pings_dir] if pings_dir else []
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

    def strip_into_tree(self, program=PROGRAM):
        """A stripped copy of @program, its debug file in the private
        .build-id tree self.dir/debug."""
        stripped = os.path.join(self.dir, os.path.basename(program))
        debug = stripped + '.debug'
        subprocess.run(['objcopy', '--only-keep-debug', program, debug], check=True)
        subprocess.run(['objcopy', '--strip-all', program, stripped], check=True)
        bid = build_id(stripped)
        tree = os.path.join(self.dir, 'debug', '.build-id', bid[:2])
        os.makedirs(tree)
        shutil.move(debug, os.path.join(tree, bid[2:] + '.debug'))
        return stripped, bid

    def symbolize(self, *args, check=True):
        env = dict(os.environ)
        env.pop('DEBUGINFOD_URLS', None)
        env['PERFMON_DEBUG_DIRS'] = os.path.join(self.dir, 'none')
        return subprocess.run([PERFMON, 'symbolize'] + list(args), env=env, check=check,
                              capture_output=True, text=True, timeout=60)

    def test_symbolize_report_and_ping(self):
        # A report and a ping written where the debug file was not: the
        # function has no name in them; `perfmon symbolize` with the debug
        # directory names it, as text and as JSON.
        stripped, bid = self.strip_into_tree()
        report = os.path.join(self.dir, 'report.json')
        pings = os.path.join(self.dir, 'pings')
        os.mkdir(pings)
        stack = run_hang(stripped, os.path.join(self.dir, 'none'), report, pings)
        self.assertFalse(named(stack), '\n'.join(stack))
        with open(report) as f:
            self.assertNotIn(FUNCTION, f.read())
        ping_files = [os.path.join(pings, name) for name in os.listdir(pings)
                      if name.endswith('.json')]
        self.assertEqual(len(ping_files), 1, os.listdir(pings))

        debug_dir = os.path.join(self.dir, 'debug')
        self.assertNotIn(FUNCTION, self.symbolize(report).stdout)
        out = self.symbolize('--debug-dir', debug_dir, report).stdout
        self.assertRegex(out, r'#\d+ +hang-in-static\+0x[0-9a-f]+ \(%s\+0x[0-9a-f]+\)' % FUNCTION)

        doc = json.loads(self.symbolize('--json', '-d', debug_dir, report).stdout)
        self.assertEqual(len(doc['symbols']), len(doc['stack']))
        self.assertTrue(any(s and s.startswith(FUNCTION + '+0x') for s in doc['symbols']), doc['symbols'])
        with open(report) as f:
            original = json.load(f)
        self.assertEqual(doc['stack'], original['stack'])
        self.assertEqual(doc['modules'], original['modules'])

        ping = json.loads(self.symbolize('--json', '-d', debug_dir, ping_files[0]).stdout)
        self.assertEqual(ping['type'], 'bhr')
        hang = ping['payload']['hangs'][0]
        self.assertTrue(any(s and s.startswith(FUNCTION + '+0x') for s in hang['symbols']), hang)
        self.assertIn(FUNCTION, self.symbolize('-d', debug_dir, ping_files[0]).stdout)

        # Several files: one JSON object by file name; one bad file fails
        # the command but not the others.
        bad = os.path.join(self.dir, 'bad.txt')
        with open(bad, 'w') as f:
            f.write('nothing perfmon wrote\n')
        result = self.symbolize('--json', '-d', debug_dir, report, ping_files[0], bad, check=False)
        self.assertEqual(result.returncode, 1)
        self.assertIn(bad, result.stderr)
        both = json.loads(result.stdout)
        self.assertEqual(set(both), {report, ping_files[0]})
        self.assertEqual(both[report]['symbols'], doc['symbols'])

    def test_symbolize_stack_tree(self):
        # A jank stack tree (the seed's text) of the stripped program.
        stripped, bid = self.strip_into_tree()
        address = int(subprocess.run(['nm', PROGRAM], check=True, capture_output=True, text=True)
                      .stdout.split(' ' + FUNCTION)[0].split('\n')[-1].split()[0], 16)
        readelf = subprocess.run(['readelf', '-lW', PROGRAM], check=True, capture_output=True,
                                 text=True).stdout
        vaddr = int([l.split()[2] for l in readelf.splitlines() if l.split()[:1] == ['LOAD']][0], 16)
        tree = os.path.join(self.dir, 'MAIN_THREAD_JANK_1_2.txt')
        with open(tree, 'w') as f:
            f.write('3 #00 pc %08x %s(%s)\n' % (0x1000, stripped, bid))
            f.write('    3 #01 pc %08x %s(%s)\n' % (address - vaddr + 4, stripped, bid))
        out = self.symbolize('-d', os.path.join(self.dir, 'debug'), tree).stdout
        self.assertIn('    3 #01 pc %08x %s(%s+4)(%s)\n' % (address - vaddr + 4, stripped, FUNCTION, bid), out)
        doc = json.loads(self.symbolize('--json', '-d', os.path.join(self.dir, 'debug'), tree).stdout)
        self.assertEqual(doc['frames'][1]['symbol'], FUNCTION + '+4')
        self.assertEqual(doc['frames'][1]['buildId'], bid)
        self.assertIsNone(doc['frames'][1]['dispatch'])

        # A tree whose samples are grouped by dispatch: the header lines
        # stay, and each frame of the JSON says its dispatch.
        grouped = os.path.join(self.dir, 'MAIN_THREAD_JANK_1_3.txt')
        with open(grouped, 'w') as f:
            f.write('3 dispatch: [app] spell-check\n')
            f.write('3 #00 pc %08x %s(%s)\n' % (0x1000, stripped, bid))
            f.write('    3 #01 pc %08x %s(%s)\n' % (address - vaddr + 4, stripped, bid))
            f.write('1 dispatch: on_timeout\n')
            f.write('1 #00 pc %08x %s(%s)\n' % (address - vaddr + 4, stripped, bid))
        out = self.symbolize('-d', os.path.join(self.dir, 'debug'), grouped).stdout
        self.assertTrue(out.startswith('3 dispatch: [app] spell-check\n'), out)
        self.assertIn('    3 #01 pc %08x %s(%s+4)(%s)\n1 dispatch: on_timeout\n'
                      % (address - vaddr + 4, stripped, FUNCTION, bid), out)
        doc = json.loads(self.symbolize('--json', '-d', os.path.join(self.dir, 'debug'), grouped).stdout)
        self.assertEqual([(f['dispatch'], f['depth']) for f in doc['frames']],
                         [('[app] spell-check', 0), ('[app] spell-check', 1), ('on_timeout', 0)])
        self.assertEqual(doc['frames'][2]['symbol'], FUNCTION + '+4')

    def test_symbolize_bad_input(self):
        bad = os.path.join(self.dir, 'bad.json')
        with open(bad, 'w') as f:
            f.write('{"hello": 1}')
        result = self.symbolize(bad, check=False)
        self.assertEqual(result.returncode, 1)
        self.assertIn('neither a hang report', result.stderr)
        result = self.symbolize('--time-budget', '0x', bad, check=False)
        self.assertEqual(result.returncode, 2)

    def test_task_log_names_static_function(self):
        # The program writes "trace-static-task+0x…" (it symbolizes
        # nothing, issue 23 point 10) with the module's MODULE record;
        # `perfmon tasks` and `perfmon symbolize` name it from the
        # program's .symtab.
        log = os.path.join(self.dir, 'static.tasks')
        subprocess.run([TRACE_STATIC_TASK, log], check=True, timeout=60)
        dump = subprocess.run([PERFMON, 'tasks', log, 'dump'], check=True,
                              capture_output=True, text=True).stdout
        self.assertRegex(dump, r'trace-static-task\+0x[0-9a-f]+ \(static_traced_callback\)')
        doc = json.loads(self.symbolize('--json', log).stdout)
        self.assertEqual(list(doc['functions'].values()), ['static_traced_callback'], doc)
        # The Chrome trace that `perfmon tasks export` writes names it too.
        trace = json.loads(subprocess.run([PERFMON, 'tasks', log, 'export', '-'], check=True,
                                          capture_output=True, text=True).stdout)
        names = [e.get('name', '') for e in trace['traceEvents']]
        self.assertTrue(any(re.fullmatch(r'trace-static-task\+0x[0-9a-f]+ \(static_traced_callback\)', n)
                            for n in names), names)

    def test_task_log_of_stripped_program(self):
        # The log records the stripped program's path and build id: the
        # tool finds the debug file by build id in its debug directories
        # (what the program's environment says does not matter).
        stripped, bid = self.strip_into_tree(TRACE_STATIC_TASK)
        env = dict(os.environ)
        env.pop('DEBUGINFOD_URLS', None)
        log = os.path.join(self.dir, 'stripped.tasks')
        env['PERFMON_DEBUG_DIRS'] = os.path.join(self.dir, 'debug')
        subprocess.run([stripped, log], env=env, check=True, timeout=60)
        for debug_dirs, expected in ((os.path.join(self.dir, 'none'), False),
                                     (os.path.join(self.dir, 'debug'), True)):
            env['PERFMON_DEBUG_DIRS'] = debug_dirs
            dump = subprocess.run([PERFMON, 'tasks', log, 'dump'], env=env, check=True,
                                  capture_output=True, text=True).stdout
            self.assertEqual('static_traced_callback' in dump, expected, dump)

    def test_debuginfod(self):
        # A debuginfod server (here a minimal one on loopback) has the debug
        # file; DEBUGINFOD_URLS points at it.
        stripped, bid = self.strip_into_tree()
        debug_file = os.path.join(self.dir, 'debug', '.build-id', bid[:2], bid[2:] + '.debug')
        requests = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                requests.append(self.path)
                if self.path == '/buildid/%s/debuginfo' % bid:
                    with open(debug_file, 'rb') as f:
                        data = f.read()
                    self.send_response(200)
                    self.send_header('Content-Length', str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                else:
                    self.send_error(404)

            def log_message(self, *args):
                pass

        server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        url = 'http://127.0.0.1:%d' % server.server_address[1]
        cache = os.path.join(self.dir, 'debuginfod-cache')
        stack = run_hang(stripped, os.path.join(self.dir, 'none'),
                         extra_env={'DEBUGINFOD_URLS': url, 'DEBUGINFOD_CACHE_PATH': cache})
        self.assertIn('/buildid/%s/debuginfo' % bid, requests)
        self.assertTrue(named(stack), '\n'.join(stack))

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
