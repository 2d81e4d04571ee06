#!/usr/bin/python3
# view-bench.py: the about:performance page with many processes and groups
# (issue 25, point 2): perfmond's time to answer /api/state, its size, and
# the time headless chromium takes to draw a refresh. Prints figures,
# asserts nothing.
#
# Usage: view-bench.py [--processes N] [--groups G] [--hangs H] [--build DIR] [--perfmond PATH]
#
# --perfmond runs another perfmond (an older build, to compare) with this
# build's perfmon and monitored-process.
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import argparse
import fcntl
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


def cpu_ms(pid):
    """The CPU time (user + system) of pid, in ms."""
    with open(f'/proc/{pid}/stat') as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf('SC_CLK_TCK')


def page_timings(url, draws):
    """Opens url in headless chromium until it has drawn `draws` times, then
    returns the page's timings (document.body.dataset) and the rows drawn."""
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        to_browser_r, to_browser_w = os.pipe()
        from_browser_r, from_browser_w = os.pipe()
        os.set_inheritable(to_browser_r, True)
        os.set_inheritable(from_browser_w, True)

        def setup():
            # Out of the way first: either pipe end may be fd 3 or 4.
            read_end = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 10)
            write_end = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 10)
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)
        browser = subprocess.Popen(['chromium', '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
                                    '--no-first-run', '--disable-background-networking',
                                    '--disable-component-update', '--disable-sync', '--window-size=1280,800',
                                    '--user-data-dir=' + profile, '--remote-debugging-pipe', 'about:blank'],
                                   close_fds=False, preexec_fn=setup,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   env=dict(os.environ, HOME=profile))
        os.close(to_browser_r)
        os.close(from_browser_w)
        out = os.fdopen(to_browser_w, 'wb', buffering=0)
        inp = os.fdopen(from_browser_r, 'rb', buffering=0)
        pending = b''
        serial = [0]
        events = []
        traced = [False]

        def read_message():
            nonlocal pending
            while b'\0' not in pending:
                chunk = inp.read(65536)
                if not chunk:
                    raise RuntimeError('chromium closed the DevTools pipe')
                pending += chunk
            line, pending = pending.split(b'\0', 1)
            message = json.loads(line)
            if message.get('method') == 'Tracing.dataCollected':
                events.extend(message['params']['value'])
            elif message.get('method') == 'Tracing.tracingComplete':
                traced[0] = True
            return message

        def call(method, params=None, session=None):
            serial[0] += 1
            message = {'id': serial[0], 'method': method, 'params': params or {}}
            if session:
                message['sessionId'] = session
            out.write(json.dumps(message).encode() + b'\0')
            while True:
                reply = read_message()
                if reply.get('id') == serial[0]:
                    if 'error' in reply:
                        raise RuntimeError(f'{method}: {reply["error"]}')
                    return reply['result']

        def page_data(session):
            result = call('Runtime.evaluate', {'expression': 'JSON.stringify(Object.assign({rows: '
                                                             'document.querySelectorAll("tr[data-pid], .proc[data-pid]")'
                                                             '.length, refreshes: window.refreshes}, '
                                                             'document.body.dataset))',
                                               'returnByValue': True}, session)
            return json.loads(result['result']['value']) if 'value' in result['result'] else {}
        try:
            target = call('Target.createTarget', {'url': url})['targetId']
            session = call('Target.attachToTarget', {'targetId': target, 'flatten': True})['sessionId']
            # Until the page has drawn `draws` times (the first, then
            # refreshes every 2 s), or for two minutes on a machine too
            # busy. The refreshes after the first draw are traced: the
            # renderer's main thread's CPU time (trace events' thread time),
            # which a busy machine does not stretch as it does wall time.
            deadline = time.monotonic() + 120
            data = {}
            while (data.get('refreshes') or 0) < 1 and time.monotonic() < deadline:
                time.sleep(0.5)
                data = page_data(session)
            call('Tracing.start', {'traceConfig': {'includedCategories': ['toplevel', 'devtools.timeline',
                                                                           'disabled-by-default-devtools.timeline']},
                                   'transferMode': 'ReportEvents'}, session)
            first = data.get('refreshes') or 0
            while (data.get('refreshes') or 0) < draws and time.monotonic() < deadline:
                time.sleep(1)
                data = page_data(session)
            call('Tracing.end', {}, session)
            while not traced[0]:
                read_message()
            main_threads = {e['tid'] for e in events
                            if e.get('name') == 'thread_name' and e['args'].get('name') == 'CrRendererMain'}
            tasks = [e['tdur'] / 1000 for e in events if e.get('tid') in main_threads and e.get('ph') == 'X'
                     and e.get('name') == 'RunTask' and 'tdur' in e]
            refreshes = (data.get('refreshes') or 0) - first
            data['cpuPerRefreshMs'] = f'{sum(tasks) / refreshes:.1f}' if refreshes > 0 else '?'
            data['cpuMaxTaskMs'] = f'{max(tasks):.1f}' if tasks else '?'
            return data
        finally:
            browser.terminate()
            browser.wait()
            out.close()
            inp.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--processes', type=int, default=200)
    parser.add_argument('--groups', type=int, default=50)
    parser.add_argument('--build', default=os.path.join(here, '..', '..', '_build'))
    parser.add_argument('--hangs', type=int, default=20, help='processes that hang (default 20)')
    parser.add_argument('--perfmond')
    args = parser.parse_args()
    build = os.path.abspath(args.build)
    perfmond = os.path.abspath(args.perfmond or os.path.join(build, 'src', 'daemon', 'perfmond'))
    if args.perfmond:
        # A copy elsewhere finds this build's libperfmon by its path only.
        os.environ['LD_LIBRARY_PATH'] = os.path.join(build, 'src')

    load = subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()
    print(f'view-bench: {perfmond}: {args.processes} processes x {args.groups} groups; uptime: {load}', flush=True)
    with Perfmond(perfmond,
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
        # The first --hangs processes stall their loop 300 ms five times,
        # 3 s apart: hangs with stacks, which the page lists and merges.
        stalls = ['--hang-threshold', '100', '--stall-after', '3000', '--stall', '300', '--stalls', '5']
        children = [subprocess.Popen([os.path.join(build, 'tests', 'monitored-process'), '--windows', str(windows),
                                      '--compartments', str(compartments), '--tick', '2000', '--seconds', '900'] +
                                     (stalls if i < args.hangs else []),
                                     env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                     for i in range(args.processes)]
        try:
            request = urllib.request.Request(base + 'api/state', headers={'Authorization': 'Bearer ' + token})

            def state():
                with urllib.request.urlopen(request, timeout=60) as response:
                    return response.read()
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                body = state()
                data = json.loads(body)
                if len(data['processes']) >= args.processes and all('interval' in p for p in data['processes']) \
                        and len(data['hangs']) >= min(20, 5 * args.hangs):
                    break
                time.sleep(1)
            groups = sum(len(p['groups']) for p in data['processes'])
            # Spaced by the poll interval: each GET sees new snapshots (what
            # an open page costs); then back to back.
            for label, pause in (('a GET a second (new polls each time)', 1.0), ('10 GETs back to back', 0)):
                times = []
                for _ in range(10):
                    time.sleep(pause)
                    start = time.perf_counter()
                    body = state()
                    times.append((time.perf_counter() - start) * 1000)
                print(f'view-bench: GET /api/state, {label}: {len(data["processes"])} processes, {groups} groups '
                      f'and {len(data["hangs"])} hangs sent, {len(body)} bytes, '
                      f'median {statistics.median(times):.1f} ms, max {max(times):.1f} ms; '
                      f'perfmond RSS {rss_kib(daemon.pid)} KiB', flush=True)
            # perfmond's own CPU per GET, which the machine's load does not
            # stretch as it does wall time: 10 s windows without and with a
            # GET a second, interleaved, twice; the difference per GET.
            per_get = []
            for _ in range(2):
                quiet = cpu_ms(daemon.pid)
                time.sleep(10)
                quiet = cpu_ms(daemon.pid) - quiet
                busy = cpu_ms(daemon.pid)
                for _ in range(10):
                    start = time.perf_counter()
                    state()
                    time.sleep(max(0, 1 - (time.perf_counter() - start)))
                busy = cpu_ms(daemon.pid) - busy
                per_get.append((busy - quiet) / 10)
            print(f'view-bench: perfmond CPU per GET /api/state (a GET a second, less the polling): '
                  f'{", ".join(f"{x:.1f}" for x in per_get)} ms', flush=True)
            # The page in headless chromium, in real time (virtual time
            # would stop performance.now() while the page draws): driven over
            # the DevTools protocol on a pipe, read after 6 refreshes.
            for fragment in ('', '#all'):
                start = time.perf_counter()
                data = page_timings(url + fragment, 7)
                wall = time.perf_counter() - start
                print(f'view-bench: chromium{" " + fragment if fragment else ""} drew {data.get("rows")} rows; '
                      f'first drawn {data.get("firstDrawnMs", "?")} ms after navigation, in '
                      f'{data.get("firstDrawMs", "?")} ms; then {data.get("refreshes")} draws every 2 s, each to '
                      f'update and lay out (ms): {data.get("drawsMs", "?")}, until its frame was drawn: '
                      f'{data.get("framesMs", "?")}; renderer main thread CPU per refresh '
                      f'{data.get("cpuPerRefreshMs", "?")} ms, its longest task {data.get("cpuMaxTaskMs", "?")} ms; '
                      f'{wall:.1f} s for chromium in all', flush=True)
        finally:
            for child in children:
                child.terminate()
            for child in children:
                child.wait()
    load = subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()
    print(f'view-bench: uptime at the end: {load}', flush=True)


if __name__ == '__main__':
    main()
