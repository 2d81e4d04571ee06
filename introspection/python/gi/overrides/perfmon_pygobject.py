# SPDX-License-Identifier: LGPL-2.1-or-later
"""Names the GLib sources a Python program makes after its callables.

perfmon's automatic groups name each dispatch after its source's name, else
its callback's symbol. A callback from Python is a libffi closure with no
symbol, so without this every Python source would be one "GIdleSource".
:func:`install` replaces ``GLib.idle_add``, ``GLib.timeout_add`` and
``GLib.timeout_add_seconds`` (and their ``GObject`` aliases) with versions
that call GLib's own adders and then name the source ``module.qualname`` of
the callable (at most 95 bytes), unless the program names it later itself.

Under ``perfmon run``, a callable whose file an add-on rule of perfmon's
matches (a libpeas Python plugin's module: see doc/addons.md) makes its
source's automatic group belong to that add-on's group: each dispatch is
charged to the add-on. The rules are perfmon's own, reached through the
library the run loaded into the process (ctypes); without it, sources are
only named.

Used by the Perfmon overrides (a program that imports Perfmon) and by the
``sitecustomize`` that ``perfmon run`` puts on ``PYTHONPATH`` (a program that
knows nothing of perfmon); needs only PyGObject, not the Perfmon typelib.
Sources made any other way (``io_add_watch``, ``child_watch_add``,
``GLib.Source`` subclasses, ``Gio`` async calls) are not named from Python:
see doc/automatic-instrumentation.md.
"""

import functools
import os
import sys

__all__ = ['callable_name', 'install']

NAME_MAX = 95
_INSTALLED = '_perfmon_names_sources'


def callable_name(function):
    """``module.qualname`` of *function*, cut to at most 95 UTF-8 bytes. A
    lambda (which has no name of its own) is named by where it is,
    ``module.<lambda> (file.py:line)``: each its own group."""
    target = _target(function)
    qualname = (getattr(target, '__qualname__', None) or getattr(target, '__name__', None)
                or type(target).__qualname__)
    module = getattr(target, '__module__', None)
    name = '%s.%s' % (module, qualname) if module else str(qualname)
    code = getattr(target, '__code__', None)
    if str(qualname).endswith('<lambda>') and code is not None:
        name = '%s (%s:%d)' % (name, os.path.basename(code.co_filename), code.co_firstlineno)
    encoded = name.encode('utf-8', 'replace')[:NAME_MAX]
    return encoded.decode('utf-8', 'ignore')


