# SPDX-License-Identifier: LGPL-2.1-or-later
"""PyGObject overrides for Perfmon.

Makes a compartment (a :class:`Perfmon.Group` of kind
``Perfmon.GroupKind.COMPARTMENT``) usable as a context manager::

    with compartment:
        run_addon_code()

is the same as ``compartment.enter()`` followed by ``compartment.leave()``,
and the compartment is left however the block ends, exceptions included
(they are not swallowed).
"""

from ..overrides import override
from ..module import get_introspection_module

Perfmon = get_introspection_module('Perfmon')

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
