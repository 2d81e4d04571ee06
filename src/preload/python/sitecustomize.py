# SPDX-License-Identifier: LGPL-2.1-or-later
"""perfmon run: name the GLib sources of an unmodified Python program.

The preload module puts this directory first on PYTHONPATH, so that
/usr/bin/python3 imports this file at start-up (the site module imports
"sitecustomize"). It then imports the one it hides (Debian's), and adds
an import hook: when PyGObject loads its GLib overrides (gi.overrides.GLib),
right after the module runs and before PyGObject copies its functions into
gi.repository.GLib, perfmon_pygobject.install() replaces idle_add,
timeout_add and timeout_add_seconds with versions that name each source
after its Python callable. Nothing is imported before the program imports
gi itself. See doc/automatic-instrumentation.md.

Every Python program run under perfmon pays for this file's imports, so it
imports only what the interpreter has already loaded at start-up (sys, os,
importlib.machinery, all frozen): no importlib.abc, whose import pulls in
typing, importlib.resources, tempfile, shutil, random, bz2, lzma and
pathlib (150 ms on a loaded machine, 20 ms idle, against 60 ms for a whole
PyGObject program's start-up). The import system takes any object with the
right methods as a finder or a loader: no base class is needed.
"""

import importlib.machinery
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


class _NamingLoader:
    """The loader of gi.overrides.GLib, which names sources once it ran."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        try:
            import perfmon_pygobject
            perfmon_pygobject.install(module.GLib, module)
        except Exception as error:  # never break the program's import
            sys.stderr.write('perfmon: Python sources are not named: %s\n' % error)

    def __getattr__(self, name):
        # get_source(), is_package(), ... for tracebacks and importlib.
        return getattr(self._loader, name)


class _GLibOverridesFinder:
    def find_spec(self, fullname, path, target=None):
        if fullname != 'gi.overrides.GLib' or path is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None and hasattr(spec.loader, 'exec_module'):
            spec.loader = _NamingLoader(spec.loader)
        return spec


def _run_hidden_sitecustomize():
    paths = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec('sitecustomize', paths)
    if spec is None or spec.loader is None:
        return
    # Only now: importlib.util imports contextlib (PyGObject imports it
    # anyway, a program without a sitecustomize of its own never does).
    from importlib.util import module_from_spec
    try:
        spec.loader.exec_module(module_from_spec(spec))
    except Exception as error:
        sys.stderr.write('Error in sitecustomize; set PYTHONVERBOSE for traceback:\n'
                         '%s: %s\n' % (type(error).__name__, error))


sys.meta_path.insert(0, _GLibOverridesFinder())
_run_hidden_sitecustomize()
