/* perfmon-dispatch-observer.c: the observer of the automatic per-dispatch hook
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include "perfmon-dispatch-observer-private.h"

const PerfmonDispatchObserver *_perfmon_dispatch_observer;
guint _perfmon_dispatch_names_generation;

void
_perfmon_dispatch_set_observer (const PerfmonDispatchObserver *observer)
{
  g_atomic_pointer_set (&_perfmon_dispatch_observer, observer);
}

const PerfmonDispatchObserver *
_perfmon_dispatch_get_observer (void)
{
  return g_atomic_pointer_get (&_perfmon_dispatch_observer);
}
