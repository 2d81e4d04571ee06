/* perfmon-uid-gate.c: serve a D-Bus object only to callers of one uid
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "perfmon-uid-gate.h"

#define DBUS_ERROR_ACCESS_DENIED "org.freedesktop.DBus.Error.AccessDenied"

typedef struct
{
  PerfmonUidGate *gate;         /* not a reference: the gate owns us */
  char           *name;         /* unique bus name */
  gboolean        known;
  uid_t           uid;
  guint           watch;        /* g_bus_watch_name() of this name */
  GPtrArray      *waiting;      /* invocations waiting for the uid */
} Caller;

struct _PerfmonUidGate
{
  gatomicrefcount      ref_count;
  GDBusConnection     *connection;
  uid_t                uid;
  char                *what;     /* the interface served, for messages */
  PerfmonUidGateServe  serve;
  gpointer             user_data;
  GHashTable          *callers;  /* unique name → Caller; NULL once closed */
  char                *closed_error;
  char                *closed_why;
};

static PerfmonUidGate *
gate_ref (PerfmonUidGate *gate)
{
  g_atomic_ref_count_inc (&gate->ref_count);
  return gate;
}

static void
gate_unref (gpointer data)
{
  PerfmonUidGate *gate = data;

  if (!g_atomic_ref_count_dec (&gate->ref_count))
    return;
  g_assert (gate->callers == NULL);
  g_clear_object (&gate->connection);
  g_free (gate->what);
  g_free (gate->closed_error);
  g_free (gate->closed_why);
  g_free (gate);
}

void
_perfmon_uid_gate_deny (GDBusMethodInvocation *invocation,
                        const char            *why)
{
  g_dbus_method_invocation_return_dbus_error (invocation, DBUS_ERROR_ACCESS_DENIED, why);
}

/* Serves @invocation if @uid is the gate's (a peer-to-peer connection's
 * peer, whose uid the caller knows), denies it otherwise. */
void
_perfmon_uid_gate_judge (PerfmonUidGate        *gate,
                         GDBusMethodInvocation *invocation,
                         uid_t                  uid)
{
  g_autofree char *why = NULL;

  if (uid == gate->uid)
    {
      gate->serve (invocation, gate->user_data);
      return;
    }

  why = g_strdup_printf ("%s is served only to callers with the process's uid %u; the caller has uid %u",
                         gate->what, (guint) gate->uid, (guint) uid);
  _perfmon_uid_gate_deny (invocation, why);
}

static void
caller_free (gpointer data)
{
  Caller *caller = data;
  PerfmonUidGate *gate = caller->gate;

  /* Whoever still waits gets an answer: a method call must be answered. */
  for (guint i = 0; i < caller->waiting->len; i++)
    {
      GDBusMethodInvocation *invocation = g_ptr_array_index (caller->waiting, i);

      if (gate->closed_error == NULL)
        _perfmon_uid_gate_deny (invocation, "the caller left the bus before its uid was known");
      else
        g_dbus_method_invocation_return_dbus_error (invocation, gate->closed_error, gate->closed_why);
    }
  g_ptr_array_unref (caller->waiting);
  if (caller->watch != 0)
    g_bus_unwatch_name (caller->watch);
  g_free (caller->name);
  g_free (caller);
}

static void
on_caller_vanished (GDBusConnection *connection,
                    const char      *name,
                    gpointer         user_data)
{
  PerfmonUidGate *gate = user_data;

  if (gate->callers != NULL)
    g_hash_table_remove (gate->callers, name);
}

typedef struct
{
  PerfmonUidGate *gate;
  char           *name;
} UidLookup;

