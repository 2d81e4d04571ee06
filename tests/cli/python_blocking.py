# python_blocking.py: a PyGObject program whose callbacks block in system
# calls, for the test that perfmon run never interrupts them (issue 22)
#
# (A helper program for the tests, not a test: the assertions are in
# test_cli_run_no_eintr.py, which reads what this prints.)
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Each callback blocks 400 ms, well past the hang threshold: in libc's
# poll() and nanosleep() called through ctypes (which report EINTR to the
# caller, unlike Python's own wrappers, which retry), in os.read() on a
# pipe fed after 400 ms, and in GLib.usleep(). It prints one JSON line per
# call: its name, what it returned, errno, and the seconds it took.

import ctypes
import json
import os
import threading
import time

from gi.repository import GLib

libc = ctypes.CDLL(None, use_errno=True)
loop = GLib.MainLoop()
BLOCK = 0.4


class Timespec(ctypes.Structure):
    _fields_ = [('tv_sec', ctypes.c_long), ('tv_nsec', ctypes.c_long)]


def report(name, result, start):
    print(json.dumps({'call': name, 'result': result, 'errno': ctypes.get_errno(),
                      'seconds': time.monotonic() - start}), flush=True)


def block_in_poll():
    ctypes.set_errno(0)
    start = time.monotonic()
    report('poll', libc.poll(None, 0, int(BLOCK * 1000)), start)
    return GLib.SOURCE_REMOVE


def block_in_nanosleep():
    ctypes.set_errno(0)
    duration = Timespec(0, int(BLOCK * 1e9))
    start = time.monotonic()
    report('nanosleep', libc.nanosleep(ctypes.byref(duration), None), start)
    return GLib.SOURCE_REMOVE


def block_in_read():
    ctypes.set_errno(0)
    read_end, write_end = os.pipe()
    start = time.monotonic()
    threading.Timer(BLOCK, os.write, (write_end, b'x')).start()
    report('read', len(os.read(read_end, 1)), start)
    os.close(read_end)
    os.close(write_end)
    return GLib.SOURCE_REMOVE


def block_in_usleep():
    ctypes.set_errno(0)
    start = time.monotonic()
    GLib.usleep(int(BLOCK * 1e6))
    report('usleep', 0, start)
    return GLib.SOURCE_REMOVE


def quit():
    loop.quit()
    return GLib.SOURCE_REMOVE


# One a second: each hang ends well before the next begins.
for i, callback in enumerate([block_in_poll, block_in_nanosleep, block_in_read, block_in_usleep]):
    GLib.timeout_add(300 + 1000 * i, callback)
GLib.timeout_add(300 + 1000 * 4, quit)
loop.run()
