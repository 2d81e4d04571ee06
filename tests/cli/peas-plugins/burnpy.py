# burnpy.py: a libpeas Python plugin that burns CPU in a GLib timeout and
# measures what it burnt (tests/cli/test_cli_run_peas.py)
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import time

import gi
gi.require_version('Peas', '1.0')
from gi.repository import GLib, GObject, Peas  # noqa: E402

BURN_S = 0.030


class BurnPlugin(GObject.Object, Peas.Activatable):
    object = GObject.Property(type=GObject.Object)

    def __init__(self):
        super().__init__()
        self._burnt_us = 0
        self._timeout = 0

    @GObject.Property(type=GObject.TYPE_INT64, flags=GObject.ParamFlags.READABLE)
    def burnt(self):
        return self._burnt_us

    def do_activate(self):
        self._timeout = GLib.timeout_add(100, self.burn)

    def do_deactivate(self):
        if self._timeout:
            GLib.source_remove(self._timeout)
            self._timeout = 0

    def burn(self):
        start = time.thread_time()
        while time.thread_time() - start < BURN_S:
            pass
        self._burnt_us += int((time.thread_time() - start) * 1e6)
        return True
