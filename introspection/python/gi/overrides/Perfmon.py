# SPDX-License-Identifier: LGPL-2.1-or-later
"""PyGObject overrides for Perfmon.

Makes a compartment (a :class:`Perfmon.Group` of kind
``Perfmon.GroupKind.COMPARTMENT``) usable as a context manager::

    with compartment:
        run_addon_code()

is the same as ``compartment.enter()`` followed by ``compartment.leave()``,
and the compartment is left however the block ends, exceptions included
(they are not swallowed).

Importing Perfmon also names the GLib sources the program makes from then
on after their Python callables (``GLib.idle_add``, ``timeout_add``,
``timeout_add_seconds``), for the automatic groups: see
``perfmon_pygobject``.
"""

import sys

from ..overrides import override
from ..module import get_introspection_module
from . import perfmon_pygobject

Perfmon = get_introspection_module('Perfmon')


def _check_library():
    """Says which library the typelib names and what to set when it cannot
    be loaded (an install in a custom prefix without LD_LIBRARY_PATH),
    instead of PyGObject's AssertionError on the first type."""
    import ctypes
    from gi.repository import GObject

    if Perfmon.Group.__gtype__ != GObject.TYPE_NONE:
        return
    import os
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        from gi.repository import GIRepository
    repository = GIRepository.Repository.get_default()
    library = (repository.get_shared_library('Perfmon') or 'libperfmon-1.so.0').split(',')[0]
    typelib = repository.get_typelib_path('Perfmon') or 'Perfmon-1.typelib'
    try:
        ctypes.CDLL(library)
        reason = 'it loads, but has no perfmon types'
    except OSError as error:
        reason = str(error)
    # An install keeps the typelib in LIBDIR/girepository-1.0.
    libdir = os.path.dirname(os.path.dirname(os.path.abspath(typelib)))
    raise ImportError('%s cannot be loaded (%s): for perfmon installed in a prefix the '
                      'dynamic loader does not search, set LD_LIBRARY_PATH=%s (the typelib '
                      'is %s)' % (library, reason, libdir, typelib))


_check_library()

# Sources made from Python from now on are named after their callables
# (see perfmon_pygobject), for the automatic groups.
perfmon_pygobject.install(get_introspection_module('GLib'),
                          sys.modules.get('gi.overrides.GLib'),
                          sys.modules.get('gi.repository.GLib'))

__all__ = []


class Group(Perfmon.Group):
    """A performance group; compartments can be entered with ``with``."""

    def __enter__(self):
        self.enter()
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self.leave()
        return False


Group = override(Group)
__all__.append('Group')
