#!/usr/bin/python3
# test_cli_view.py: perfmon view and perfmond's about:performance page
# (issue 25, points 1-4): the hostile cases against the page's server, and
# the page in Debian's headless chromium with gtk4-demo (under xvfb-run),
# a Python program and a GJS program with an extension, all run with
# perfmon run.
#
# Screenshots go to $PERFMON_VIEW_SCREENSHOTS when it is set.
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import json
import os
import re
import resource
import shutil
import socket
import subprocess
import time
import unittest
import urllib.error
import urllib.request

from clitest import BusTestCase, TOOL

CHROMIUM = shutil.which('chromium')
CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
                  '--disable-background-networking', '--disable-component-update', '--disable-sync',
                  '--hide-scrollbars']

# A Python program as people write them: some work every 50 ms, and a
# callback that blocks the loop 400 ms every 3 s.
PYTHON_PROGRAM = """
import time
from gi.repository import GLib

def work():
    start = time.process_time()
    while time.process_time() - start < 0.01:
        sum(range(1000))
    return GLib.SOURCE_CONTINUE

def stall():
    time.sleep(0.4)
    return GLib.SOURCE_CONTINUE

# A lambda: its group's name has "<" and ">", which the page must show
# as text.
GLib.timeout_add(50, lambda: work())
GLib.timeout_add(3000, stall)
GLib.MainLoop().run()
"""

# A GJS program with two extensions laid out as GNOME Shell's: the slow
# one's handler of a signal the program emits every 1.5 s blocks the loop
# 400 ms, so its hangs name the add-on; the promise-heavy one burns its
# CPU in promise jobs (GjsPromiseJobQueueSource), which no creation site
# of its own covers: charged by sampling, shown "+x % sampled" after its
# name. Loaded while the loop runs, as GNOME Shell does: a loop run after
# a top-level await would run inside a promise job, where GJS runs no
# other (see tests/cli/gjs_addons_main.js).
GJS = shutil.which('gjs')
ADDON = 'slow@perfmon.test'
PROMISE_ADDON = 'promise@perfmon.test'
GJS_PROGRAM = """
import Gio from 'gi://Gio';
import GLib from 'gi://GLib';

const dir = `${GLib.get_user_data_dir()}/gnome-shell/extensions`;
const action = new Gio.SimpleAction({name: 'ping'});
Promise.all(['%s', '%s'].map(uuid => import(`file://${dir}/${uuid}/extension.js`))).then(modules => {
    modules.forEach(module => module.enable(action));
    GLib.timeout_add(GLib.PRIORITY_DEFAULT, 1500, () => {
        action.activate(null);
        return GLib.SOURCE_CONTINUE;
    });
}).catch(logError);
new GLib.MainLoop(null, false).run();
""" % (ADDON, PROMISE_ADDON)
GJS_EXTENSION = """
import GLib from 'gi://GLib';

function onActivate() {
    GLib.usleep(400000);
}

export function enable(action) {
    action.connect('activate', onActivate);
}
"""
# An async function: sleeps 50 ms, then awaits resolved promises, busy
# 5 ms after each; what follows each await is a promise job.
GJS_PROMISE_EXTENSION = """
import GLib from 'gi://GLib';

function sleep(ms) {
    return new Promise(resolve => GLib.timeout_add(GLib.PRIORITY_DEFAULT, ms, () => {
        resolve();
        return GLib.SOURCE_REMOVE;
    }));
}

function busy(ms) {
    const end = GLib.get_monotonic_time() + ms * 1000;
    let x = 0;
    while (GLib.get_monotonic_time() < end)
        x++;
    return x;
}

async function work() {
    for (;;) {
        await sleep(50);
        for (let i = 0; i < 6; i++) {
            await Promise.resolve();
            busy(5);
        }
    }
}

export function enable() {
    work().catch(logError);
}
"""


