# perfmond_fixture.py: a real dbus-daemon and a real perfmond, for the
# Python tests and benchmarks of perfmond's HTTP server.
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import os
import socket
import subprocess
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def fds(pid):
    return len(os.listdir(f'/proc/{pid}/fd'))


def fd_targets(pid):
    """What @pid's open fds are, for a failure message: 'socket:[…]' and paths."""
    targets = []
    for fd in sorted(os.listdir(f'/proc/{pid}/fd'), key=int):
        try:
            targets.append(f'{fd}={os.readlink(f"/proc/{pid}/fd/{fd}")}')
        except OSError:
            pass
    return ' '.join(targets)


def rss_kib(pid):
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    return 0


class Perfmond:
    """perfmond on a private session bus of its own; stderr in a file."""

    def __init__(self, perfmond, args, wait_for_port=None, runtime_dir=None):
        self.tmp = tempfile.TemporaryDirectory(prefix='perfmond-http-')
        self.runtime_dir = runtime_dir or os.path.join(self.tmp.name, 'run')
        os.makedirs(self.runtime_dir, mode=0o700, exist_ok=True)
        self.bus = subprocess.Popen(['dbus-daemon', '--session', '--nofork', '--print-address=1'],
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.address = self.bus.stdout.readline().strip()
        self.env = dict(os.environ, DBUS_SESSION_BUS_ADDRESS=self.address,
                        XDG_RUNTIME_DIR=self.runtime_dir)
        self.env.pop('G_DEBUG', None)
        self.stderr_path = os.path.join(self.tmp.name, 'stderr')
        self.stderr = open(self.stderr_path, 'w')
        self.process = subprocess.Popen([perfmond] + list(args), env=self.env, stderr=self.stderr)
        self.pid = self.process.pid
        if wait_for_port is not None:
            deadline = time.monotonic() + 60
            while True:
                if self.process.poll() is not None:
                    raise RuntimeError(f'perfmond exited with {self.process.returncode}: {self.log()}')
                try:
                    socket.create_connection(('127.0.0.1', wait_for_port), timeout=5).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)

    def log(self):
        with open(self.stderr_path) as f:
            return f.read()

    def wait(self, timeout=60):
        return self.process.wait(timeout)

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.bus.terminate()
        self.bus.wait()
        self.bus.stdout.close()
        self.stderr.close()
        self.tmp.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def read_response(sock):
    """One HTTP response from @sock: (status, headers dict, body bytes)."""
    data = b''
    while b'\r\n\r\n' not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError('closed before a response: %r' % data[:200])
        data += chunk
    head, _, body = data.partition(b'\r\n\r\n')
    lines = head.decode('latin-1').split('\r\n')
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(':')
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get('content-length', '0'))
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return status, headers, body[:length]


def get(port, path='/metrics', headers=None, host='127.0.0.1'):
    with socket.create_connection((host, port), timeout=30) as sock:
        extra = ''.join(f'{k}: {v}\r\n' for k, v in (headers or {}).items())
        sock.sendall(f'GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n{extra}\r\n'.encode())
        return read_response(sock)
