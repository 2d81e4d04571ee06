# idle_dispatches.py: a PyGObject program that knows nothing of perfmon and
# dispatches an empty idle N times, then quits (bench-run.py).
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import sys

from gi.repository import GLib

left = int(sys.argv[1]) if len(sys.argv) > 1 else 1000000
loop = GLib.MainLoop()


def empty():
    global left
    left -= 1
    if left > 0:
        return True
    loop.quit()
    return False


GLib.idle_add(empty)
loop.run()
