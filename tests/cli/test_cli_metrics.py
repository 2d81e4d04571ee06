#!/usr/bin/python3
# test_cli_metrics.py: perfmond --metrics-address scraped by a real
# Prometheus (Debian's prometheus), on loopback, on a private bus
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import json
import os
import shutil
import socket
import subprocess
import unittest
import urllib.parse
import urllib.request

from clitest import BusTestCase

EXAMPLE = os.environ['PERFMON_EXAMPLE']


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def http_get(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.headers.get('Content-Type'), response.read().decode()


class MetricsTest(BusTestCase):
    def start_daemon_with_metrics(self):
        port = free_port()
        self.start([os.environ['PERFMOND_PATH'], '--poll-interval', '200',
                    '--metrics-address', '127.0.0.1:%d' % port])
        self.eventually(lambda: self.perfmon('hangs', 'list').returncode == 0,
                        'perfmond to own its name')
        example = self.start([EXAMPLE, '--export', '--seconds', '120'], stdout=subprocess.DEVNULL)
        self.eventually(lambda: self.perfmon('snapshot', '--pid', str(example.pid)).returncode == 0,
                        'the example to register with perfmond')
        return port, example

    def test_metrics_text_format(self):
        port, example = self.start_daemon_with_metrics()
        url = 'http://127.0.0.1:%d/metrics' % port
        text = self.eventually(
            lambda: (lambda t: t if 'perfmon_addon_cpu_seconds_total{' in t else None)(http_get(url)[2]),
            'metrics of the example\'s groups')
        status, content_type, _ = http_get(url)
        self.assertEqual(status, 200)
        self.assertTrue(content_type.startswith('text/plain; version=0.0.4'), content_type)
        for kind in ('thread', 'window', 'addon', 'compartment'):
            self.assertIn('# TYPE perfmon_%s_cpu_seconds_total counter' % kind, text)
            self.assertIn('# TYPE perfmon_%s_blocked_seconds_total counter' % kind, text)
        self.assertIn('# TYPE perfmon_process_cpu_seconds_total counter', text)
        self.assertIn('# TYPE perfmon_thread_iteration_cpu_seconds histogram', text)
        # An add-on's CPU estimated by sampling: a family of its own, whose
        # help says it is not the exact one; the example's add-ons (C code,
        # charged exactly) have none.
        self.assertIn('# TYPE perfmon_addon_sampled_cpu_seconds_total counter', text)
        help_line = [line for line in text.splitlines()
                     if line.startswith('# HELP perfmon_addon_sampled_cpu_seconds_total ')]
        self.assertEqual(len(help_line), 1, text)
        self.assertIn('sampling', help_line[0])
        self.assertIn('exact', help_line[0])
        for line in text.splitlines():
            if line.startswith('perfmon_addon_sampled_cpu_seconds_total{'):
                self.assertEqual(float(line.rsplit(' ', 1)[1]), 0.0, line)
                self.assertNotIn('"(none)"', line)
        self.assertIn('perfmond_processes 1', text)
        self.assertIn('pid="%d"' % example.pid, text)
        # Buckets are cumulative and end with +Inf = _count.
        buckets = {}
        counts = {}
        for line in text.splitlines():
            if line.startswith('perfmon_thread_iteration_cpu_seconds_bucket{'):
                labels, value = line.rsplit(' ', 1)
                series, le = labels.rsplit(',le=', 1)
                buckets.setdefault(series, []).append((le, int(value)))
            elif line.startswith('perfmon_thread_iteration_cpu_seconds_count{'):
                labels, value = line.rsplit(' ', 1)
                counts[labels.replace('_count{', '_bucket{')] = int(value)
        self.assertTrue(buckets)
        for series, values in buckets.items():
            self.assertEqual([le for le, _ in values],
                             ['"%g"}' % (2 ** i / 1000) for i in range(10)] + ['"+Inf"}'])
            numbers = [v for _, v in values]
            self.assertEqual(numbers, sorted(numbers))
            self.assertEqual(numbers[-1], counts[series + '}'])
        promtool = shutil.which('promtool')
        if promtool:
            check = subprocess.run([promtool, 'check', 'metrics'], input=text,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   universal_newlines=True)
            self.assertEqual(check.returncode, 0, check.stdout)
        # Only GET and HEAD; a request with a body is refused before it is read.
        request = urllib.request.Request(url, data=b'', method='POST')
        with self.assertRaises(urllib.error.HTTPError) as raised:
            urllib.request.urlopen(request, timeout=10)
        self.assertEqual(raised.exception.code, 405)
        request = urllib.request.Request(url, data=b'x', method='POST')
        with self.assertRaises(urllib.error.HTTPError) as raised:
            urllib.request.urlopen(request, timeout=10)
        self.assertEqual(raised.exception.code, 413)

    def test_bad_metrics_address(self):
        result = subprocess.run([os.environ['PERFMOND_PATH'], '--metrics-address', 'nowhere'],
                                env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                universal_newlines=True, timeout=30)
        self.assertEqual(result.returncode, 2)
        self.assertIn('--metrics-address: expected PORT', result.stderr)

    def test_prometheus_scrapes(self):
        prometheus = shutil.which('prometheus')
        if prometheus is None:
            self.skipTest('prometheus is not installed (Debian package prometheus)')
        port, example = self.start_daemon_with_metrics()
        web_port = free_port()
        config = self.path('prometheus.yml')
        with open(config, 'w') as f:
            f.write('global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n'
                    'scrape_configs:\n  - job_name: perfmond\n    static_configs:\n'
                    '      - targets: ["127.0.0.1:%d"]\n' % port)
        self.start([prometheus, '--config.file', config,
                    '--storage.tsdb.path', self.path('tsdb'),
                    '--web.listen-address', '127.0.0.1:%d' % web_port],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def query(expression):
            url = 'http://127.0.0.1:%d/api/v1/query?%s' % (
                web_port, urllib.parse.urlencode({'query': expression}))
            try:
                _, _, body = http_get(url)
            except OSError:
                return []
            answer = json.loads(body)
            return answer['data']['result'] if answer.get('status') == 'success' else []

        # Two scrapes of perfmond at least.
        self.eventually(lambda: query('count_over_time(up{job="perfmond"}[1m]) >= 2'),
                        'two scrapes of perfmond', timeout=90)
        cpu = self.eventually(
            lambda: query('perfmon_addon_cpu_seconds_total{pid="%d"} > 0' % example.pid),
            'a group CPU counter above 0', timeout=60)
        self.assertGreater(float(cpu[0]['value'][1]), 0)
        bucket = self.eventually(
            lambda: query('perfmon_thread_iteration_cpu_seconds_bucket{pid="%d",le="+Inf"}' % example.pid),
            'a histogram bucket', timeout=60)
        self.assertTrue(bucket)

    def test_openmetrics_when_asked(self):
        port, example = self.start_daemon_with_metrics()
        url = 'http://127.0.0.1:%d/metrics' % port
        # What Prometheus 2.x sends.
        accept = ('application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,'
                  'text/plain;version=0.0.4;q=0.5,*/*;q=0.1')
        request = urllib.request.Request(url, headers={'Accept': accept})
        with urllib.request.urlopen(request, timeout=10) as response:
            content_type = response.headers.get('Content-Type')
            text = response.read().decode()
        self.assertTrue(content_type.startswith('application/openmetrics-text; version=1.0.0'), content_type)
        self.assertTrue(text.endswith('# EOF\n'), text[-200:])
        # Family names without _total, samples with it; units declared.
        self.assertIn('# TYPE perfmon_thread_cpu_seconds counter\n# UNIT perfmon_thread_cpu_seconds seconds\n', text)
        self.assertIn('perfmon_thread_cpu_seconds_total{pid="%d"' % example.pid, text)
        self.assertIn('# TYPE perfmon_thread_iteration_cpu_seconds histogram', text)
        # Without the header, the Prometheus text format.
        self.assertTrue(http_get(url)[1].startswith('text/plain; version=0.0.4'))

    def test_hangs_by_pid(self):
        """Two python3 processes that hang: two series, not one."""
        port = free_port()
        self.start([os.environ['PERFMOND_PATH'], '--poll-interval', '200',
                    '--metrics-address', '127.0.0.1:%d' % port])
        self.eventually(lambda: self.perfmon('hangs', 'list').returncode == 0, 'perfmond to own its name')
        script = self.path('stall.py')
        with open(script, 'w') as f:
            f.write(HANGING_SCRIPT)
        pids = []
        for _ in range(2):
            process = self.start([TOOL_PATH, 'run', '--threshold', '100', '--', '/usr/bin/python3', script],
                                 env=self.foreign_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            pids.append(process.pid)
        url = 'http://127.0.0.1:%d/metrics' % port

        def hang_series():
            lines = [line for line in http_get(url)[2].splitlines() if line.startswith('perfmon_hangs_total{')]
            found = {line.split('pid="', 1)[1].split('"', 1)[0] for line in lines if 'process="python3"' in line}
            return found if len(found) == 2 else None
        found = self.eventually(hang_series, 'hangs of both python3 processes', timeout=120)
        self.assertEqual(len(found), 2)

    def test_prometheus_sums(self):
        """Per process, sum(rate()) of each CPU family is the process's CPU, within 10 %:
        a C program with windows, add-ons and compartments, a Python program run with
        perfmon run, and gtk4-demo (a program nobody here wrote) under xvfb-run."""
        prometheus = shutil.which('prometheus')
        if prometheus is None:
            self.skipTest('prometheus is not installed (Debian package prometheus)')
        port = free_port()
        self.start([os.environ['PERFMOND_PATH'], '--poll-interval', '1000',
                    '--metrics-address', '127.0.0.1:%d' % port])
        self.eventually(lambda: self.perfmon('hangs', 'list').returncode == 0, 'perfmond to own its name')
        programs = {}
        example = self.start([EXAMPLE, '--export', '--seconds', '300'], stdout=subprocess.DEVNULL)
        programs[example.pid] = 'perfmon-example'
        script = self.path('busy.py')
        with open(script, 'w') as f:
            f.write(BUSY_SCRIPT)
        python = self.start([TOOL_PATH, 'run', '--', '/usr/bin/python3', script],
                            env=self.foreign_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        programs[self.eventually(lambda: child_of(python.pid), 'python3 to start')] = 'python3'
        if shutil.which('xvfb-run') and shutil.which('gtk4-demo'):
            # Software GL rendering in the main thread: LP_NUM_THREADS=0.
            env = self.foreign_env(env=dict(self.env, LP_NUM_THREADS='0', GSK_RENDERER='cairo'))
            gtk = self.start(['xvfb-run', '-a', TOOL_PATH, 'run', '--', 'gtk4-demo', '--run=spinner'],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            gtk_pid = self.eventually(lambda: descendant_named(gtk.pid, 'gtk4-demo'), 'gtk4-demo to start')
            programs[gtk_pid] = 'gtk4-demo'

        web_port = free_port()
        config = self.path('prometheus.yml')
        with open(config, 'w') as f:
            f.write('global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n'
                    'scrape_configs:\n  - job_name: perfmond\n    static_configs:\n'
                    '      - targets: ["127.0.0.1:%d"]\n' % port)
        self.start([prometheus, '--config.file', config, '--storage.tsdb.path', self.path('tsdb'),
                    '--web.listen-address', '127.0.0.1:%d' % web_port],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def query(expression):
            url = 'http://127.0.0.1:%d/api/v1/query?%s' % (web_port, urllib.parse.urlencode({'query': expression}))
            try:
                answer = json.loads(http_get(url)[2])
            except OSError:
                return {}
            if answer.get('status') != 'success':
                return {}
            return {int(r['metric'].get('pid', 0)): float(r['value'][1]) for r in answer['data']['result']}

        # 40 s of scrapes of every program: rates over the last 30 s.
        self.eventually(lambda: query('count_over_time(up{job="perfmond"}[1m]) >= 40'),
                        '40 scrapes of perfmond', timeout=180)
        window = '30s'
        process = query('rate(perfmon_process_cpu_seconds_total[%s])' % window)
        sums = {kind: query('sum by (pid) (rate(perfmon_%s_cpu_seconds_total[%s]))' % (kind, window))
                for kind in ('thread', 'window', 'addon', 'compartment')}
        report = []
        for pid, name in programs.items():
            self.assertIn(pid, process, '%s (pid %d) has no CPU series' % (name, pid))
            report.append('%s: process %.3f CPU/s, %s' % (
                name, process[pid], ', '.join('%s %.3f' % (k, v.get(pid, float('nan'))) for k, v in sums.items())))
        print('\n'.join(report))
        for pid, name in programs.items():
            # A sum of a few per cent of a core is noise; each program here burns more.
            self.assertGreater(process[pid], 0.02, '%s uses no CPU: %s' % (name, report))
            for kind, values in sums.items():
                self.assertIn(pid, values, '%s: no %s series' % (name, kind))
                self.assertLess(abs(values[pid] - process[pid]), 0.10 * process[pid],
                                '%s: sum(rate(perfmon_%s_cpu_seconds_total)) is not its CPU: %s'
                                % (name, kind, '; '.join(report)))


TOOL_PATH = os.environ['PERFMON_TOOL']

# A Python program as people write them: GLib main loop, callbacks that work.
BUSY_SCRIPT = """
import time
from gi.repository import GLib

def work():
    start = time.process_time()
    total = 0
    while time.process_time() - start < 0.02:
        total += sum(range(1000))
    return GLib.SOURCE_CONTINUE

GLib.timeout_add(40, work)
GLib.MainLoop().run()
"""

# A callback that blocks the loop 400 ms every 2 s.
HANGING_SCRIPT = """
import time
from gi.repository import GLib

def stall():
    time.sleep(0.4)
    return GLib.SOURCE_CONTINUE

GLib.timeout_add(2000, stall)
GLib.timeout_add_seconds(120, GLib.MainLoop.quit, None)
GLib.MainLoop().run()
"""


def child_of(pid):
    try:
        with open('/proc/%d/task/%d/children' % (pid, pid)) as f:
            children = f.read().split()
        return int(children[0]) if children else 0
    except (OSError, ValueError):
        return 0


def descendant_named(pid, name):
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            with open('/proc/%d/comm' % p) as f:
                if f.read().strip() == name[:15]:
                    return p
            with open('/proc/%d/task/%d/children' % (p, p)) as f:
                todo.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            continue
    return 0


if __name__ == '__main__':
    unittest.main(verbosity=2)
