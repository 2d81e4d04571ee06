#!/usr/bin/python3
# test_http.py: perfmond's HTTP server holds its limits against hostile
# and careless clients (issue 26, "The HTTP server"), on a real perfmond
# and a real dbus-daemon.
#
# Usage: test_http.py PERFMOND
#
# Every assertion is about what perfmond promises (a connection the peer
# closed is closed, a body is never buffered, a slow header is dropped, a
# connection beyond the limit is refused), never about how fast: the waits
# are generous deadlines for things that happen at once on an idle machine.
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import os
import resource
import select
import signal
import socket
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from perfmond_fixture import Perfmond, fd_targets, fds, free_port, get, read_response, rss_kib  # noqa: E402

PERFMOND = None


def eventually(predicate, timeout=30):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def closed_by_peer(sock, timeout):
    """Whether the server closes @sock within @timeout, reading what it sends."""
    sock.settimeout(timeout)
    try:
        while sock.recv(65536):
            pass
        return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


class HttpTest(unittest.TestCase):
    def start(self, *args):
        port = free_port()
        daemon = Perfmond(PERFMOND, [f'--metrics-address=127.0.0.1:{port}'] + list(args), wait_for_port=port)
        self.addCleanup(daemon.stop)
        return daemon, port

    def test_logs_a_usable_url(self):
        port = free_port()
        daemon = Perfmond(PERFMOND, [f'--metrics-address={port}'], wait_for_port=port)
        self.addCleanup(daemon.stop)
        self.assertTrue(eventually(lambda: 'serves metrics at' in daemon.log()))
        self.assertIn(f'http://127.0.0.1:{port}/metrics', daemon.log())

    def test_keep_alive_closed_by_client_frees_the_fd(self):
        """CLOSE-WAIT: 50 keep-alive scrapes that the client closes leave no fd behind."""
        daemon, port = self.start()
        get(port)
        base = fds(daemon.pid)
        for _ in range(50):
            with socket.create_connection(('127.0.0.1', port), timeout=30) as sock:
                sock.sendall(f'GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n'.encode())
                status, headers, _ = read_response(sock)
                self.assertEqual(status, 200)
                self.assertEqual(headers.get('connection'), 'keep-alive')
        self.assertTrue(eventually(lambda: fds(daemon.pid) <= base),
                        f'{fds(daemon.pid)} fds after 50 closed keep-alive scrapes, {base} before')

    def test_keep_alive_and_pipelining(self):
        daemon, port = self.start()
        with socket.create_connection(('127.0.0.1', port), timeout=30) as sock:
            request = f'GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n'
            last = f'HEAD /metrics HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n'
            sock.sendall((request + last).encode())
            data = b''
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
        first, _, rest = data.partition(b'\r\n\r\n')
        self.assertTrue(first.startswith(b'HTTP/1.1 200'))
        self.assertIn(b'perfmond_processes', rest)
        # The HEAD answer: a Content-Length and no body, and the connection closes after it.
        second = rest[rest.index(b'HTTP/1.1 '):]
        self.assertTrue(second.startswith(b'HTTP/1.1 200'))
        self.assertIn(b'Connection: close', second)
        self.assertTrue(second.endswith(b'\r\n\r\n'))

    def test_body_refused_before_it_is_read(self):
        """A chunked POST of up to 256 MiB: answered and cut off, never buffered."""
        daemon, port = self.start()
        get(port)
        rss_before = rss_kib(daemon.pid)
        chunk = b'100000\r\n' + b'x' * 0x100000 + b'\r\n'
        sent = 0
        with socket.create_connection(('127.0.0.1', port), timeout=30) as sock:
            sock.sendall(f'POST /metrics HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n'
                         'Transfer-Encoding: chunked\r\n\r\n'.encode())
            try:
                while sent < 256:
                    sock.sendall(chunk)
                    sent += 1
            except (BrokenPipeError, ConnectionResetError):
                pass
            except socket.timeout:
                pass
        self.assertLess(sent, 256, 'perfmond read a 256 MiB body')
        self.assertLess(rss_kib(daemon.pid) - rss_before, 16 * 1024,
                        f'perfmond grew from {rss_before} KiB to {rss_kib(daemon.pid)} KiB')
        self.assertEqual(get(port)[0], 200)

    def test_content_length_answered_413_at_once(self):
        daemon, port = self.start()
        with socket.create_connection(('127.0.0.1', port), timeout=30) as sock:
            sock.sendall(f'POST /metrics HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n'
                         'Content-Length: 1000000000\r\n\r\n'.encode())
            status, headers, _ = read_response(sock)
            self.assertEqual(status, 413)
            self.assertEqual(headers.get('connection'), 'close')
            self.assertTrue(closed_by_peer(sock, 30))

    def test_other_methods_405(self):
        daemon, port = self.start()
        with socket.create_connection(('127.0.0.1', port), timeout=30) as sock:
            sock.sendall(f'DELETE /metrics HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n'.encode())
            status, headers, _ = read_response(sock)
            self.assertEqual(status, 405)
            self.assertEqual(headers.get('allow'), 'GET, HEAD')

    def test_huge_header_431(self):
        daemon, port = self.start()
        with socket.create_connection(('127.0.0.1', port), timeout=30) as sock:
            try:
                sock.sendall(f'GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Big: '.encode() +
                             b'a' * (1024 * 1024) + b'\r\n\r\n')
            except (BrokenPipeError, ConnectionResetError):
                pass
            try:
                status, _, _ = read_response(sock)
            except ConnectionResetError:
                status = None
            self.assertIn(status, (431, None))
        self.assertEqual(get(port)[0], 200)

    def test_slow_header_closed(self):
        """Slowloris: a header sent a byte at a time is cut off by the header timeout."""
        daemon, port = self.start('--http-header-timeout=2')
        with socket.create_connection(('127.0.0.1', port), timeout=30) as sock:
            sock.sendall(b'GET /metrics HTTP/1.1\r\n')
            start = time.monotonic()
            closed = False
            while time.monotonic() - start < 60:
                try:
                    sock.sendall(b'X')
                except (BrokenPipeError, ConnectionResetError):
                    closed = True
                    break
                if closed_by_peer(sock, 0.5):
                    closed = True
                    break
            self.assertTrue(closed, 'a header trickling for 60 s was not cut off')

    def test_silent_connection_closed(self):
        daemon, port = self.start('--http-header-timeout=1')
        with socket.create_connection(('127.0.0.1', port), timeout=30) as sock:
            self.assertTrue(closed_by_peer(sock, 60))

    def test_idle_keep_alive_closed(self):
        daemon, port = self.start('--http-idle-timeout=1')
        with socket.create_connection(('127.0.0.1', port), timeout=30) as sock:
            sock.sendall(f'GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n'.encode())
            self.assertEqual(read_response(sock)[0], 200)
            self.assertTrue(closed_by_peer(sock, 60))

    def test_connection_limit(self):
        """1,000 connections at once: perfmond keeps at most its limit open, and serves after."""
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard < 1100:
            self.skipTest(f'RLIMIT_NOFILE hard limit {hard}')
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1100), hard))
        daemon, port = self.start()
        get(port)
        base = fds(daemon.pid)
        base_targets = fd_targets(daemon.pid)
        socks = []
        peak = base
        try:
            for i in range(1000):
                try:
                    socks.append(socket.create_connection(('127.0.0.1', port), timeout=30))
                except OSError:
                    pass
                if i % 50 == 0:
                    peak = max(peak, fds(daemon.pid))
            time.sleep(1)
            peak = max(peak, fds(daemon.pid))
        finally:
            for s in socks:
                s.close()
        self.assertLessEqual(peak, base + 64 + 2, f'{peak} fds with 1,000 connections open, {base} before')
        self.assertTrue(eventually(lambda: fds(daemon.pid) <= base),
                        f'{base} fds before, now {fd_targets(daemon.pid)}; before: {base_targets}')
        self.assertEqual(get(port)[0], 200)

    def test_burst_while_busy(self):
        """100 connections while perfmond cannot accept (stopped): the kernel queues them all, none waits for a SYN retry."""
        daemon, port = self.start()
        get(port)
        os.kill(daemon.pid, signal.SIGSTOP)
        socks = []
        try:
            for _ in range(100):
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sock.setblocking(False)
                sock.connect_ex(('127.0.0.1', port))
                socks.append(sock)
            # The handshake is the kernel's, done at once; a SYN the full
            # accept queue dropped is retried 1 s, 3 s, 7 s... later, and
            # dropped again while perfmond stays stopped.
            pending = set(socks)
            deadline = time.monotonic() + 10
            while pending and time.monotonic() < deadline:
                _, writable, _ = select.select([], list(pending), [], 0.5)
                pending -= set(writable)
            self.assertEqual(len(pending), 0, f'{len(pending)} of 100 connections not established while perfmond was stopped')
        finally:
            os.kill(daemon.pid, signal.SIGCONT)
        # And perfmond serves them once it runs again.
        for sock in socks[:10]:
            sock.setblocking(True)
            sock.settimeout(30)
            sock.sendall(f'GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n'.encode())
            self.assertEqual(read_response(sock)[0], 200)
        for sock in socks:
            sock.close()

    def test_non_loopback_needs_allow_remote(self):
        port = free_port()
        daemon = Perfmond(PERFMOND, [f'--metrics-address=0.0.0.0:{port}'])
        self.addCleanup(daemon.stop)
        self.assertEqual(daemon.wait(), 2)
        self.assertIn('--allow-remote', daemon.log())

        daemon = Perfmond(PERFMOND, [f'--metrics-address=[::]:{port}'])
        self.addCleanup(daemon.stop)
        self.assertEqual(daemon.wait(), 2)

    def test_allow_remote_warns(self):
        port = free_port()
        daemon = Perfmond(PERFMOND, [f'--metrics-address=0.0.0.0:{port}', '--allow-remote'],
                          wait_for_port=port)
        self.addCleanup(daemon.stop)
        self.assertTrue(eventually(lambda: 'not only on loopback' in daemon.log()), daemon.log())
        # Off loopback, /metrics needs the token, as the page does.
        self.assertEqual(get(port)[0], 401)
        with open(os.path.join(daemon.runtime_dir, 'perfmon', 'http-token')) as f:
            token = f.read().strip()
        self.assertEqual(get(port, headers={'Authorization': 'Bearer ' + 'x' * len(token)})[0], 401)
        self.assertEqual(get(port, headers={'Authorization': 'Bearer ' + token})[0], 200)
        self.assertNotIn(token, daemon.log())


if __name__ == '__main__':
    PERFMOND = sys.argv.pop(1)
    unittest.main(verbosity=2)
