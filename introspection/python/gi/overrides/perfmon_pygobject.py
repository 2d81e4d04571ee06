# SPDX-License-Identifier: LGPL-2.1-or-later
"""Names the GLib sources a Python program makes after its callables.

perfmon's automatic groups name each dispatch after its source's name, else
its callback's symbol. A callback from Python is a libffi closure with no
symbol, so without this every Python source would be one "GIdleSource".
:func:`install` replaces ``GLib.idle_add``, ``GLib.timeout_add`` and
``GLib.timeout_add_seconds`` (and their ``GObject`` aliases) with versions
that do what PyGObject's do -- make the source, set its priority and
callback, attach it to the default context -- and also name it
``module.qualname`` of the callable (at most 95 bytes), unless the program
names it later itself.

Used by the Perfmon overrides (a program that imports Perfmon) and by the
``sitecustomize`` that ``perfmon run`` puts on ``PYTHONPATH`` (a program that
knows nothing of perfmon); needs only PyGObject, not the Perfmon typelib.
Sources made any other way (``io_add_watch``, ``child_watch_add``,
``GLib.Source`` subclasses, ``Gio`` async calls) are not named from Python:
see doc/automatic-instrumentation.md.
"""

import functools

__all__ = ['callable_name', 'install']

NAME_MAX = 95
_INSTALLED = '_perfmon_names_sources'


def callable_name(function):
    """``module.qualname`` of *function*, cut to at most 95 UTF-8 bytes."""
    while isinstance(function, functools.partial):
        function = function.func
    target = getattr(function, '__func__', function)  # bound methods
    qualname = (getattr(target, '__qualname__', None) or getattr(target, '__name__', None)
                or type(target).__qualname__)
    module = getattr(target, '__module__', None)
    name = '%s.%s' % (module, qualname) if module else str(qualname)
    encoded = name.encode('utf-8', 'replace')[:NAME_MAX]
    return encoded.decode('utf-8', 'ignore')


def _named_adders(GLib):
    def attach(source, priority, function, user_data):
        if priority is not None:
            source.set_priority(priority)
        source.set_name(callable_name(function))
        # GLib's own idle_add calls function(*user_data); the introspected
        # set_callback always passes one user_data (None if none).
        source.set_callback(lambda _data: function(*user_data), None)
        return source.attach(None)

    def idle_add(function, *user_data, **kwargs):
        return attach(GLib.idle_source_new(), kwargs.get('priority', GLib.PRIORITY_DEFAULT_IDLE),
                      function, user_data)

    def timeout_add(interval, function, *user_data, **kwargs):
        return attach(GLib.timeout_source_new(interval), kwargs.get('priority', GLib.PRIORITY_DEFAULT),
                      function, user_data)

    def timeout_add_seconds(interval, function, *user_data, **kwargs):
        return attach(GLib.timeout_source_new_seconds(interval),
                      kwargs.get('priority', GLib.PRIORITY_DEFAULT), function, user_data)

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
