#!/usr/bin/python3
# http-soak.py: perfmond's HTTP server under a scrape every second and 50
# slowloris clients; prints perfmond's fds and RSS over time (issue 26).
#
# Usage: http-soak.py [--perfmond PATH] [--slowloris N] DURATION_S
#
# Each second: one GET /metrics on a new keep-alive connection that the
# client then closes (the CLOSE-WAIT case), and one more header byte on
# each slowloris connection; a slowloris client that perfmond cuts off
# connects again at once. Prints figures, asserts nothing.
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import argparse
import os
import socket
import subprocess
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(here))
from perfmond_fixture import Perfmond, fds, free_port, read_response, rss_kib  # noqa: E402


def slow_connect(port):
    try:
        sock = socket.create_connection(('127.0.0.1', port), timeout=5)
        sock.setblocking(False)
        sock.send(b'GET /metrics HTTP/1.1\r\nX-Slow: ')
        return sock
    except OSError:
        return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--perfmond', default=os.path.join(here, '..', '..', '_build', 'src', 'daemon', 'perfmond'))
    parser.add_argument('--slowloris', type=int, default=50)
    parser.add_argument('duration', type=float)
    args = parser.parse_args()

    port = free_port()
    load = subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()
    print(f'http-soak: {args.duration:.0f} s, 1 scrape/s, {args.slowloris} slowloris clients; uptime: {load}',
          flush=True)
    with Perfmond(args.perfmond, [f'--metrics-address=127.0.0.1:{port}'], wait_for_port=port) as daemon:
        slow = [slow_connect(port) for _ in range(args.slowloris)]
        start = time.monotonic()
        scrapes = failures = reconnects = 0
        first = None
        next_report = start
        while time.monotonic() - start < args.duration:
            tick = time.monotonic()
            try:
                with socket.create_connection(('127.0.0.1', port), timeout=10) as sock:
                    sock.sendall(f'GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n'.encode())
                    status, _, _ = read_response(sock)
                    scrapes += 1
                    failures += status != 200
            except OSError:
                failures += 1
            for i, sock in enumerate(slow):
                try:
                    if sock is None:
                        raise OSError
                    sock.send(b'x')
                    if sock.recv(1) == b'':
                        raise OSError
                except BlockingIOError:
                    pass
                except OSError:
                    if sock is not None:
                        sock.close()
                    slow[i] = slow_connect(port)
                    reconnects += 1
            if first is None and time.monotonic() - start > 5:
                first = (fds(daemon.pid), rss_kib(daemon.pid))
                print(f'http-soak: start (after 5 s): {first[0]} fds, RSS {first[1]} KiB', flush=True)
            if time.monotonic() >= next_report:
                print(f'http-soak: t={time.monotonic() - start:6.0f} s: {fds(daemon.pid)} fds, '
                      f'RSS {rss_kib(daemon.pid)} KiB, {scrapes} scrapes ({failures} failed), '
                      f'{reconnects} slowloris reconnects', flush=True)
                next_report += 60
            time.sleep(max(0.0, 1.0 - (time.monotonic() - tick)))
        end = (fds(daemon.pid), rss_kib(daemon.pid))
        for sock in slow:
            if sock is not None:
                sock.close()
        load = subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()
        print(f'http-soak: end: {end[0]} fds, RSS {end[1]} KiB; {scrapes} scrapes, {failures} failed, '
              f'{reconnects} slowloris reconnects; uptime: {load}', flush=True)


if __name__ == '__main__':
    main()
