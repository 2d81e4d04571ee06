# python_lambdas.py: a PyGObject program that knows nothing of perfmon and
# adds its sources with lambdas, as many programs do
#
# (A helper program for the tests, not a test: the assertions are in
# test_cli_run_names.py.)
#
# SPDX-License-Identifier: LGPL-2.1-or-later

from gi.repository import GLib

loop = GLib.MainLoop()
done = []


def refresh(what):
    sum(range(20000))
    done.append(what)
    return GLib.SOURCE_REMOVE


GLib.idle_add(lambda: refresh('list'))
GLib.idle_add(lambda: refresh('preview'))
GLib.timeout_add(300, lambda: loop.quit())
loop.run()
print('python_lambdas: done,', ' '.join(done))
