/* perfmon-uid-gate.h: serve a D-Bus object only to callers of one uid
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The access check of org.perfmon.Monitor1 (perfmon-export.c) and of
 * perfmond's org.perfmon.Daemon1: one mechanism for both, in the internal
 * library libperfmon-support.a that the library and perfmond link.
 * On a message bus the caller's uid is asked of the bus
 * (GetConnectionUnixUser) once per unique name, asynchronously; calls that
 * arrive meanwhile wait for the answer. A unique name is never reused on a
 * bus, so its uid cannot change; it is forgotten when the name leaves the
 * bus, as g_bus_watch_name() tells (watched before asking, so that a
 * caller that leaves between the two is reported gone either by the bus's
 * answer or by the watch). g_bus_watch_name() is how perfmon and perfmond
 * follow every unique name: callers here, subscribers (PerfmonNameSet
 * below) and perfmond's registered processes.
 *
 * Everything runs in the thread-default main context of the thread that
 * created the gate, which must be where GDBus calls the object.
 */
#pragma once

#include <gio/gio.h>
#include <sys/types.h>

G_BEGIN_DECLS

typedef struct _PerfmonUidGate PerfmonUidGate;

/* @invocation is from a caller of the gate's uid: serve it. */
typedef void (*PerfmonUidGateServe) (GDBusMethodInvocation *invocation,
                                     gpointer               user_data);

PerfmonUidGate *_perfmon_uid_gate_new   (GDBusConnection       *connection,
                                         uid_t                  uid,
                                         const char            *what,
                                         PerfmonUidGateServe    serve,
                                         gpointer               user_data);
void            _perfmon_uid_gate_check (PerfmonUidGate        *gate,
                                         GDBusMethodInvocation *invocation);
void            _perfmon_uid_gate_judge (PerfmonUidGate        *gate,
                                         GDBusMethodInvocation *invocation,
                                         uid_t                  uid);
void            _perfmon_uid_gate_deny  (GDBusMethodInvocation *invocation,
                                         const char            *why);
void            _perfmon_uid_gate_close (PerfmonUidGate        *gate,
                                         const char            *error_name,
                                         const char            *why);

G_END_DECLS

G_BEGIN_DECLS

/* A bounded set of unique bus names that forgets each name when it leaves
 * the bus (or had left before it was added): the subscribers of a
 * signal-sending object. Any thread may use it; a departure is seen in the
 * thread-default context of the thread that added the name. */
typedef struct _PerfmonNameSet PerfmonNameSet;

PerfmonNameSet *_perfmon_name_set_new       (GDBusConnection *connection,
                                             guint            max_names);
gboolean        _perfmon_name_set_add       (PerfmonNameSet  *set,
                                             const char      *name);
void            _perfmon_name_set_remove    (PerfmonNameSet  *set,
                                             const char      *name);
GPtrArray      *_perfmon_name_set_dup_names (PerfmonNameSet  *set);
void            _perfmon_name_set_free      (PerfmonNameSet  *set);

G_END_DECLS
