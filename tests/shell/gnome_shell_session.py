# gnome_shell_session.py: a real GNOME Shell, headless, for tests and
# benchmarks
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Debian 12's GNOME Shell 43 runs here without a GPU or a seat:
#
#   with GnomeShellSession(perfmon_args=['--threshold', '100']) as shell:
#       shell.pid, shell.session_bus_address, shell.shell_pid …
#
# What it starts, all private to the session and gone after it:
# - a system bus (a dbus-daemon with a configuration of its own), named by
#   DBUS_SYSTEM_BUS_ADDRESS, carrying python3-dbusmock's "logind" and
#   "upower" templates (the shell asks both at start-up);
# - XDG_CONFIG_HOME, XDG_DATA_HOME, XDG_CACHE_HOME and XDG_RUNTIME_DIR
#   (mode 0700) in a temporary directory, exported before dbus-run-session:
#   dconf-service inherits the environment of the session bus daemon;
# - dbus-run-session -- gnome-shell --headless --wayland --no-x11
#   --virtual-monitor 1024x768, optionally under "perfmon run" with extra
#   arguments; entering the context waits until org.gnome.Shell is on the
#   session bus.
# Extensions (a directory with a metadata.json, or a dict of file names to
# contents) are installed in $XDG_DATA_HOME/gnome-shell/extensions/UUID/
# and enabled (gsettings "enabled-extensions", with
# "disable-extension-version-validation") before the shell starts.
# Leaving the context ends the shell with SIGINT (SIGTERM makes it crash in
# this setup) and waits for it; shell.returncode and shell.log (its
# standard error and output) are kept.

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

PYTHON = '/usr/bin/python3'   # the first python3 on PATH may have no gi

SYSTEM_BUS_CONFIG = '''<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_type="method_call"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
'''


def gnome_shell_path():
    return shutil.which('gnome-shell')


class SessionError(RuntimeError):
    pass


def _wait_for_name(address, name, deadline, process=None, what=None):
    while True:
        result = subprocess.run(['gdbus', 'call', '--address', address,
                                 '--dest', 'org.freedesktop.DBus', '--object-path', '/org/freedesktop/DBus',
                                 '--method', 'org.freedesktop.DBus.NameHasOwner', name],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                universal_newlines=True)
        if result.returncode == 0 and 'true' in result.stdout:
            return
        if process is not None and process.poll() is not None:
            raise SessionError('%s exited with status %s before %s was on the bus'
                               % (what, process.returncode, name))
        if time.monotonic() > deadline:
            raise SessionError('%s did not appear on the bus in time' % name)
        time.sleep(0.2)