def get(url, headers=None, method='GET'):
    request = urllib.request.Request(url, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def fds(pid):
    return len(os.listdir('/proc/%d/fd' % pid))


class ViewTest(BusTestCase):
    def start_view(self, *args):
        self.log_path = self.path('perfmond.log')
        log = open(self.log_path, 'w')
        self.addCleanup(log.close)
        self.daemon = self.start([os.environ['PERFMOND_PATH'], '--poll-interval', '500'] + list(args),
                                 env=dict(self.env, G_MESSAGES_DEBUG='all'), stdout=log, stderr=log)
        result = self.eventually(lambda: (lambda r: r if r.returncode == 0 else None)(
            self.perfmon('view', '--print-url')), 'perfmon view --print-url', timeout=60)
        url = result.stdout.strip()
        match = re.fullmatch(r'(http://127\.0\.0\.1:(\d+)/)\?token=([A-Za-z0-9_-]{43})', url)
        self.assertTrue(match, url)
        self.url, self.base, self.port, self.token = url, match.group(1), int(match.group(2)), match.group(3)
        return url

    def test_print_url_starts_what_it_needs(self):
        """Without perfmond running, perfmon view --print-url gives a URL that works as given."""
        with open(os.path.join(self.tmp, 'org.perfmon.Daemon1.service'), 'w') as f:
            f.write('[D-BUS Service]\nName=org.perfmon.Daemon1\nExec=%s\n' % os.environ['PERFMOND_PATH'])
        config = self.path('session.conf')
        with open(config, 'w') as f:
            f.write('<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"\n'
                    ' "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">\n'
                    '<busconfig><type>session</type><listen>unix:tmpdir=%s</listen>'
                    '<servicedir>%s</servicedir><policy context="default"><allow send_destination="*"/>'
                    '<allow eavesdrop="true"/><allow own="*"/></policy></busconfig>\n' % (self.tmp, self.tmp))
        bus = subprocess.Popen(['dbus-daemon', '--config-file', config, '--nofork', '--print-address=1'],
                               stdout=subprocess.PIPE, universal_newlines=True, env=self.env)
        self.addCleanup(self.stop, bus)
        self.env['DBUS_SESSION_BUS_ADDRESS'] = bus.stdout.readline().strip()
        result = self.perfmon('view', '--print-url')
        self.assertExit(result, 0)
        status, headers, body = get(result.stdout.strip())
        self.assertEqual(status, 200)
        self.assertIn(b'about:performance', body)
        # perfmond stops with the bus (SIGTERM from the test's cleanup would
        # not reach an activated one): stop it by its pid.
        pid = int(subprocess.run(['dbus-send', '--session', '--print-reply=literal', '--dest=org.freedesktop.DBus',
                                  '/org/freedesktop/DBus', 'org.freedesktop.DBus.GetConnectionUnixProcessID',
                                  'string:org.perfmon.Daemon1'], env=self.env, stdout=subprocess.PIPE,
                                 universal_newlines=True).stdout.split()[-1])
        os.kill(pid, 15)

    def test_token_required_on_every_request(self):
        self.start_view()
        for path in ('', 'view.js', 'view.css', 'api/state'):
            self.assertEqual(get(self.base + path)[0], 401, path)
            self.assertEqual(get(self.base + path + '?token=' + 'A' * 43)[0], 401, path)
            self.assertEqual(get(self.base + path, {'Authorization': 'Bearer ' + self.token[:-1] + 'x'})[0], 401)
            self.assertEqual(get(self.base + path + '?token=' + self.token)[0], 200, path)
        # The trace download too; with the token, a pid perfmond does not
        # monitor has no trace, and a pid that is not one is refused.
        self.assertEqual(get(self.base + 'api/trace?pid=1')[0], 401)
        self.assertEqual(get(self.base + 'api/trace?pid=1&token=' + 'A' * 43)[0], 401)
        self.assertEqual(get(self.base + 'api/trace?pid=1&token=' + self.token)[0], 404)
        status, headers, body = get(self.base + 'api/trace?pid=../../etc/passwd&token=' + self.token)
        self.assertEqual(status, 400)
        self.assertNotIn(b'passwd', body)
        status, headers, body = get(self.base + 'api/state', {'Authorization': 'Bearer ' + self.token})
        self.assertEqual(status, 200)
        self.assertEqual(set(json.loads(body)), {'processes', 'hangs'})
        # The page says what it may load: nothing but itself.
        status, headers, body = get(self.url)
        self.assertIn("default-src 'none'", headers['Content-Security-Policy'])
        self.assertIn("connect-src 'self'", headers['Content-Security-Policy'])
        self.assertEqual(headers['Referrer-Policy'], 'no-referrer')
        # The token is in no log, even with every debug message.
        self.stop(self.daemon)
        with open(self.log_path) as f:
            log = f.read()
        self.assertIn('serves about:performance at ' + self.base, log)
        self.assertNotIn(self.token, log)

    def test_files_only_the_user_reads(self):
        self.start_view()
        directory = os.path.join(self.env['XDG_RUNTIME_DIR'], 'perfmon')
        self.assertEqual(os.stat(directory).st_mode & 0o777, 0o700)
        for name in ('http-token', 'view-url'):
            self.assertEqual(os.stat(os.path.join(directory, name)).st_mode & 0o777, 0o600, name)
        if os.getuid() != 0 or shutil.which('setpriv') is None:
            self.skipTest('another uid needs root and setpriv')
        # Another uid cannot read the token, so perfmon view fails for it,
        # and the page answers it 401.
        other = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups']
        result = subprocess.run(other + ['cat', os.path.join(directory, 'http-token')],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertNotEqual(result.returncode, 0)
        self.assertEqual(result.stdout, b'')
        result = subprocess.run(other + ['curl', '-s', '-o', '/dev/null', '-w', '%{http_code}', self.base + 'api/state'],
                                stdout=subprocess.PIPE, universal_newlines=True)
        self.assertEqual(result.stdout, '401')

    def test_no_path_traversal_no_state_change(self):
        self.start_view()
        auth = {'Authorization': 'Bearer ' + self.token}
        for path in ('../../../../etc/passwd', 'view.js/../../../etc/passwd', '%2e%2e/%2e%2e/etc/passwd',
                     '..%2f..%2fetc%2fpasswd', 'org/perfmon/view/view.js', 'view.js%00.css', '//etc/passwd',
                     'index.html', 'api/state/../../etc/passwd'):
            with socket.create_connection(('127.0.0.1', self.port), timeout=30) as sock:
                sock.sendall(('GET /%s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n'
                              'Connection: close\r\n\r\n' % (path, self.token)).encode())
                data = b''
                while True:
                    chunk = sock.recv(65536)
                    if not chunk:
                        break
                    data += chunk
            self.assertTrue(data.startswith(b'HTTP/1.1 404') or data.startswith(b'HTTP/1.1 400'), (path, data[:100]))
            self.assertNotIn(b'root:', data)
        for method in ('POST', 'PUT', 'DELETE'):
            self.assertEqual(get(self.base + 'api/state', auth, method=method)[0], 405, method)
            self.assertEqual(get(self.base + 'api/trace?pid=1', auth, method=method)[0], 405, method)

    def test_huge_headers_slowloris_and_1000_connections(self):
        self.start_view('--http-header-timeout=2')
        # Huge headers: 431, and the server still answers.
        with socket.create_connection(('127.0.0.1', self.port), timeout=30) as sock:
            try:
                sock.sendall(b'GET / HTTP/1.1\r\nX-Big: ' + b'a' * 100000 + b'\r\n\r\n')
            except (BrokenPipeError, ConnectionResetError):
                pass
            try:
                self.assertTrue(sock.recv(100).startswith(b'HTTP/1.1 431'))
            except ConnectionResetError:
                pass
        # Slowloris: a header trickling a byte at a time is cut off.
        with socket.create_connection(('127.0.0.1', self.port), timeout=30) as sock:
            sock.sendall(b'GET / HTTP/1.1\r\n')
            deadline = time.monotonic() + 60
            closed = False
            while not closed and time.monotonic() < deadline:
                try:
                    sock.sendall(b'X')
                    sock.settimeout(0.5)
                    closed = sock.recv(100) == b''
                except socket.timeout:
                    pass
                except (BrokenPipeError, ConnectionResetError):
                    closed = True
            self.assertTrue(closed)
        # 1,000 connections: at most the limit (64) open in perfmond.
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 1100)), hard))
        base = fds(self.daemon.pid)
        socks = []
        peak = base
        try:
            for i in range(1000):
                try:
                    socks.append(socket.create_connection(('127.0.0.1', self.port), timeout=30))
                except OSError:
                    pass
                if i % 50 == 0:
                    peak = max(peak, fds(self.daemon.pid))
        finally:
            for s in socks:
                s.close()
        self.assertLessEqual(peak, base + 64 + 2)
        self.eventually(lambda: get(self.url)[0] == 200, 'the page after 1,000 connections', timeout=60)

    @unittest.skipIf(shutil.which('readelf') is None or shutil.which('nm') is None, 'binutils missing')
    def test_perfmond_names_what_the_process_did_not(self):
        """A hang whose native frames came unnamed gets them named by
        perfmond, and merged by function in its process's flame graph."""
        glib = os.path.realpath('/lib/%s/libglib-2.0.so.0' % subprocess.run(
            ['gcc', '-print-multiarch'], stdout=subprocess.PIPE, universal_newlines=True).stdout.strip())
        notes = subprocess.run(['readelf', '-n', glib], stdout=subprocess.PIPE, universal_newlines=True).stdout
        build_id = bytes.fromhex(re.search(r'Build ID: ([0-9a-f]+)', notes).group(1))[:16]
        # Breakpad's id: the GUID's first three fields byte-swapped, age 0.
        guid = build_id[3::-1] + build_id[5:3:-1] + build_id[7:5:-1] + build_id[8:]
        breakpad_id = guid.hex().upper() + '0'
        symbols = subprocess.run(['nm', '-D', '--defined-only', glib], stdout=subprocess.PIPE,
                                 universal_newlines=True).stdout
        address = int(re.search(r'^([0-9a-f]+) T g_main_loop_run$', symbols, re.M).group(1), 16)
        report = {'duration': 300.0, 'thread': 'main', 'runnableName': 'unnamed-frames', 'process': 'tab',
                  'remoteType': 'web', 'annotations': [], 'pseudoStack': [],
                  'stack': ['outer label', [0, '%x' % (address + 0x20)], [0, '%x' % (address + 0x10)]],
                  'symbols': [None, None, None], 'modules': [['libglib-2.0.so.0', breakpad_id]]}
        cases = self.path('cases.json')
        with open(cases, 'w') as f:
            json.dump([{'name': 'unnamed', 'report': json.dumps(report), 'field': None}], f)
        self.start_view()
        child = self.start([os.environ['PERFMON_MONITORED_PROCESS'], '--mode=hang-reports', '--reports=' + cases],
                           stdout=subprocess.DEVNULL)
        auth = {'Authorization': 'Bearer ' + self.token}

        def hang():
            state = json.loads(get(self.base + 'api/state', auth)[2])
            return next((h for h in state['hangs'] if h['runnable'] == 'unnamed-frames'), None)
        named = self.eventually(hang, 'the hang in /api/state', timeout=60)
        # Innermost first; the innermost is no return address (offset 0x10),
        # the caller's is (0x20, looked up at 0x1f).
        self.assertEqual(named['frames'], ['libglib-2.0.so.0+0x%x (g_main_loop_run+0x10)' % (address + 0x10),
                                           'libglib-2.0.so.0+0x%x (g_main_loop_run+0x20)' % (address + 0x20),
                                           'outer label'])
        self.assertEqual(named['symbolized'], 3)

        def flame():
            state = json.loads(get(self.base + 'api/state', auth)[2])
            return next((p.get('flame') for p in state['processes'] if p['pid'] == child.pid), None)
        # Merged by function as perfmon hangs merges them
        # (perfmon_frame_function(): the module and the function, no offset).
        self.assertEqual(self.eventually(flame, 'the flame graph', timeout=60),
                         ['all', 1, [['outer label', 1, [['libglib-2.0.so.0 (g_main_loop_run)', 1,
                                                          [['libglib-2.0.so.0 (g_main_loop_run)', 1, []]]]]]]])

    def test_trace_names_static_callbacks(self):
        """/api/trace of a C program under perfmon run --trace names its
        static callbacks ("module+0xOFF (function)"), as perfmon tasks
        export does: perfmond symbolizes what the program did not."""
        self.start_view()
        trace = self.path('run.trace')
        run = self.start([TOOL, 'run', '--trace', trace, '--', os.environ['PERFMON_UNINSTRUMENTED'], '60'],
                         env=self.foreign_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def command_pid():
            try:
                with open('/proc/%d/task/%d/children' % (run.pid, run.pid)) as f:
                    children = f.read().split()
                return int(children[0]) if children else 0
            except (OSError, ValueError):
                return 0
        pid = self.eventually(command_pid, 'the program to start')
        auth = {'Authorization': 'Bearer ' + self.token}

        def slices():
            status, _, body = get(self.base + 'api/trace?pid=%d' % pid, auth)
            if status != 200:
                return None
            names = [e['name'] for e in json.loads(body)['traceEvents'] if e.get('ph') == 'X']
            return names if any('uninstrumented-loop+0x' in n for n in names) else None
        names = self.eventually(slices, 'the static callbacks in /api/trace', timeout=60)
        self.assertTrue(any(re.fullmatch(r'.*uninstrumented-loop\+0x[0-9a-f]+ \(tick\).*', n) for n in names),
                        names)

    @unittest.skipIf(CHROMIUM is None, 'chromium missing (Debian: chromium)')
    @unittest.skipIf(shutil.which('xvfb-run') is None or shutil.which('gtk4-demo') is None,
                     'xvfb-run or gtk4-demo missing')
    def test_page_in_chromium(self):
        self.start_view()
        env = self.foreign_env(env=dict(self.env, GSK_RENDERER='cairo'))
        gtk = self.start(['xvfb-run', '-a', TOOL, 'run', '--', 'gtk4-demo', '--run=spinner'], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        script = self.path('worker.py')
        with open(script, 'w') as f:
            f.write(PYTHON_PROGRAM)
        # Its task log too, for the page's trace download.
        trace = self.path('worker.trace')
        python = self.start([TOOL, 'run', '--threshold', '100', '--trace', trace, '--',
                             '/usr/bin/python3', script], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # A GJS program whose extension hangs it (when GJS is there).
        if GJS is not None:
            for uuid, name, code in ((ADDON, 'Slow', GJS_EXTENSION),
                                     (PROMISE_ADDON, 'Promise Heavy', GJS_PROMISE_EXTENSION)):
                extension = os.path.join(self.tmp, 'data', 'gnome-shell', 'extensions', uuid)
                os.makedirs(extension)
                with open(os.path.join(extension, 'extension.js'), 'w') as f:
                    f.write(code)
                with open(os.path.join(extension, 'metadata.json'), 'w') as f:
                    json.dump({'uuid': uuid, 'name': name, 'shell-version': ['43']}, f)
            main = self.path('gjs-main.js')
            with open(main, 'w') as f:
                f.write(GJS_PROGRAM)
            gjs = self.start([TOOL, 'run', '--threshold', '150', '--', GJS, '-m', main],
                             env=dict(env, XDG_DATA_HOME=os.path.join(self.tmp, 'data')),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        auth = {'Authorization': 'Bearer ' + self.token}

        def ready():
            if self.daemon.poll() is not None:
                with open(self.log_path) as f:
                    self.fail('perfmond exited with %d: %s' % (self.daemon.returncode, f.read()[-3000:]))
            state = json.loads(get(self.base + 'api/state', auth)[2])
            names = {p['name'] for p in state['processes']}
            # A hang of the Python program with a stack (the watchdog
            # may find none, and says why), and one of the extension.
            python_hangs = [h for h in state['hangs'] if h['process'] == 'python3' and h['frames']]
            addon_hangs = [h for h in state['hangs'] if h.get('addon') == ADDON] if GJS is not None else [None]
            # The promise-heavy add-on, charged by sampling lately.
            sampled = [g for p in state['processes'] for g in p['groups']
                       if g['kind'] == 'addon' and g['name'] == 'Promise Heavy' and g.get('recent_sampled_cpu', 0) > 0
                       ] if GJS is not None else [None]
            return state if {'gtk4-demo', 'python3'} <= names and python_hangs and addon_hangs and sampled else None
        state = self.eventually(ready, 'the programs and their hangs in /api/state', timeout=180)
        python_pid = next(p['pid'] for p in state['processes'] if p['name'] == 'python3')
        gtk_pid = next(p['pid'] for p in state['processes'] if p['name'] == 'gtk4-demo')

        # The hang's stack comes named: perfmond symbolizes what the
        # process did not, off its watched threads.
        hang = next(h for h in state['hangs'] if h['pid'] == python_pid and h['frames'])
        self.assertGreater(len(hang['frames']), 1, hang)
        self.assertGreater(hang['symbolized'], 0, hang)
        self.assertTrue(any(re.search(r'\((g_main_loop_run|g_main_context_iteration)\+0x[0-9a-f]+\)', frame)
                            for frame in hang['frames']), hang['frames'])
        # The process's hangs merged by function: the flame graph's root
        # counts them, and the main loop is on its path.
        python_state = next(p for p in state['processes'] if p['pid'] == python_pid)
        flame = python_state['flame']
        self.assertEqual(flame[0], 'all')
        self.assertGreaterEqual(flame[1], 1)

        def names(node):
            yield node[0]
            for child in node[2]:
                yield from names(child)
        self.assertTrue(any(re.fullmatch(r'\S+ \(g_main_loop_run\)', name) for name in names(flame)), flame)
        # Groups: the top ones, each with its exceedance histogram (1 …
        # 512 ms, never growing) and sparkline points; the rest summed.
        for process in state['processes']:
            self.assertLessEqual(len(process['groups']), 5)
            self.assertEqual(process['n_groups'], len(process['groups']) + process.get('others', {}).get('n', 0))
            for group in process['groups']:
                self.assertEqual(len(group['durations']), 10)
                self.assertEqual(group['durations'], sorted(group['durations'], reverse=True))
                self.assertTrue(all(0 <= x for x in group['spark']))
        self.assertTrue(python_state['trace'])

        # The task trace download: token needed, a GET that changes
        # nothing, a valid Chrome trace.
        self.assertEqual(get(self.base + 'api/trace?pid=%d' % python_pid)[0], 401)
        self.assertEqual(get(self.base + 'api/trace?pid=%d' % python_pid, auth, method='POST')[0], 405)
        self.assertEqual(get(self.base + 'api/trace?pid=x', auth)[0], 400)
        self.assertEqual(get(self.base + 'api/trace?pid=%d' % gtk_pid, auth)[0], 404)
        status, headers, body = get(self.base + 'api/trace?pid=%d&token=%s' % (python_pid, self.token))
        self.assertEqual(status, 200, body[:300])
        self.assertIn('attachment', headers['Content-Disposition'])
        downloaded = self.path('downloaded-trace.json')
        with open(downloaded, 'wb') as f:
            f.write(body)
        events = json.loads(body)['traceEvents']
        self.assertTrue(any(e.get('ph') == 'X' for e in events))
        check = subprocess.run([os.environ['PERFMON_CHECK_CHROME_TRACE'], downloaded],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        self.assertEqual(check.returncode, 0, check.stdout)

        def chromium(*args):
            profile = self.path('chromium-profile-%d' % time.monotonic_ns())
            os.makedirs(profile)
            return subprocess.run([CHROMIUM] + CHROMIUM_FLAGS + ['--user-data-dir=' + profile] + list(args),
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True,
                                  timeout=180, env=dict(self.env, HOME=profile))

        first = chromium('--virtual-time-budget=60000', '--dump-dom', self.url).stdout
        for expected in ('gtk4-demo', 'python3', 'pid ', 'thread', 'hung', 'data-hang'):
            self.assertIn(expected, first, first[:2000])
        # Shares are computed from two states at least: the page updated.
        self.assertRegex(first, r'<div class="num cpu" role="cell">\d+\.\d %</div>')
        # Names from the programs are text, never markup.
        self.assertRegex(first, r'<span class="name" title="[^"]*">__main__\.&lt;lambda&gt; \(worker\.py:\d+\)<')
        self.assertNotIn('</lambda>', first)
        # Each group shown has its histogram and its sparkline.
        self.assertRegex(first, r'<svg class="hist"')
        self.assertRegex(first, r'<li[^>]*data-group="\d+"[^>]*>.*?<svg class="spark')
        # The hang shows its stack, named frames and not "(no stack)".
        stacks = re.findall(r'<div class="hang"[^>]*><details[^>]*><summary><strong>python3 \(pid %d\)</strong>'
                            r'[^<]*<code>[^<]*</code></summary><pre>(.*?)</pre>' % python_pid, first, re.S)
        self.assertTrue(stacks, first[:3000])
        self.assertTrue(any(len(stack.splitlines()) > 1 and
                            re.search(r'\((g_main_loop_run|g_main_context_iteration)\+0x', stack)
                            for stack in stacks), stacks)
        # The extension's hang names its add-on beside its runnable (the
        # extension's handler: its site in the add-on).
        if GJS is not None:
            addon_hang = next(h for h in state['hangs'] if h.get('addon') == ADDON)
            self.assertIn(ADDON + '/extension.js', addon_hang['runnable'])
            self.assertTrue(all('addon' not in h for h in state['hangs'] if h['process'] == 'python3'))
            # The page lists the newest 20 hangs: the extension hangs the
            # program every 1.5 s, so one of them at least.
            self.assertRegex(first, r'<div class="hang" data-hang="[^"]*"><details[^>]*><summary><strong>[^<]*'
                                    r'\(pid %d\)</strong> hung \d+ ms in <code>[^<]*%s/extension\.js[^<]*</code> '
                                    r'<span class="addon">add-on <code>%s</code></span></summary>'
                                    % (addon_hang['pid'], re.escape(ADDON), re.escape(ADDON)))
            # The promise-heavy add-on: in the top by its sampled CPU (its
            # exact CPU is next to nothing), "+x % sampled" after its name
            # (the style sheet writes the attribute after it), the name's
            # text the name alone; no other group says it is sampled.
            self.assertRegex(first, r'<span class="name" title="Promise Heavy(?:\n|&#10;)\+\d+\.\d % sampled: CPU estimated '
                                    r'by sampling[^"]*" data-sampled="\+\d+\.\d % sampled">Promise Heavy</span>')
            self.assertEqual(len(re.findall(r'data-sampled=', first)), 1, re.findall(r'<span class="name".*?</span>', first))
            status, _, css = get(self.base + 'view.css', auth)
            self.assertEqual(status, 200)
            self.assertRegex(css.decode(), r'\.name\[data-sampled\]::after\s*\{[^}]*content:\s*" " attr\(data-sampled\)')
        # The flame graph of the Python program's hangs, the main loop in it.
        flame = re.search(r'<svg class="flame" data-pid="%d"[^>]*>(.*?)</svg>' % python_pid, first, re.S)
        self.assertTrue(flame, first[-3000:])
        self.assertRegex(flame.group(1), r'<title>\S+ \(g_main_loop_run\) \(\d+ of \d+ hangs\)</title>')
        # The download link of its task trace.
        self.assertIn('href="/api/trace?pid=%d&amp;token=%s"' % (python_pid, self.token), first)
        # Later, the page shows a later state.
        time.sleep(2)
        second = chromium('--virtual-time-budget=60000', '--dump-dom', self.url).stdout
        stamp = re.compile(r'updated ([0-9:]+[^<]*)<')
        self.assertTrue(stamp.search(first) and stamp.search(second))
        self.assertNotEqual(stamp.search(first).group(1), stamp.search(second).group(1))

        shots = os.environ.get('PERFMON_VIEW_SCREENSHOTS')
        if shots:
            os.makedirs(shots, exist_ok=True)
            for width, height in ((1280, 800), (390, 844)):
                path = os.path.join(shots, 'page-%dx%d.png' % (width, height))
                chromium('--virtual-time-budget=60000', '--window-size=%d,%d' % (width, height),
                         '--screenshot=' + path, self.url)
                self.assertTrue(os.path.exists(path), path)
        python.terminate()
        if GJS is not None:
            gjs.terminate()


if __name__ == '__main__':
    unittest.main(verbosity=2)
