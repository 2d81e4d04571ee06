/* perfmon-error.c
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <gio/gio.h>

#include "perfmon-error.h"

/* The D-Bus names of perfmon's errors: a GError that crosses the bus (a
 * method of org.perfmon.Monitor1 or org.perfmon.Daemon1 that fails) comes
 * back to a GDBus client as the same domain and code, and other clients see
 * a readable name. Every code has one (test-error checks). */
static const GDBusErrorEntry perfmon_dbus_errors[] = {
  { PERFMON_ERROR_INVALID_DATA, "org.perfmon.Error.InvalidData" },
  { PERFMON_ERROR_UNSUPPORTED_VERSION, "org.perfmon.Error.UnsupportedVersion" },
  { PERFMON_ERROR_SNAPSHOT_MISMATCH, "org.perfmon.Error.SnapshotMismatch" },
  { PERFMON_ERROR_SNAPSHOT_ORDER, "org.perfmon.Error.SnapshotOrder" },
  { PERFMON_ERROR_INVALID_ARGUMENT, "org.perfmon.Error.InvalidArgument" },
  { PERFMON_ERROR_UNKNOWN_EVENT, "org.perfmon.Error.UnknownEvent" },
  { PERFMON_ERROR_STACK_UNAVAILABLE, "org.perfmon.Error.StackUnavailable" },
  { PERFMON_ERROR_LIMIT_REACHED, "org.perfmon.Error.LimitReached" },
  { PERFMON_ERROR_TRACING_STATE, "org.perfmon.Error.TracingState" },
};

/**
 * perfmon_error_quark:
 *
 * The error domain of perfmon's errors, %PERFMON_ERROR; their codes are
 * those of #PerfmonError. The domain is registered with GDBus: over D-Bus
 * each code is named `org.perfmon.Error.` and the code's name in camel
 * case (`org.perfmon.Error.InvalidArgument`), and a GDBus client gets the
 * same domain and code back.
 *
 * Returns: the quark of %PERFMON_ERROR
 *
 * Since: 0.1
 */
GQuark
perfmon_error_quark (void)
{
  static gsize quark = 0;

  g_dbus_error_register_error_domain ("perfmon-error-quark", &quark, perfmon_dbus_errors,
                                      G_N_ELEMENTS (perfmon_dbus_errors));
  return (GQuark) quark;
}
