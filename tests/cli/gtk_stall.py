# gtk_stall.py: a GTK 4 program whose drawing blocks the loop 300 ms in
# GTK's paint, once a second, for the tests of perfmon run; it knows
# nothing of perfmon.
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import sys
import time

import gi

gi.require_version('Gtk', '4.0')
from gi.repository import GLib, Gtk  # noqa: E402


class SlowWidget(Gtk.Widget):
    """Takes 300 ms to draw: inside GTK's paint, not in a source of ours."""

    def do_snapshot(self, snapshot):
        time.sleep(0.3)


def redraw(area):
    area.queue_draw()
    return GLib.SOURCE_CONTINUE


def activate(app):
    window = Gtk.ApplicationWindow(application=app)
    area = SlowWidget()
    window.set_child(area)
    window.present()
    GLib.timeout_add(1000, redraw, area)


app = Gtk.Application(application_id='org.perfmon.GtkStall')
app.connect('activate', activate)
GLib.timeout_add_seconds(int(sys.argv[1]) if len(sys.argv) > 1 else 60, app.quit)
app.run(None)