static void
on_caller_uid (GObject      *source,
               GAsyncResult *result,
               gpointer      user_data)
{
  UidLookup *lookup = user_data;
  PerfmonUidGate *gate = lookup->gate;
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply = NULL;
  g_autoptr(GPtrArray) waiting = NULL;
  Caller *caller;

  reply = g_dbus_connection_call_finish (G_DBUS_CONNECTION (source), result, &error);
  caller = gate->callers != NULL ? g_hash_table_lookup (gate->callers, lookup->name) : NULL;
  if (caller == NULL || caller->known)
    goto out;

  waiting = g_steal_pointer (&caller->waiting);
  caller->waiting = g_ptr_array_new ();

  if (reply != NULL)
    {
      guint32 uid;

      g_variant_get (reply, "(u)", &uid);
      caller->known = TRUE;
      caller->uid = (uid_t) uid;
      for (guint i = 0; i < waiting->len; i++)
        _perfmon_uid_gate_judge (gate, g_ptr_array_index (waiting, i), caller->uid);
    }
  else
    {
      g_autofree char *why = g_strdup_printf ("the uid of caller %s could not be found: %s",
                                              lookup->name, error->message);

      for (guint i = 0; i < waiting->len; i++)
        _perfmon_uid_gate_deny (g_ptr_array_index (waiting, i), why);
      /* Asking again on the next call is right: the failure may have been
       * transient, and a caller that is gone makes no more calls. */
      g_hash_table_remove (gate->callers, lookup->name);
    }

out:
  gate_unref (lookup->gate);
  g_free (lookup->name);
  g_free (lookup);
}

/**
 * _perfmon_uid_gate_new:
 * @connection: a message-bus connection
 * @uid: the only uid served
 * @what: what is served, for error messages (an interface name)
 * @serve: called with each call of a caller of @uid
 * @user_data: for @serve
 *
 * Returns: (transfer full): a gate; _perfmon_uid_gate_close() it
 */
PerfmonUidGate *
_perfmon_uid_gate_new (GDBusConnection     *connection,
                       uid_t                uid,
                       const char          *what,
                       PerfmonUidGateServe  serve,
                       gpointer             user_data)
{
  PerfmonUidGate *gate = g_new0 (PerfmonUidGate, 1);

  g_atomic_ref_count_init (&gate->ref_count);
  gate->connection = g_object_ref (connection);
  gate->uid = uid;
  gate->what = g_strdup (what);
  gate->serve = serve;
  gate->user_data = user_data;
  gate->callers = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, caller_free);
  return gate;
}

/* Serves @invocation (now or once its caller's uid is known) if its
 * caller has the gate's uid; denies it otherwise. */
void
_perfmon_uid_gate_check (PerfmonUidGate        *gate,
                         GDBusMethodInvocation *invocation)
{
  const char *sender = g_dbus_method_invocation_get_sender (invocation);
  Caller *caller;
  UidLookup *lookup;

  if (gate->callers == NULL)
    {
      g_dbus_method_invocation_return_dbus_error (invocation, gate->closed_error, gate->closed_why);
      return;
    }
  if (sender == NULL)
    {
      _perfmon_uid_gate_deny (invocation, "the call carries no sender, so the caller's uid cannot be known");
      return;
    }

  caller = g_hash_table_lookup (gate->callers, sender);
  if (caller != NULL && caller->known)
    {
      _perfmon_uid_gate_judge (gate, invocation, caller->uid);
      return;
    }
  if (caller != NULL)
    {
      g_ptr_array_add (caller->waiting, invocation);
      return;
    }

  caller = g_new0 (Caller, 1);
  caller->gate = gate;
  caller->name = g_strdup (sender);
  caller->waiting = g_ptr_array_new ();
  g_ptr_array_add (caller->waiting, invocation);
  caller->watch = g_bus_watch_name_on_connection (gate->connection, sender, G_BUS_NAME_WATCHER_FLAGS_NONE,
                                                  NULL, on_caller_vanished, gate_ref (gate), gate_unref);
  g_hash_table_insert (gate->callers, caller->name, caller);

  lookup = g_new0 (UidLookup, 1);
  lookup->gate = gate_ref (gate);
  lookup->name = g_strdup (sender);
  g_dbus_connection_call (gate->connection, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                          "org.freedesktop.DBus", "GetConnectionUnixUser", g_variant_new ("(s)", sender),
                          G_VARIANT_TYPE ("(u)"), G_DBUS_CALL_FLAGS_NONE, -1, NULL, on_caller_uid, lookup);
}

/* The object is gone: calls still waiting for their caller's uid get
 * @error_name and @why, and so do later ones. Drops the gate. */
void
_perfmon_uid_gate_close (PerfmonUidGate *gate,
                         const char     *error_name,
                         const char     *why)
{
  gate->closed_error = g_strdup (error_name);
  gate->closed_why = g_strdup (why);
  g_clear_pointer (&gate->callers, g_hash_table_unref);
  gate_unref (gate);
}

