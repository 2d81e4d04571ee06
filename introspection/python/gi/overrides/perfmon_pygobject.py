# SPDX-License-Identifier: LGPL-2.1-or-later
"""Names the GLib sources a Python program makes after its callables.

perfmon's automatic groups name each dispatch after its source's name, else
its callback's symbol. A callback from Python is a libffi closure with no
symbol, so without this every Python source would be one "GIdleSource".
:func:`install` replaces ``GLib.idle_add``, ``GLib.timeout_add`` and
``GLib.timeout_add_seconds`` (and their ``GObject`` aliases) with versions
that call GLib's own adders and then name the source ``module.qualname`` of
the callable (at most 95 bytes), unless the program names it later itself.

Used by the Perfmon overrides (a program that imports Perfmon) and by the
``sitecustomize`` that ``perfmon run`` puts on ``PYTHONPATH`` (a program that
knows nothing of perfmon); needs only PyGObject, not the Perfmon typelib.
Sources made any other way (``io_add_watch``, ``child_watch_add``,
``GLib.Source`` subclasses, ``Gio`` async calls) are not named from Python:
see doc/automatic-instrumentation.md.
"""

import functools
import os

__all__ = ['callable_name', 'install']

NAME_MAX = 95
_INSTALLED = '_perfmon_names_sources'


def callable_name(function):
    """``module.qualname`` of *function*, cut to at most 95 UTF-8 bytes. A
    lambda (which has no name of its own) is named by where it is,
    ``module.<lambda> (file.py:line)``: each its own group."""
    while isinstance(function, functools.partial):
        function = function.func
    target = getattr(function, '__func__', function)  # bound methods
    qualname = (getattr(target, '__qualname__', None) or getattr(target, '__name__', None)
                or type(target).__qualname__)
    module = getattr(target, '__module__', None)
    name = '%s.%s' % (module, qualname) if module else str(qualname)
    code = getattr(target, '__code__', None)
    if str(qualname).endswith('<lambda>') and code is not None:
        name = '%s (%s:%d)' % (name, os.path.basename(code.co_filename), code.co_firstlineno)
    encoded = name.encode('utf-8', 'replace')[:NAME_MAX]
    return encoded.decode('utf-8', 'ignore')


def _named_adders(GLib):
    # The adders are GLib's own (PyGObject calls the callable straight from
    # the dispatch, so a hang's Python stack shows no frame of perfmon's);
    # the source is named once it is attached, from its id.
    def name(source_id, function):
        source = GLib.main_context_default().find_source_by_id(source_id)
        if source is not None:
            source.set_name(callable_name(function))
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
