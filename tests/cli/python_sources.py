# python_sources.py: a PyGObject program that knows nothing of perfmon, for
# the tests of automatic groups under "perfmon run"
#
# (A helper program for the tests, not a test: the assertions are in
# the test that runs it.)
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Two short callbacks and, in the same iteration, one that keeps the loop
# busy for 300 ms: one hang, whose runnable must be the long one.

import time

from gi.repository import GLib

loop = GLib.MainLoop()
ticks = []


def short_tick(tag):
    ticks.append(tag)
    return len(ticks) < 3


class Worker:
    def long_job(self):
        end = time.monotonic() + 0.3
        while time.monotonic() < end:
            pass
        return GLib.SOURCE_REMOVE


def other_short():
    sum(range(20000))
    return GLib.SOURCE_REMOVE


def quit():
    loop.quit()
    return GLib.SOURCE_REMOVE


GLib.idle_add(short_tick, 'a')
GLib.idle_add(Worker().long_job)
GLib.idle_add(other_short)
GLib.timeout_add(700, quit)
loop.run()
print('python_sources: done, ticks', ''.join(ticks))
