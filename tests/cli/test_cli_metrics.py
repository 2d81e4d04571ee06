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
            lambda: (lambda t: t if 'kind="addon"' in t else None)(http_get(url)[2]),
            'metrics of the example\'s groups')
        status, content_type, _ = http_get(url)
        self.assertEqual(status, 200)
        self.assertTrue(content_type.startswith('text/plain; version=0.0.4'), content_type)
        self.assertIn('# TYPE perfmon_group_cpu_seconds_total counter', text)
        self.assertIn('# TYPE perfmon_group_iteration_cpu_seconds histogram', text)
        self.assertIn('perfmond_processes 1', text)
        self.assertIn('pid="%d"' % example.pid, text)
        # Buckets are cumulative and end with +Inf = _count.
        buckets = {}
        counts = {}
        for line in text.splitlines():
            if line.startswith('perfmon_group_iteration_cpu_seconds_bucket{'):
                labels, value = line.rsplit(' ', 1)
                series, le = labels.rsplit(',le=', 1)
                buckets.setdefault(series, []).append((le, int(value)))
            elif line.startswith('perfmon_group_iteration_cpu_seconds_count{'):
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
        # Only GET and HEAD.
        request = urllib.request.Request(url, data=b'x', method='POST')
        with self.assertRaises(urllib.error.HTTPError) as raised:
            urllib.request.urlopen(request, timeout=10)
        self.assertEqual(raised.exception.code, 405)

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
            lambda: query('perfmon_group_cpu_seconds_total{kind="addon",pid="%d"} > 0' % example.pid),
            'a group CPU counter above 0', timeout=60)
        self.assertGreater(float(cpu[0]['value'][1]), 0)
        bucket = self.eventually(
            lambda: query('perfmon_group_iteration_cpu_seconds_bucket{pid="%d",le="+Inf"}' % example.pid),
            'a histogram bucket', timeout=60)
        self.assertTrue(bucket)


if __name__ == '__main__':
    unittest.main(verbosity=2)