/* --- a set of unique names -------------------------------------------- */

/* Each watch holds a reference: GLib may call a watch's vanished handler
 * from an idle in the set's context after the set is freed (a connection
 * that closes in another thread), and the handler then finds no names. */
struct _PerfmonNameSet
{
  gatomicrefcount  ref_count;
  GDBusConnection *connection;
  guint            max_names;
  GMutex           lock;
  GHashTable      *names;        /* unique name → its g_bus_watch_name(); NULL once freed */
};

static PerfmonNameSet *
name_set_ref (PerfmonNameSet *set)
{
  g_atomic_ref_count_inc (&set->ref_count);
  return set;
}

static void
name_set_unref (gpointer data)
{
  PerfmonNameSet *set = data;

  if (!g_atomic_ref_count_dec (&set->ref_count))
    return;
  g_mutex_clear (&set->lock);
  g_object_unref (set->connection);
  g_free (set);
}

static void
on_member_vanished (GDBusConnection *connection,
                    const char      *name,
                    gpointer         user_data)
{
  _perfmon_name_set_remove (user_data, name);
}

PerfmonNameSet *
_perfmon_name_set_new (GDBusConnection *connection,
                       guint            max_names)
{
  PerfmonNameSet *set = g_new0 (PerfmonNameSet, 1);

  g_atomic_ref_count_init (&set->ref_count);
  set->connection = g_object_ref (connection);
  set->max_names = max_names;
  g_mutex_init (&set->lock);
  set->names = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  return set;
}

/* Adds @name, watched (g_bus_watch_name(), as the uid gate and perfmond
 * watch theirs), so that a name that has left or leaves is forgotten;
 * FALSE when the set is full. Adding a name twice is not an error. */
gboolean
_perfmon_name_set_add (PerfmonNameSet *set,
                       const char     *name)
{
  guint watch;
  gboolean added = FALSE, present;

  g_mutex_lock (&set->lock);
  present = g_hash_table_contains (set->names, name);
  g_mutex_unlock (&set->lock);
  if (present)
    return TRUE;

  watch = g_bus_watch_name_on_connection (set->connection, name, G_BUS_NAME_WATCHER_FLAGS_NONE,
                                          NULL, on_member_vanished, name_set_ref (set), name_set_unref);
  g_mutex_lock (&set->lock);
  present = g_hash_table_contains (set->names, name);
  if (!present && g_hash_table_size (set->names) < set->max_names)
    {
      g_hash_table_insert (set->names, g_strdup (name), GUINT_TO_POINTER (watch));
      added = TRUE;
    }
  g_mutex_unlock (&set->lock);
  if (!added)
    g_bus_unwatch_name (watch);
  return added || present;
}

void
_perfmon_name_set_remove (PerfmonNameSet *set,
                          const char     *name)
{
  gpointer value = NULL;
  gboolean found;

  g_mutex_lock (&set->lock);
  found = set->names != NULL && g_hash_table_lookup_extended (set->names, name, NULL, &value);
  if (found)
    g_hash_table_remove (set->names, name);
  g_mutex_unlock (&set->lock);
  if (found)
    g_bus_unwatch_name (GPOINTER_TO_UINT (value));
}

/* Returns: (transfer full): a copy of the names, for sending to each. */
GPtrArray *
_perfmon_name_set_dup_names (PerfmonNameSet *set)
{
  GPtrArray *names = g_ptr_array_new_with_free_func (g_free);
  GHashTableIter iter;
  gpointer key;

  g_mutex_lock (&set->lock);
  g_hash_table_iter_init (&iter, set->names);
  while (g_hash_table_iter_next (&iter, &key, NULL))
    g_ptr_array_add (names, g_strdup (key));
  g_mutex_unlock (&set->lock);
  return names;
}

void
_perfmon_name_set_free (PerfmonNameSet *set)
{
  g_autoptr(GHashTable) names = NULL;
  GHashTableIter iter;
  gpointer value;

  if (set == NULL)
    return;
  g_mutex_lock (&set->lock);
  names = g_steal_pointer (&set->names);
  g_mutex_unlock (&set->lock);
  g_hash_table_iter_init (&iter, names);
  while (g_hash_table_iter_next (&iter, NULL, &value))
    g_bus_unwatch_name (GPOINTER_TO_UINT (value));
  name_set_unref (set);
}