class _AddonAttribution:
    """perfmon's add-on rules and the default monitor, in a process that
    ``perfmon run`` loaded its module into, through ctypes: the callables'
    files mapped to add-ons (once per file), the sources' automatic groups
    assigned to them (once per name)."""

    CACHE_MAX = 4096

    def __init__(self):
        self._files = {}
        self._assigned = set()
        self._lib = None
        if os.environ.get('PERFMON_RUN_NO_ADDONS') == '1':
            return
        try:
            import ctypes
            lib = ctypes.CDLL(None)
            # Only in perfmon run's processes: its module is there.
            if not hasattr(lib, 'perfmon_preload_receive_internals'):
                return
            lib.perfmon_addon_rule_match.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p),
                                                     ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
            lib.perfmon_addon_rule_match.restype = ctypes.c_int
            lib.perfmon_monitor_get_default.argtypes = []
            lib.perfmon_monitor_get_default.restype = ctypes.c_void_p
            lib.perfmon_monitor_get_addon_group.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
            lib.perfmon_monitor_get_addon_group.restype = ctypes.c_void_p
            lib.perfmon_monitor_assign_automatic_group.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                                                   ctypes.c_uint64, ctypes.c_char_p,
                                                                   ctypes.c_void_p]
            lib.perfmon_monitor_assign_automatic_group.restype = ctypes.c_int
            lib.g_object_unref.argtypes = [ctypes.c_void_p]
            lib.g_free.argtypes = [ctypes.c_void_p]
        except (OSError, AttributeError):
            return
        self._ctypes = ctypes
        self._lib = lib

    def _take(self, pointer):
        text = self._ctypes.string_at(pointer.value).decode('utf-8', 'replace')
        self._lib.g_free(pointer)
        return text

    def _addon_of(self, filename):
        """(id, name) of the add-on *filename* belongs to, or None."""
        if filename in self._files:
            return self._files[filename]
        ctypes = self._ctypes
        addon_id, addon_name = ctypes.c_void_p(), ctypes.c_void_p()
        found = None
        try:
            encoded = os.fsencode(filename)
        except (TypeError, ValueError):
            encoded = None
        if encoded and b'\0' not in encoded and \
           self._lib.perfmon_addon_rule_match(encoded, ctypes.byref(addon_id), ctypes.byref(addon_name), None):
            found = (self._take(addon_id), self._take(addon_name))
        if len(self._files) < self.CACHE_MAX:
            self._files[filename] = found
        return found

    def attribute(self, source_name, function):
        """Makes the automatic group *source_name* belong to the add-on of
        *function*'s file, if a rule matches it."""
        if self._lib is None or source_name in self._assigned or len(self._assigned) >= self.CACHE_MAX:
            return
        code = getattr(_target(function), '__code__', None)
        filename = getattr(code, 'co_filename', None)
        if not isinstance(filename, str) or not os.path.isabs(filename):
            return
        addon = self._addon_of(filename)
        if addon is None:
            return
        lib = self._lib
        monitor = lib.perfmon_monitor_get_default()
        addon_id = addon[0].encode('utf-8')
        # The add-on's group made with its name first; the automatic
        # group's parent then keeps it.
        group = lib.perfmon_monitor_get_addon_group(monitor, addon_id, addon[1].encode('utf-8'))
        # Fails off the monitor's thread or past max-automatic-groups: the
        # source is then only named.
        if lib.perfmon_monitor_assign_automatic_group(monitor, source_name.encode('utf-8'), 0, addon_id, None):
            self._assigned.add(source_name)
        if group:
            lib.g_object_unref(group)


def _target(function):
    while isinstance(function, functools.partial):
        function = function.func
    return getattr(function, '__func__', function)  # bound methods


def _named_adders(GLib):
    # The adders are GLib's own (PyGObject calls the callable straight from
    # the dispatch, so a hang's Python stack shows no frame of perfmon's);
    # the source is named once it is attached, from its id.
    addons = _AddonAttribution()

    def name(source_id, function):
        source = GLib.main_context_default().find_source_by_id(source_id)
        if source is not None:
            source_name = callable_name(function)
            source.set_name(source_name)
            try:
                addons.attribute(source_name, function)
            except Exception as error:  # never break the program's call
                sys.stderr.write('perfmon: Python add-on attribution: %s\n' % error)
                addons._lib = None
        return source_id

    def idle_add(function, *user_data, **kwargs):
        priority = kwargs.get('priority', GLib.PRIORITY_DEFAULT_IDLE)
        return name(GLib.idle_add(priority, function, *user_data), function)

    def timeout_add(interval, function, *user_data, **kwargs):
        priority = kwargs.get('priority', GLib.PRIORITY_DEFAULT)
        return name(GLib.timeout_add(priority, interval, function, *user_data), function)

    def timeout_add_seconds(interval, function, *user_data, **kwargs):
        priority = kwargs.get('priority', GLib.PRIORITY_DEFAULT)
        return name(GLib.timeout_add_seconds(priority, interval, function, *user_data), function)

    return {'idle_add': idle_add, 'timeout_add': timeout_add,
            'timeout_add_seconds': timeout_add_seconds}


def install(introspected_glib, *modules):
    """Puts the naming adders, built on *introspected_glib* (the raw
    introspection module, whose ``idle_add`` takes a priority first), into
    each of *modules* that has them: the ``gi.overrides.GLib`` module (before
    PyGObject copies its functions into ``gi.repository.GLib``), or
    ``gi.repository.GLib`` itself.
    Idempotent per module."""
    adders = _named_adders(introspected_glib)
    for module in modules:
        if module is None or getattr(module, _INSTALLED, False):
            continue
        for name, adder in adders.items():
            if hasattr(module, name):
                setattr(module, name, adder)
        setattr(module, _INSTALLED, True)
