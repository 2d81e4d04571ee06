#!/usr/bin/python3
# python_slow_callback.py: a PyGObject program, written as users write it,
# whose timeout callback uses 150 ms of CPU in one go; for
# test_cli_run_alerts.py
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import sys
import time

from gi.repository import GLib


def recalculate_totals():
    # CPU time, not wall time: a busy machine cannot make it shorter.
    end = time.thread_time() + 0.15
    while time.thread_time() < end:
        pass
    return GLib.SOURCE_CONTINUE


def main():
    loop = GLib.MainLoop()
    GLib.timeout_add(300, recalculate_totals)
    GLib.timeout_add_seconds(int(sys.argv[1]) if len(sys.argv) > 1 else 4, loop.quit)
    loop.run()


if __name__ == '__main__':
    main()
