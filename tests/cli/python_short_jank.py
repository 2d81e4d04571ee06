#!/usr/bin/python3
# python_short_jank.py: a PyGObject program, written as users write it,
# that knows nothing of perfmon: once past perfmon's 10 s start-up grace
# for janks, one timeout keeps the loop busy for 400 ms (a stack sampling
# jank: 150 to 450 ms), then the program waits for the jank's report
# (about 2 s later) and quits. For test_cli_run_jank.py.
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import time

from gi.repository import GLib


def recalculate_spreadsheet():
    end = time.monotonic() + 0.4
    total = 0
    while time.monotonic() < end:
        total += 1
    return total


def on_timeout():
    recalculate_spreadsheet()
    return GLib.SOURCE_REMOVE


def main():
    loop = GLib.MainLoop()
    GLib.timeout_add(11000, on_timeout)
    GLib.timeout_add(16000, loop.quit)
    loop.run()


if __name__ == '__main__':
    main()
