#!/usr/bin/python3
# peas_host.py: a libpeas application, as one is written in Python: it
# loads every plugin found in its plugin directories (the user's,
# $XDG_DATA_HOME/peas-host/plugins, as gedit's ~/.local/share/gedit/plugins),
# activates each, runs its main loop for the seconds given, and prints, as
# the last line of its output, a JSON object: each plugin's module name →
# the CPU time it measured itself burning, µs (tests/cli/test_cli_run_peas.py)
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import json
import os
import sys

import gi
gi.require_version('Peas', '1.0')
from gi.repository import GLib, Peas  # noqa: E402


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    engine = Peas.Engine.get_default()
    engine.enable_loader('python3')
    engine.add_search_path(os.path.join(GLib.get_user_data_dir(), 'peas-host', 'plugins'), None)
    extensions = {}
    for info in engine.get_plugin_list():
        if not engine.load_plugin(info):
            sys.exit('cannot load plugin %s' % info.get_module_name())
        extension = engine.create_extension(info, Peas.Activatable, [], [])
        extension.activate()
        extensions[info.get_module_name()] = extension
    loop = GLib.MainLoop()
    GLib.timeout_add(int(seconds * 1000), loop.quit)
    loop.run()
    burnt = {}
    for module, extension in extensions.items():
        extension.deactivate()
        burnt[module] = extension.get_property('burnt')
    print(json.dumps(burnt))


if __name__ == '__main__':
    main()