class GnomeShellSession:
    """A headless GNOME Shell in a private session; see the top."""

    def __init__(self, perfmon_args=None, perfmon_tool=None, extensions=(),
                 extra_env=None, shell_args=(), start_timeout=120):
        self.perfmon_args = perfmon_args
        self.perfmon_tool = perfmon_tool or os.environ.get('PERFMON_TOOL', 'perfmon')
        self.extensions = list(extensions)
        self.extra_env = dict(extra_env or {})
        self.shell_args = list(shell_args)
        self.start_timeout = start_timeout
        self._processes = []
        self.returncode = None
        self.log = ''

    # --- paths ----------------------------------------------------------
    def _setup_dirs(self):
        self.tmp = tempfile.mkdtemp(prefix='perfmon-shell-')
        self.runtime_dir = os.path.join(self.tmp, 'runtime')
        os.mkdir(self.runtime_dir, 0o700)
        os.chmod(self.runtime_dir, 0o700)
        self.config_home = os.path.join(self.tmp, 'config')
        self.data_home = os.path.join(self.tmp, 'data')
        self.cache_home = os.path.join(self.tmp, 'cache')
        self.state_home = os.path.join(self.tmp, 'state')
        for d in (self.config_home, self.data_home, self.cache_home, self.state_home):
            os.makedirs(d)
        self.env = dict(os.environ)
        for var in ('DISPLAY', 'WAYLAND_DISPLAY', 'DBUS_SESSION_BUS_ADDRESS',
                    'DBUS_SYSTEM_BUS_ADDRESS', 'XDG_SESSION_TYPE', 'XDG_CURRENT_DESKTOP'):
            self.env.pop(var, None)
        self.env.update({
            'XDG_RUNTIME_DIR': self.runtime_dir,
            'XDG_CONFIG_HOME': self.config_home,
            'XDG_DATA_HOME': self.data_home,
            'XDG_CACHE_HOME': self.cache_home,
            'XDG_STATE_HOME': self.state_home,
            'GSETTINGS_BACKEND': 'dconf',
            'NO_AT_BRIDGE': '1',
        })
        self.env.update(self.extra_env)

    def _spawn(self, argv, **kwargs):
        process = subprocess.Popen(argv, env=self.env, **kwargs)
        self._processes.append(process)
        return process

    # --- the system bus ---------------------------------------------------
    def _start_system_bus(self, deadline):
        socket = os.path.join(self.runtime_dir, 'system_bus_socket')
        config = os.path.join(self.tmp, 'system-bus.conf')
        with open(config, 'w') as f:
            f.write(SYSTEM_BUS_CONFIG.format(socket=socket))
        self.system_bus = self._spawn(['dbus-daemon', '--nofork', '--config-file=' + config,
                                       '--print-address=1'],
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                      universal_newlines=True)
        self.system_bus_address = self.system_bus.stdout.readline().strip()
        if not self.system_bus_address:
            raise SessionError('the private system bus did not start')
        self.env['DBUS_SYSTEM_BUS_ADDRESS'] = self.system_bus_address
        for template, name in (('logind', 'org.freedesktop.login1'),
                               ('upower', 'org.freedesktop.UPower')):
            mock = self._spawn([PYTHON, '-m', 'dbusmock', '--system', '--template', template],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            _wait_for_name(self.system_bus_address, name, deadline, mock, 'dbusmock ' + template)

    # --- extensions ---------------------------------------------------------
    def install_extension(self, extension):
        """@extension: a directory holding metadata.json and the rest, or a
        dict {file name: contents} with a 'metadata.json'. Returns the UUID."""
        if isinstance(extension, dict):
            metadata = json.loads(extension['metadata.json'])
        else:
            with open(os.path.join(extension, 'metadata.json')) as f:
                metadata = json.load(f)
        uuid = metadata['uuid']
        target = os.path.join(self.data_home, 'gnome-shell', 'extensions', uuid)
        if isinstance(extension, dict):
            os.makedirs(target)
            for name, contents in extension.items():
                path = os.path.join(target, name)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, 'w') as f:
                    f.write(contents)
        else:
            shutil.copytree(extension, target)
        return uuid

    def _gsettings(self, *args):
        subprocess.run(['gsettings'] + list(args), env=self.env, check=True,
                       stdout=subprocess.DEVNULL)

    # --- the session and the shell ------------------------------------------
    def shell_command(self):
        shell = [gnome_shell_path(), '--headless', '--wayland', '--no-x11',
                 '--virtual-monitor', '1024x768'] + self.shell_args
        if self.perfmon_args is not None:
            return [self.perfmon_tool, 'run'] + list(self.perfmon_args) + ['--'] + shell
        return shell

    def __enter__(self):
        if gnome_shell_path() is None:
            raise SessionError('gnome-shell is not installed')
        self._setup_dirs()
        # Before anything can fail: the error path reads the log.
        self.log_path = os.path.join(self.tmp, 'shell.log')
        try:
            deadline = time.monotonic() + self.start_timeout
            self._start_system_bus(deadline)
            address_file = os.path.join(self.tmp, 'session-bus-address')
            pid_file = os.path.join(self.tmp, 'shell-pid')
            uuids = [self.install_extension(e) for e in self.extensions]
            # Settings go through dconf on the session bus: set them in
            # the session, before the shell starts.
            setup = ''
            if uuids:
                setup = ('gsettings set org.gnome.shell disable-extension-version-validation true && '
                         'gsettings set org.gnome.shell enabled-extensions "$PERFMON_SHELL_UUIDS" && ')
                self.env['PERFMON_SHELL_UUIDS'] = str(uuids)
            script = ('echo "$DBUS_SESSION_BUS_ADDRESS" > "$1.tmp" && mv "$1.tmp" "$1" && '
                      + setup + 'echo $$ > "$2" && shift 2 && exec "$@"')
            self._log = open(self.log_path, 'w')
            self.session = self._spawn(['dbus-run-session', '--', 'sh', '-c', script, 'sh',
                                        address_file, pid_file] + self.shell_command(),
                                       stdout=self._log, stderr=subprocess.STDOUT,
                                       start_new_session=True)
            while not (os.path.exists(address_file) and os.path.exists(pid_file)):
                if self.session.poll() is not None:
                    raise SessionError('the session ended at start-up:\n' + self._read_log())
                if time.monotonic() > deadline:
                    raise SessionError('the session did not start in time')
                time.sleep(0.05)
            with open(address_file) as f:
                self.session_bus_address = f.read().strip()
            with open(pid_file) as f:
                # The shell itself, or "perfmon run" (which passes SIGINT on).
                self.pid = int(f.read().strip())
            _wait_for_name(self.session_bus_address, 'org.gnome.Shell', deadline,
                           self.session, 'the shell')
            self.shell_pid = self._find_shell_pid()
        except BaseException:
            self._stop()
            raise
        return self

    def _find_shell_pid(self):
        if self.perfmon_args is None:
            return self.pid
        with open('/proc/%d/task/%d/children' % (self.pid, self.pid)) as f:
            return int(f.read().split()[0])

    def _read_log(self):
        try:
            with open(self.log_path) as f:
                return f.read()
        except OSError:
            return ''

    def stop(self, timeout=60):
        """Ends the shell with SIGINT; returns its exit status."""
        if getattr(self, 'pid', None) is not None and self.session.poll() is None:
            try:
                os.kill(self.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
            try:
                self.session.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.session.pid, signal.SIGKILL)
                self.session.wait()
        self.returncode = self.session.returncode
        return self.returncode

    def _stop(self):
        if getattr(self, 'session', None) is not None:
            self.stop()
        for process in reversed(self._processes):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            if process.stdout is not None:
                process.stdout.close()
        if getattr(self, '_log', None) is not None:
            self._log.close()
        self.log = self._read_log()

    def __exit__(self, *exc):
        self._stop()
        shutil.rmtree(self.tmp, ignore_errors=True)
        return False

    def cpu_seconds(self, pid=None):
        """User + system CPU of the shell process so far."""
        with open('/proc/%d/stat' % (pid or self.shell_pid)) as f:
            fields = f.read().rpartition(')')[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')

    def _read_threads(self, filename, parse):
        """{name: [parse(text of /proc/PID/task/TID/filename), ...]} over
        the shell's live threads, by name ("main" for the main thread); a
        thread that exits meanwhile is left out."""
        result = {}
        for tid in os.listdir('/proc/%d/task' % self.shell_pid):
            try:
                with open('/proc/%d/task/%s/comm' % (self.shell_pid, tid)) as f:
                    name = 'main' if tid == str(self.shell_pid) else f.read().strip()
                with open('/proc/%d/task/%s/%s' % (self.shell_pid, tid, filename)) as f:
                    value = parse(f.read())
            except (OSError, ValueError, IndexError):
                continue
            result.setdefault(name, []).append(value)
        return result

    def thread_cpu_seconds(self):
        """CPU seconds so far of each live thread of the shell, by name
        ("main" for the main thread), from schedstat: nanoseconds, where
        cpu_seconds() counts 10 ms clock ticks, too coarse for an idle
        shell's few ms a second. Threads that exited are not in it."""
        return {name: sum(values) for name, values in
                self._read_threads('schedstat', lambda text: int(text.split()[0]) / 1e9).items()}

    def perfmon_snapshot(self):
        """The shell's perfmon figures now, as perfmon serves them on the
        session bus (org.perfmon.Monitor1.GetSnapshotJson, on whichever of
        the shell's connections carries it): parsed JSON. Those of the
        summary are its last checkpoint's when SIGINT kills the shell (no
        exit handler runs), which for an idle shell come a minute apart."""
        from gi.repository import Gio, GLib
        bus = Gio.DBusConnection.new_for_address_sync(
            self.session_bus_address,
            Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION,
            None, None)

        def call(name, path, interface, method, args, reply):
            return bus.call_sync(name, path, interface, method, args, GLib.VariantType(reply),
                                 Gio.DBusCallFlags.NONE, 30000, None).unpack()

        try:
            errors = []
            names = call('org.freedesktop.DBus', '/org/freedesktop/DBus', 'org.freedesktop.DBus',
                         'ListNames', None, '(as)')[0]
            for name in names:
                if not name.startswith(':'):
                    continue
                try:
                    pid = call('org.freedesktop.DBus', '/org/freedesktop/DBus', 'org.freedesktop.DBus',
                               'GetConnectionUnixProcessID', GLib.Variant('(s)', (name,)), '(u)')[0]
                    if pid != self.shell_pid:
                        continue
                    return json.loads(call(name, '/org/perfmon/Monitor1', 'org.perfmon.Monitor1',
                                           'GetSnapshotJson', None, '(s)')[0])
                except GLib.Error as error:
                    errors.append('%s: %s' % (name, error.message))
            raise SessionError('no connection of the shell (pid %d) serves perfmon: %s'
                               % (self.shell_pid, errors))
        finally:
            bus.close_sync(None)

    def thread_switches(self, name):
        """The context switches so far of the shell's threads named @name
        ("main": the main thread), summed: (voluntary, involuntary). Each
        wake-up follows a voluntary one; an involuntary one is a
        preemption. (0, 0) if none is live."""
        counts = self._read_threads('status', lambda text: (
            int(text.split('\nvoluntary_ctxt_switches:')[1].split()[0]),
            int(text.split('nonvoluntary_ctxt_switches:')[1].split()[0]))).get(name, [])
        return sum(c[0] for c in counts), sum(c[1] for c in counts)
