# clitest.py: what the perfmon command-line tests share
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The tests get the build's paths from the environment that
# tests/cli/meson.build sets: PERFMON_TOOL (the perfmon binary),
# PERFMON_PRELOAD_PATH (the uninstalled preload module) and
# PERFMON_UNINSTRUMENTED (tests/uninstrumented-loop).

import os
import re
import select
import shutil
import subprocess
import tempfile
import time
import unittest

TOOL = os.environ['PERFMON_TOOL']



def stripped_copy(source, directory):
    """A stripped copy of the program @source in @directory, and a debug
    directory there holding its symbols by build id, as debuginfod and
    Debian's -dbgsym packages lay them out: (program, debug_dir,
    build_id)."""
    program = os.path.join(directory, os.path.basename(source))
    debug = program + '.debug'
    shutil.copy(source, program)
    subprocess.run(['objcopy', '--only-keep-debug', program, debug], check=True)
    subprocess.run(['strip', '--strip-all', program], check=True)
    notes = subprocess.run(['readelf', '-n', program], check=True, stdout=subprocess.PIPE,
                           universal_newlines=True).stdout
    build_id = re.search(r'Build ID: ([0-9a-f]+)', notes).group(1)
    debug_dir = os.path.join(directory, 'debug')
    os.makedirs(os.path.join(debug_dir, '.build-id', build_id[:2]))
    shutil.move(debug, os.path.join(debug_dir, '.build-id', build_id[:2], build_id[2:] + '.debug'))
    return program, debug_dir, build_id

class CliTestCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='perfmon-cli-')
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.env = dict(os.environ)
        # Hang pings and jank logs of monitored programs stay in the test's
        # directory, never in the user's state directory.
        self.env['XDG_STATE_HOME'] = os.path.join(self.tmp, 'state')

    def foreign_env(self, env=None, own=False):
        """The environment for a program run with the preload module: under
        AddressSanitizer the runtime must come first in the list of loaded
        libraries, and LD_PRELOAD goes before the program's own; the leaks
        of programs not built here are not ours to find."""
        env = dict(env or self.env)
        runtime = os.environ.get('PERFMON_TEST_ASAN_RUNTIME')
        if runtime:
            env['LD_PRELOAD'] = runtime
            if not own:
                env['ASAN_OPTIONS'] = env.get('ASAN_OPTIONS', '') + ':detect_leaks=0'
        return env

    def quit_with_q(self, pid, fd, output):
        """Types q at @pid's terminal @fd and waits (30 s) for it to exit,
        reading what it still writes; fails the test if it does not quit.
        Returns its wait status and @output with what it wrote."""
        os.write(fd, b'q')
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return status, output
            if select.select([fd], [], [], 0.2)[0]:
                try:
                    output += os.read(fd, 65536)
                except OSError:
                    pass
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        self.fail('perfmon top did not quit on q:\n%s' % output.decode(errors='replace')[-2000:])

    def path(self, name):
        return os.path.join(self.tmp, name)

    def perfmon(self, *args, timeout=60, env=None, prefix=()):
        return subprocess.run(list(prefix) + [TOOL] + list(args), env=env or self.env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=timeout)

    def assertExit(self, result, status):
        self.assertEqual(result.returncode, status,
                         'exit status %d, expected %d\nstdout:\n%s\nstderr:\n%s'
                         % (result.returncode, status, result.stdout, result.stderr))


class BusTestCase(CliTestCase):
    """A private session bus per test, and perfmond on it when asked."""

    def setUp(self):
        super().setUp()
        if shutil.which('dbus-daemon') is None:
            self.skipTest('dbus-daemon missing')
        # The services the bus starts (GTK's accessibility bus, dconf)
        # inherit its stderr: a file of the test's, not the test runner's
        # pipe, which one of them outliving the test would hold open and
        # make the runner wait for until its timeout.
        with open(self.path('bus.log'), 'w') as log:
            bus = subprocess.Popen(['dbus-daemon', '--session', '--nofork', '--print-address=1'],
                                   stdout=subprocess.PIPE, stderr=log, universal_newlines=True)
        self.addCleanup(self.stop, bus)
        address = bus.stdout.readline().strip()
        self.assertTrue(address, 'dbus-daemon gave no address')
        self.env['DBUS_SESSION_BUS_ADDRESS'] = address
        # No accessibility bus (GTK 3 and 4 start one on the session bus):
        # the tests do not need it, and its daemons may outlive the test.
        self.env['NO_AT_BRIDGE'] = '1'
        self.env['GTK_A11Y'] = 'none'
        # Nothing of the user's session leaks in: no runtime dir with a
        # bus socket or a perfmond lock file.
        self.env['XDG_RUNTIME_DIR'] = self.path('runtime')
        os.makedirs(self.env['XDG_RUNTIME_DIR'], mode=0o700)

    def stop(self, process):
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()

    def start(self, argv, env=None, **kwargs):
        process = subprocess.Popen(argv, env=env or self.env, **kwargs)
        self.addCleanup(self.stop, process)
        return process

    def start_daemon(self):
        daemon = self.start([os.environ['PERFMOND_PATH'], '--poll-interval', '200',
                             '--pidfile', self.path('perfmond.pid')])
        self.eventually(lambda: self.perfmon('hangs', 'list').returncode == 0,
                        'perfmond to own its name')
        return daemon

    def eventually(self, check, what, timeout=20):
        """Calls check() until it returns something true; fails after timeout s."""
        deadline = time.monotonic() + timeout
        while True:
            value = check()
            if value:
                return value
            if time.monotonic() > deadline:
                self.fail('gave up waiting for ' + what)
            time.sleep(0.1)
