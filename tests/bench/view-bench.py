#!/usr/bin/python3
# view-bench.py: the about:performance page with many processes and groups
# (issue 25, point 2): perfmond's time to answer /api/state, its size, and
# the time headless chromium takes to draw a refresh. Prints figures,
# asserts nothing.
#
# Usage: view-bench.py [--processes N] [--groups G] [--build DIR]
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(here))
from perfmond_fixture import Perfmond, rss_kib  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--processes', type=int, default=200)
    parser.add_argument('--groups', type=int, default=50)
    parser.add_argument('--build', default=os.path.join(here, '..', '..', '_build'))
    args = parser.parse_args()
    build = os.path.abspath(args.build)

    load = subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()
    print(f'view-bench: {args.processes} processes x {args.groups} groups; uptime: {load}', flush=True)
    with Perfmond(os.path.join(build, 'src', 'daemon', 'perfmond'),
                  ['--poll-interval', '1000', f'--max-processes={args.processes + 16}']) as daemon:
        env = dict(daemon.env)
        url = None
        deadline = time.monotonic() + 60
        while url is None and time.monotonic() < deadline:
            result = subprocess.run([os.path.join(build, 'src', 'tools', 'perfmon'), 'view', '--print-url'],
                                    env=env, capture_output=True, text=True)
            url = result.stdout.strip() if result.returncode == 0 else None
            time.sleep(0.2)
        base, token = url.split('?token=')
        # thread + 1 add-on + windows + compartments = groups
        windows = max(1, (args.groups - 2) // 2)
        compartments = max(0, args.groups - 2 - windows)
        children = [subprocess.Popen([os.path.join(build, 'tests', 'monitored-process'), '--windows', str(windows),
                                      '--compartments', str(compartments), '--tick', '2000', '--seconds', '900'],
                                     env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                     for _ in range(args.processes)]
        try:
            request = urllib.request.Request(base + 'api/state', headers={'Authorization': 'Bearer ' + token})

            def state():
                with urllib.request.urlopen(request, timeout=60) as response:
                    return response.read()
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                body = state()
                data = json.loads(body)
                if len(data['processes']) >= args.processes and all('interval' in p for p in data['processes']):
                    break
                time.sleep(1)
            groups = sum(len(p['groups']) for p in data['processes'])
            times = []
            for _ in range(10):
                start = time.perf_counter()
                body = state()
                times.append((time.perf_counter() - start) * 1000)
            print(f'view-bench: GET /api/state: {len(data["processes"])} processes, {groups} groups, '
                  f'{len(body)} bytes, median {statistics.median(times):.1f} ms, max {max(times):.1f} ms; '
                  f'perfmond RSS {rss_kib(daemon.pid)} KiB', flush=True)
            with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
                start = time.perf_counter()
                dom = subprocess.run(['chromium', '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
                                      '--no-first-run', '--disable-background-networking',
                                      '--disable-component-update', '--disable-sync', '--user-data-dir=' + profile,
                                      '--window-size=1280,800', '--virtual-time-budget=6000', '--dump-dom', url],
                                     capture_output=True, text=True, timeout=900,
                                     env=dict(os.environ, HOME=profile)).stdout
                wall = time.perf_counter() - start
            last = re.search(r'data-draw-ms="([0-9.]+)"', dom)
            worst = re.search(r'data-draw-max-ms="([0-9.]+)"', dom)
            rows = dom.count('<tr data-pid=')
            print(f'view-bench: chromium drew {rows} rows; a refresh (every 2 s) takes '
                  f'{last.group(1) if last else "?"} ms to draw, at most {worst.group(1) if worst else "?"} ms '
                  f'over 3 refreshes; {wall:.1f} s for chromium in all', flush=True)
        finally:
            for child in children:
                child.terminate()
            for child in children:
                child.wait()
    load = subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()
    print(f'view-bench: uptime at the end: {load}', flush=True)


if __name__ == '__main__':
    main()
