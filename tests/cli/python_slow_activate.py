#!/usr/bin/python3
# python_slow_activate.py: a PyGObject application whose activate does its
# start-up work synchronously, as many do: ~300 ms of CPU outside any
# dispatch of the main loop, then it quits.
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import time

from gi.repository import Gio, GLib


def build_everything():
    end = time.monotonic() + 0.3
    n = 0
    while time.monotonic() < end:
        n += 1
    return n


def on_activate(app):
    app.hold()
    build_everything()

    def done():
        print('python_slow_activate: done', flush=True)
        app.release()
        return GLib.SOURCE_REMOVE

    GLib.timeout_add(200, done)


app = Gio.Application(application_id='org.perfmon.test.SlowActivate',
                      flags=Gio.ApplicationFlags.NON_UNIQUE)
app.connect('activate', on_activate)
app.run(None)
