/* perfmon-tracer-dbus.h: task tracing across processes over D-Bus
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#if !defined(PERFMON_INSIDE) && !defined(PERFMON_COMPILATION)
#error "Only <perfmon.h> can be included directly."
#endif

#include <gio/gio.h>

#include "perfmon-version-macros.h"

G_BEGIN_DECLS

PERFMON_AVAILABLE_IN_0_1
void      perfmon_dbus_connection_call                 (GDBusConnection       *connection,
                                                        const char            *bus_name,
                                                        const char            *object_path,
                                                        const char            *interface_name,
                                                        const char            *method_name,
                                                        GVariant              *parameters,
                                                        const GVariantType    *reply_type,
                                                        GDBusCallFlags         flags,
                                                        int                    timeout_msec,
                                                        GCancellable          *cancellable,
                                                        GAsyncReadyCallback    callback,
                                                        gpointer               user_data);
PERFMON_AVAILABLE_IN_0_1
GVariant *perfmon_dbus_connection_call_finish          (GDBusConnection       *connection,
                                                        GAsyncResult          *res,
                                                        GError               **error);

PERFMON_AVAILABLE_IN_0_1
void      perfmon_dbus_method_invocation_begin         (GDBusMethodInvocation *invocation);
PERFMON_AVAILABLE_IN_0_1
void      perfmon_dbus_method_invocation_end           (void);
PERFMON_AVAILABLE_IN_0_1
void      perfmon_dbus_method_invocation_return_value  (GDBusMethodInvocation *invocation,
                                                        GVariant              *parameters);
PERFMON_AVAILABLE_IN_0_1
void      perfmon_dbus_method_invocation_return_gerror (GDBusMethodInvocation *invocation,
                                                        const GError          *error);

G_END_DECLS
