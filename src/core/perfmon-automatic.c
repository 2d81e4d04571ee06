/* perfmon-automatic.c: the per-dispatch hook and the automatic groups
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * GLib 2.74 has no per-dispatch hook. What it does have: g_main_dispatch()
 * reads `source->source_funcs->dispatch` again at every dispatch, and the
 * GSourceFuncs of GLib's own source kinds are exported, writable variables
 * (g_idle_funcs, g_timeout_funcs, g_child_watch_funcs, g_unix_signal_funcs,
 * g_unix_fd_source_funcs, g_io_watch_funcs, all in libglib's .data).
 *
 * The mechanism: the `dispatch` member of a GSourceFuncs is replaced, in
 * place, by automatic_dispatch(), which looks the original up in a table
 * keyed by the GSourceFuncs address, measures it, and calls it. In place,
 * not by giving sources a copy of their funcs: `source->source_funcs` keeps
 * its identity, so g_idle_remove_by_data(),
 * g_source_remove_by_funcs_user_data(), g_main_context_find_source_by_funcs_user_data()
 * and any `source->source_funcs == &g_idle_funcs` test still work.
 *
 * Which GSourceFuncs are patched:
 * - GLib's six exported ones, when automatic groups are first turned on.
 *   Every source GLib makes internally (g_idle_add, g_timeout_add,
 *   g_main_context_invoke, g_child_watch_add, GTK's frame clock idles and
 *   timeouts, ...) is of one of these kinds. Interposing g_source_attach()
 *   would not see those: libglib calls itself directly, not through its
 *   PLT (checked with objdump on Debian 12's libglib-2.0.so.0).
 * - any other one that perfmon_automatic_track_source() is given: `perfmon
 *   run` interposes g_source_new() and g_source_attach() for calls from
 *   outside libglib (GIO's socket and cancellable sources, GDK's event
 *   sources, a program's own kinds all come from there).
 * A GSourceFuncs is patched only if it lies in a writable, non-RELRO
 * segment of a loaded ELF object (dl_iterate_phdr): never one on the heap
 * or the stack (its address could be reused for another kind) nor a const
 * one. Those are not measured. The table holds 512 kinds; past that, new
 * kinds are not measured.
 *
 * The patches are process-wide and permanent; the library is linked with
 * -z nodelete so that automatic_dispatch() stays mapped. A dispatch on a
 * context without a monitor, or whose monitor has automatic groups off,
 * costs the table lookup and a thread-local cache check.
 *
 * Per dispatch on a monitored context (its monitor's thread): the source's
 * automatic group is found in a small per-monitor cache keyed by (source,
 * id, name pointer); on a miss, its best name is worked out (the source's
 * name unless it is one GLib gives by default, else its callback's symbol
 * from dladdr(), else the type) and the
 * group looked up by name, made if new, or the overflow group past
 * max-automatic-groups. The dispatch is a measure of that group (enter /
 * leave, as explicit compartments, which nest inside), the dispatch
 * observer (perfmon-dispatch-observer-private.h) is called around it, and a
 * dispatch of a millisecond or more is noted in the busy stretch's list of
 * longest dispatches for the hang monitor. No lock, no system call, no
 * allocation, except on a cache miss (a new source or a renamed one: a hash
 * lookup, dladdr() the first time a callback is seen, and a new group the
 * first time a name is).
 */
#define _GNU_SOURCE  /* dladdr(), dl_iterate_phdr() */
#include "config.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "perfmon-addon-rules.h"
#include "perfmon-automatic-private.h"
#include "perfmon-clock-private.h"
#include "perfmon-dispatch-observer-private.h"
#include "perfmon-error.h"
#include "perfmon-utf8.h"

typedef PerfmonDispatchFunc DispatchFunc;

/* --- the patched kinds -------------------------------------------------- */

#define N_KINDS 512   /* a power of two */
#define KIND_NAME_SIZE 64

typedef struct
{
  GSourceFuncs        *funcs;      /* atomic; published last */
  DispatchFunc         dispatch;   /* the original */
  gpointer             prepare;    /* to recognise a copy; see find_kind() */
  gpointer             check;
  gpointer             finalize;
  char                 type_name[KIND_NAME_SIZE];
} Kind;

static Kind kinds[N_KINDS];
static guint n_kinds;
static GMutex kinds_lock;

static gboolean automatic_dispatch (GSource    *source,
                                    GSourceFunc callback,
                                    gpointer    user_data);

static inline guint
kind_hash (const GSourceFuncs *funcs)
{
  return (guint) ((((guint64) (guintptr) funcs >> 3) * G_GUINT64_CONSTANT (0x9E3779B97F4A7C15)) >> 55) &
         (N_KINDS - 1);
}

static inline const Kind *
lookup_kind (const GSourceFuncs *funcs)
{
  for (guint i = kind_hash (funcs), n = 0; n < N_KINDS; i = (i + 1) & (N_KINDS - 1), n++)
    {
      const GSourceFuncs *found = __atomic_load_n (&kinds[i].funcs, __ATOMIC_ACQUIRE);

      if (G_LIKELY (found == funcs))
        return &kinds[i];
      if (found == NULL)
        return NULL;
    }
  return NULL;
}

/* A GSourceFuncs we never patched whose dispatch is ours: a copy of a
 * patched one (made by value after we patched it). Its other members tell
 * which. Rare: only code that copies GSourceFuncs structures at run time. */
static G_GNUC_NO_INLINE const Kind *
find_copied_kind (const GSourceFuncs *funcs)
{
  for (guint i = 0; i < N_KINDS; i++)
    {
      const Kind *kind = &kinds[i];

      if (__atomic_load_n (&kind->funcs, __ATOMIC_ACQUIRE) != NULL &&
          kind->prepare == (gpointer) funcs->prepare &&
          kind->check == (gpointer) funcs->check &&
          kind->finalize == (gpointer) funcs->finalize)
        return kind;
    }
  return NULL;
}

typedef struct
{
  guintptr begin;
  guintptr end;
  gboolean writable;
  gboolean found;
} SegmentQuery;

static int
find_segment (struct dl_phdr_info *info,
              size_t               size,
              void                *data)
{
  SegmentQuery *query = data;
  gboolean in_writable_load = FALSE;
  gboolean in_object = FALSE;

  for (int i = 0; i < info->dlpi_phnum; i++)
    {
      const ElfW(Phdr) *phdr = &info->dlpi_phdr[i];
      guintptr start = info->dlpi_addr + phdr->p_vaddr;
      guintptr stop = start + phdr->p_memsz;

      if (phdr->p_type != PT_LOAD && phdr->p_type != PT_GNU_RELRO)
        continue;
      if (query->begin < start || query->end > stop)
        continue;
      in_object = TRUE;
      if (phdr->p_type == PT_GNU_RELRO)
        return (query->found = TRUE);          /* read-only after relocation */
      if (phdr->p_flags & PF_W)
        in_writable_load = TRUE;
    }
  if (!in_object)
    return 0;
  query->found = TRUE;
  query->writable = in_writable_load;
  return 1;
}

/* Whether @funcs lies in a writable, non-RELRO segment of a loaded object. */
static gboolean
funcs_are_patchable (GSourceFuncs *funcs)
{
  SegmentQuery query = { (guintptr) funcs, (guintptr) (funcs + 1), FALSE, FALSE };

  dl_iterate_phdr (find_segment, &query);
  return query.found && query.writable;
}

/* Names @address: its dynamic symbol if it is exactly one (returns TRUE),
 * else "module+0xoffset" (FALSE), else "" (FALSE). */
static gboolean
describe_address (gconstpointer address,
                  char         *out,
                  gsize         size)
{
  Dl_info info;
  const char *slash;
  const char *module;

  *out = '\0';
  if (dladdr (address, &info) == 0 || info.dli_fname == NULL || info.dli_fbase == NULL)
    return FALSE;
  if (info.dli_sname != NULL && info.dli_saddr == address)
    {
      g_strlcpy (out, info.dli_sname, size);
      return TRUE;
    }
  slash = strrchr (info.dli_fname, '/');
  module = slash != NULL ? slash + 1 : info.dli_fname;
  g_snprintf (out, size, "%s+0x%" G_GINTPTR_MODIFIER "x", *module != '\0' ? module : "program",
              (guintptr) address - (guintptr) info.dli_fbase);
  return FALSE;
}

/* Patches @funcs, naming its type @type_name (or after its symbol). Returns
 * FALSE if it cannot be. Called when a kind is first seen, not per
 * dispatch. The dynamic linker's lock (dladdr(), dl_iterate_phdr()) is
 * never taken under kinds_lock: a library constructor that makes a source
 * runs under the former and would take the latter. */
static gboolean
patch_kind (GSourceFuncs *funcs,
            const char   *type_name)
{
  gboolean done = FALSE;
  DispatchFunc dispatch = (DispatchFunc) g_atomic_pointer_get (&funcs->dispatch);
  char name[KIND_NAME_SIZE];

  if (lookup_kind (funcs) != NULL)
    return TRUE;
  if (dispatch == NULL || dispatch == automatic_dispatch)
    return FALSE;   /* nothing to wrap, or a copy of a patched kind */
  if (!funcs_are_patchable (funcs))
    return FALSE;

  if (type_name != NULL)
    g_strlcpy (name, type_name, sizeof name);
  else if (!describe_address (funcs, name, sizeof name))
    {
      char where[KIND_NAME_SIZE];

      /* A static GSourceFuncs has no dynamic symbol: its dispatch
       * function may have one. */
      if (!describe_address ((gconstpointer) dispatch, name, sizeof name))
        {
          g_strlcpy (where, name, sizeof where);
          g_snprintf (name, sizeof name, "GSource (%s)", where);
        }
    }

  g_mutex_lock (&kinds_lock);
  if (lookup_kind (funcs) != NULL)
    done = TRUE;    /* another thread was first */
  else if (n_kinds < N_KINDS * 3 / 4 &&
           g_atomic_pointer_get (&funcs->dispatch) == (gpointer) dispatch)
    {
      guint i = kind_hash (funcs);
      Kind *kind;

      while (kinds[i].funcs != NULL)
        i = (i + 1) & (N_KINDS - 1);
      kind = &kinds[i];
      kind->dispatch = dispatch;
      kind->prepare = (gpointer) funcs->prepare;
      kind->check = (gpointer) funcs->check;
      kind->finalize = (gpointer) funcs->finalize;
      g_strlcpy (kind->type_name, name, sizeof kind->type_name);
      n_kinds++;
      g_atomic_pointer_set (&kind->funcs, funcs);
      /* Another thread may dispatch a source of this kind right now: it
       * reads either pointer, and both work. */
      __atomic_store_n (&funcs->dispatch, automatic_dispatch, __ATOMIC_RELEASE);
      done = TRUE;
    }
  g_mutex_unlock (&kinds_lock);

  return done;
}

static void
patch_glib_kinds (void)
{
  static gsize done;

  if (g_once_init_enter (&done))
    {
      patch_kind (&g_idle_funcs, "GIdleSource");
      patch_kind (&g_timeout_funcs, "GTimeoutSource");
      patch_kind (&g_child_watch_funcs, "GChildWatchSource");
      patch_kind (&g_unix_signal_funcs, "GUnixSignalSource");
      patch_kind (&g_unix_fd_source_funcs, "GUnixFDSource");
      patch_kind (&g_io_watch_funcs, "GIOWatch");
      g_once_init_leave (&done, 1);
    }
}

/**
 * perfmon_automatic_track_source:
 * @source: a #GSource, attached or not
 *
 * Lets perfmon's automatic instrumentation see @source: its kind (its
 * #GSourceFuncs) is measured from its next dispatch on a context whose
 * monitor has [property@Perfmon.Monitor:automatic-groups] on, and the
 * dispatch observers (the task tracer) learn that the calling thread created
 * or attached it. Call it just before g_source_attach(), so that no dispatch
 * on another thread can come first.
 *
 * Sources of GLib's own kinds (idle, timeout, child watch, Unix signal and
 * fd, I/O watch) are measured without it. `perfmon run` calls it for every
 * source created or attached outside GLib; an embedder calls it for
 * sources of its own kinds. A kind whose #GSourceFuncs is not in a
 * writable segment of a loaded object (const, or on the heap) cannot be
 * measured. Any thread.
 *
 * Since: 0.2
 */
void
perfmon_automatic_track_source (GSource *source)
{
  const PerfmonDispatchObserver *observer;

  g_return_if_fail (source != NULL);

  if (source->source_funcs != NULL && lookup_kind (source->source_funcs) == NULL)
    patch_kind ((GSourceFuncs *) source->source_funcs, NULL);  /* checked writable */

  observer = _perfmon_dispatch_get_observer ();
  if (observer != NULL && observer->attached != NULL)
    observer->attached (source);
}

/* --- the automatic groups of a monitor ---------------------------------- */

#define N_CACHED 64   /* a power of two */
#define MAX_CACHED_SYMBOLS 4096

typedef struct
{
  GSource            *source;
  guint               id;
  const char         *name;       /* the source's, as cached */
  PerfmonGroupRecord *record;
} Cached;

struct _PerfmonAutomatic
{
  PerfmonMonitor     *monitor;     /* not a reference */
  gint                on;          /* atomic gboolean */
  guint               max_groups;
  GHashTable         *groups;      /* name (the record's) → record, held */
  PerfmonGroupRecord *overflow;    /* held, or NULL */
  GHashTable         *symbols;     /* callback address → Callback */
  Cached              cache[N_CACHED];
};

PerfmonAutomatic *
_perfmon_automatic_new (PerfmonMonitor *monitor)
{
  PerfmonAutomatic *self = g_new0 (PerfmonAutomatic, 1);

  self->monitor = monitor;
  self->max_groups = PERFMON_AUTOMATIC_DEFAULT_MAX_GROUPS;
  return self;
}

void
_perfmon_automatic_free (PerfmonAutomatic *self)
{
  if (self->groups != NULL)
    {
      GHashTableIter iter;
      gpointer record;

      g_hash_table_iter_init (&iter, self->groups);
      while (g_hash_table_iter_next (&iter, NULL, &record))
        _perfmon_group_record_release (record);
      g_hash_table_unref (self->groups);
    }
  if (self->overflow != NULL)
    _perfmon_group_record_release (self->overflow);
  g_clear_pointer (&self->symbols, g_hash_table_unref);
  g_free (self);
}

gboolean
_perfmon_automatic_get_on (PerfmonAutomatic *self)
{
  return g_atomic_int_get (&self->on);
}

void
_perfmon_automatic_set_on (PerfmonAutomatic *self,
                           gboolean          on)
{
  if (on)
    patch_glib_kinds ();
  g_atomic_int_set (&self->on, on);
  /* The hook's per-thread caches keep whether it is on: they look again. */
  g_atomic_int_inc (&_perfmon_monitor_context_epoch);
}

guint
_perfmon_automatic_get_max_groups (PerfmonAutomatic *self)
{
  return self->max_groups;
}

void
_perfmon_automatic_set_max_groups (PerfmonAutomatic *self,
                                   guint             max_groups)
{
  self->max_groups = max_groups;
}

/* @text cut to a group name: valid UTF-8, at most
 * PERFMON_AUTOMATIC_NAME_MAX bytes. */
static char *
group_name (const char *text)
{
  gsize length = strlen (text);
  g_autofree char *valid = g_utf8_make_valid (text, MIN (length, PERFMON_AUTOMATIC_NAME_MAX * 2));

  valid[_perfmon_utf8_cut (valid, strlen (valid), PERFMON_AUTOMATIC_NAME_MAX)] = '\0';
  return g_steal_pointer (&valid);
}

/* What perfmon knows of a callback, from dladdr(). */
typedef struct
{
  char *symbol;       /* its dynamic symbol, or NULL */
  char *where;        /* without a symbol: "module+0xoffset", or "" */
  char *addon_id;     /* the add-on whose module it lies in, or NULL */
  char *addon_name;
} Callback;

static void
callback_free (gpointer data)
{
  Callback *callback = data;

  g_free (callback->symbol);
  g_free (callback->where);
  g_free (callback->addon_id);
  g_free (callback->addon_name);
  g_free (callback);
}

/* Describes @address. A module that an add-on rule matches (a libpeas C
 * plugin's libNAME.so: see perfmon_addon_rule_add_builtin()) makes the
 * callback the add-on's, and is named by its path in the add-on:
 * "symbol (NAME/libNAME.so)", or "NAME/libNAME.so+0xoffset" for a static
 * function, so that two plugins' callbacks never share a group. */
static Callback *
describe_callback (gconstpointer address)
{
  Callback *callback = g_new0 (Callback, 1);
  char text[KIND_NAME_SIZE * 2];
  Dl_info info;
  g_autofree char *inside = NULL;

  if (describe_address (address, text, sizeof text))
    callback->symbol = g_strdup (text);
  else
    callback->where = g_strdup (text);
  if (dladdr (address, &info) != 0 && info.dli_fname != NULL && info.dli_fname[0] == '/' &&
      info.dli_fbase != NULL &&
      perfmon_addon_rule_match (info.dli_fname, &callback->addon_id, &callback->addon_name, &inside))
    {
      if (callback->symbol != NULL)
        {
          char *symbol = g_strdup_printf ("%s (%s)", callback->symbol, inside);

          g_free (callback->symbol);
          callback->symbol = symbol;
        }
      else
        {
          g_free (callback->where);
          callback->where = g_strdup_printf ("%s+0x%" G_GINTPTR_MODIFIER "x", inside,
                                             (guintptr) address - (guintptr) info.dli_fbase);
        }
    }
  if (callback->where == NULL)
    callback->where = g_strdup ("");
  return callback;
}

/* The callback's description, or NULL past the limit (new callbacks then
 * go by their type). Cached: dladdr() takes a lock and walks the objects,
 * matching takes the rules' lock. */
static const Callback *
find_callback (PerfmonAutomatic *self,
               gpointer          address)
{
  Callback *callback;

  if (self->symbols == NULL)
    self->symbols = g_hash_table_new_full (NULL, NULL, NULL, callback_free);
  callback = g_hash_table_lookup (self->symbols, address);
  if (callback == NULL)
    {
      if (g_hash_table_size (self->symbols) >= MAX_CACHED_SYMBOLS)
        return NULL;
      callback = describe_callback (address);
      g_hash_table_insert (self->symbols, address, callback);
    }
  return callback;
}

/* Makes @record, an automatic group of a callback in an add-on's module,
 * belong to the add-on (the first time: unless something assigned it
 * already). */
static void
assign_to_addon (PerfmonAutomatic   *self,
                 PerfmonGroupRecord *record,
                 const Callback     *callback)
{
  PerfmonGroup *addon;

  if (callback == NULL || callback->addon_id == NULL || record == self->overflow ||
      PERFMON_RECORD_ADDON (record) != NULL || PERFMON_RECORD_WINDOW (record) != NULL)
    return;
  /* Made with its name first: the record's parent keeps it alive. */
  addon = perfmon_monitor_get_addon_group (self->monitor, callback->addon_id, callback->addon_name);
  _perfmon_monitor_set_record_parents (self->monitor, record, 0, callback->addon_id);
  g_object_unref (addon);
}

/* The group of @name: the existing one, a new one, or the overflow group
 * when there are max_groups already. Monitor's thread. */
static PerfmonGroupRecord *
group_for_name (PerfmonAutomatic *self,
                const char       *name,
                gboolean          counted)
{
  PerfmonGroupRecord *record;

  if (self->groups == NULL)
    self->groups = g_hash_table_new (g_str_hash, g_str_equal);

  record = g_hash_table_lookup (self->groups, name);
  if (record != NULL)
    return record;

  if (counted && g_hash_table_size (self->groups) >= self->max_groups)
    {
      if (self->overflow == NULL)
        self->overflow = _perfmon_monitor_new_automatic_record (self->monitor,
                                                                PERFMON_AUTOMATIC_OVERFLOW_NAME);
      return self->overflow;
    }

  record = _perfmon_monitor_new_automatic_record (self->monitor, name);
  g_hash_table_insert (self->groups, record->name, record);
  return record;
}

PerfmonGroupRecord *
_perfmon_automatic_special_group (PerfmonAutomatic *self,
                                  const char       *name)
{
  return group_for_name (self, name, FALSE);
}

/* GLib names some sources after their type when the caller gives no name
 * (g_idle_source_new() "GIdleSource", g_unix_signal_source_new()
 * "GUnixSignalSource: SIGUSR1", ...): a callback's symbol says
 * more. */
static gboolean
is_default_name (const char *name)
{
  static const char * const defaults[] = {
    "GIdleSource", "GTimeoutSource", "GChildWatchSource", "GUnixSignalSource",
    "GUnixFDSource", "GPollableSource", "GIOChannel (Unix)", "GSocket", "GCancellable",
  };

  if (name == NULL || g_str_has_prefix (name, "GUnixSignalSource: "))
    return TRUE;
  for (guint i = 0; i < G_N_ELEMENTS (defaults); i++)
    if (g_str_equal (name, defaults[i]))
      return TRUE;
  return FALSE;
}

/* The cache missed: work out @source's best name and its group. */
static G_GNUC_NO_INLINE PerfmonGroupRecord *
find_group (PerfmonAutomatic *self,
            Cached           *cached,
            GSource          *source,
            GSourceFunc       callback,
            const Kind       *kind)
{
  const char *source_name = g_source_get_name (source);
  const char *name = is_default_name (source_name) ? NULL : source_name;
  g_autofree char *cut = NULL;
  PerfmonGroupRecord *record;
  const Callback *described = NULL;
  const char *where = "";
  g_autofree char *located = NULL;

  /* Named by its callback: its symbol, else the type and where it is. */
  if (name == NULL && callback != NULL && (described = find_callback (self, (gpointer) callback)) != NULL)
    {
      name = described->symbol;
      where = described->where;
    }
  if (name == NULL)
    {
      name = source_name != NULL ? source_name : kind->type_name;
      /* Callbacks without a symbol (static functions, programs built
       * without -rdynamic) still get a group each. */
      if (*where != '\0')
        name = located = g_strdup_printf ("%s (%s)", name, where);
    }

  cut = group_name (name);
  record = group_for_name (self, cut, TRUE);
  assign_to_addon (self, record, described);

  cached->source = source;
  cached->id = source->source_id;
  cached->name = source->name;
  cached->record = record;
  return record;
}

__thread const char *_perfmon_current_dispatch_name __attribute__ ((tls_model ("initial-exec")));

/* The calling thread's last answer of _perfmon_monitor_find_for_context(),
 * with what the hook needs of that monitor, and the last kind it looked
 * up. */
typedef struct
{
  GMainContext       *context;
  guint               epoch;
  gboolean            valid;
  /* The context's monitor's automatic groups if they are on and this
   * thread is the monitor's: what the hook measures; else NULL. */
  PerfmonAutomatic   *measuring;
  PerfmonMonitor     *monitor;
  PerfmonAutomatic   *automatic;
  gboolean            owned;      /* the monitor's thread is this one */
  const GSourceFuncs *last_funcs;
  const Kind         *last_kind;
} ThreadCache;

static __thread ThreadCache thread_cache __attribute__ ((tls_model ("initial-exec")));

static G_GNUC_NO_INLINE ThreadCache *
find_monitor (GMainContext *context)
{
  ThreadCache *cache = &thread_cache;

  cache->epoch = _perfmon_monitor_get_context_epoch ();
  cache->context = context;
  cache->monitor = _perfmon_monitor_find_for_context (context);
  cache->automatic = cache->monitor != NULL ? _perfmon_monitor_get_automatic (cache->monitor) : NULL;
  /* A monitor's thread never changes once claimed; one not claimed yet
   * is claimed by the thread that dispatches its context's sources. */
  cache->owned = cache->monitor != NULL && _perfmon_monitor_claim_thread (cache->monitor);
  /* _perfmon_automatic_set_on() moves the epoch too. */
  cache->measuring = cache->owned && g_atomic_int_get (&cache->automatic->on) ? cache->automatic : NULL;
  cache->valid = TRUE;
  return cache;
}

static inline ThreadCache *
thread_cache_for (GMainContext *context)
{
  ThreadCache *cache = &thread_cache;

  if (G_LIKELY (cache->valid && cache->context == context &&
                cache->epoch == (guint) g_atomic_int_get (&_perfmon_monitor_context_epoch)))
    return cache;
  return find_monitor (context);
}

static inline const Kind *
lookup_kind_cached (ThreadCache        *cache,
                    const GSourceFuncs *funcs)
{
  if (G_LIKELY (cache->last_funcs == funcs))
    return cache->last_kind;
  cache->last_kind = lookup_kind (funcs);
  cache->last_funcs = cache->last_kind != NULL ? funcs : NULL;
  return cache->last_kind;
}

static G_GNUC_NO_INLINE gboolean
dispatch_unknown_copy (GSource    *source,
                       GSourceFunc callback,
                       gpointer    user_data)
{
  const Kind *kind = find_copied_kind (source->source_funcs);
  static gsize warned;

  if (kind != NULL)
    return kind->dispatch (source, callback, user_data);

  if (g_once_init_enter (&warned))
    {
      g_warning ("perfmon: a GSource's GSourceFuncs is a copy of one perfmon patched, and of no "
                 "kind it knows; the source is removed");
      g_once_init_leave (&warned, 1);
    }
  return G_SOURCE_REMOVE;
}

/* The context is iterated by a thread other than the monitor's: not
 * measured (the monitor warns once), but still observed. */
static G_GNUC_NO_INLINE gboolean
dispatch_unmeasured (const Kind *kind,
                     GSource    *source,
                     GSourceFunc callback,
                     gpointer    user_data)
{
  const PerfmonDispatchObserver *observer = _perfmon_dispatch_get_observer ();
  gpointer token;
  gboolean again;

  if (observer == NULL)
    return kind->dispatch (source, callback, user_data);
  token = observer->dispatch_begin (source, kind->type_name);
  again = kind->dispatch (source, callback, user_data);
  observer->dispatch_end (source, token);
  return again;
}

/* What the hook does with a dispatch it does not measure: a copy of a
 * patched kind, a context without a monitor or whose monitor has
 * automatic groups off, or iterated by a thread other than its
 * monitor's. */
static G_GNUC_NO_INLINE gboolean
dispatch_other (ThreadCache *cache,
                const Kind  *kind,
                GSource     *source,
                GSourceFunc  callback,
                gpointer     user_data)
{
  if (kind == NULL)
    return dispatch_unknown_copy (source, callback, user_data);
  if (cache->automatic == NULL || !g_atomic_int_get (&cache->automatic->on))
    return kind->dispatch (source, callback, user_data);
  return dispatch_unmeasured (kind, source, callback, user_data);
}

/* The hook, every way: see automatic_dispatch() for the common one. */
static G_GNUC_NO_INLINE gboolean
automatic_dispatch_slowly (GSource    *source,
                           GSourceFunc callback,
                           gpointer    user_data)
{
  ThreadCache *cache = thread_cache_for (source->context);
  const Kind *kind = lookup_kind_cached (cache, source->source_funcs);
  PerfmonAutomatic *self = cache->measuring;
  Cached *cached;
  PerfmonGroupRecord *record;

  if (kind == NULL || self == NULL)
    return dispatch_other (cache, kind, source, callback, user_data);

  cached = &self->cache[((guintptr) source >> 4) & (N_CACHED - 1)];
  if (cached->source == source && cached->id == source->source_id && cached->name == source->name)
    record = cached->record;
  else
    record = find_group (self, cached, source, callback, kind);
  return _perfmon_monitor_dispatch_in_group (self->monitor, record, kind->dispatch, source, callback,
                                             user_data);
}

/* The common case: the thread's cache holds the context's monitor, which
 * it measures, and the kind of the last source dispatched, and the
 * monitor's cache the source's group. Nothing but tail calls, so no
 * frame of its own. */
static __attribute__ ((hot)) gboolean
automatic_dispatch (GSource    *source,
                    GSourceFunc callback,
                    gpointer    user_data)
{
  ThreadCache *cache = &thread_cache;
  const Cached *cached;

  if (G_LIKELY (cache->context == source->context && cache->last_funcs == source->source_funcs &&
                cache->epoch == (guint) g_atomic_int_get (&_perfmon_monitor_context_epoch) &&
                cache->measuring != NULL))
    {
      cached = &cache->measuring->cache[((guintptr) source >> 4) & (N_CACHED - 1)];
      if (G_LIKELY (cached->source == source && cached->id == source->source_id &&
                    cached->name == source->name))
        return _perfmon_monitor_dispatch_in_group (cache->monitor, cached->record, cache->last_kind->dispatch,
                                                   source, callback, user_data);
    }
  return automatic_dispatch_slowly (source, callback, user_data);
}

/* --- naming and mapping, for the program -------------------------------- */

static gboolean
check_name (const char  *name,
            GError     **error)
{
  if (name == NULL || *name == '\0' || !g_utf8_validate (name, -1, NULL) ||
      strlen (name) > PERFMON_AUTOMATIC_NAME_MAX)
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
                   "“name” must be non-empty UTF-8 of at most %d bytes",
                   PERFMON_AUTOMATIC_NAME_MAX);
      return FALSE;
    }
  return TRUE;
}

/**
 * perfmon_monitor_get_automatic_group:
 * @self: a monitor
 * @name: the automatic group's name: a source's name, a callback's symbol
 *   or a source type, as snapshots show it
 *
 * Looks up an automatic group (see
 * [property@Perfmon.Monitor:automatic-groups]). It is a compartment of
 * the thread group, active, that lives as long as the monitor. Call it on
 * the monitor's thread.
 *
 * Returns: (transfer full) (nullable): the group, or %NULL if no dispatch
 *   of that name has been seen and none was assigned
 *
 * Since: 0.2
 */
PerfmonGroup *
perfmon_monitor_get_automatic_group (PerfmonMonitor *self,
                                     const char     *name)
{
  PerfmonAutomatic *automatic;
  PerfmonGroupRecord *record = NULL;

  g_return_val_if_fail (PERFMON_IS_MONITOR (self), NULL);
  g_return_val_if_fail (name != NULL, NULL);

  automatic = _perfmon_monitor_get_automatic (self);
  if (automatic->groups != NULL)
    record = g_hash_table_lookup (automatic->groups, name);
  if (record == NULL && automatic->overflow != NULL && g_str_equal (name, PERFMON_AUTOMATIC_OVERFLOW_NAME))
    record = automatic->overflow;
  if (record == NULL)
    return NULL;

  return _perfmon_monitor_group_for_compartment (self, record);
}

/**
 * perfmon_monitor_assign_automatic_group:
 * @self: a monitor
 * @name: the automatic group's name (UTF-8, at most 95 bytes)
 * @window_id: the window its dispatches run for, or 0
 * @addon_id: (nullable): the add-on they come from
 * @error: return location for a #GError
 *
 * Makes the automatic group @name belong to the group of @window_id (if
 * not 0) and of @addon_id (if given), instead of the ones it belonged to:
 * its dispatches are then charged to them too, as an explicit compartment
 * made with [method@Perfmon.Monitor.create_compartment] would be. Creates
 * the group if no such dispatch has been seen yet; it counts towards
 * [property@Perfmon.Monitor:max-automatic-groups]. Call it on the
 * monitor's thread.
 *
 * Returns: %TRUE, or %FALSE with @error set (%PERFMON_ERROR_INVALID_ARGUMENT
 *   for a bad name, %PERFMON_ERROR_LIMIT_REACHED when the monitor has
 *   max-automatic-groups already)
 *
 * Since: 0.2
 */
gboolean
perfmon_monitor_assign_automatic_group (PerfmonMonitor  *self,
                                        const char      *name,
                                        guint64          window_id,
                                        const char      *addon_id,
                                        GError         **error)
{
  PerfmonAutomatic *automatic;
  PerfmonGroupRecord *record;

  g_return_val_if_fail (PERFMON_IS_MONITOR (self), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!check_name (name, error))
    return FALSE;
  if (addon_id != NULL && !g_utf8_validate (addon_id, -1, NULL))
    {
      g_set_error_literal (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
                           "“addon_id” must be UTF-8");
      return FALSE;
    }
  if (!_perfmon_monitor_claim_thread (self))
    {
      g_set_error_literal (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
                           "perfmon_monitor_assign_automatic_group: called from a thread other "
                           "than the monitor's");
      return FALSE;
    }

  automatic = _perfmon_monitor_get_automatic (self);
  if ((automatic->groups == NULL || g_hash_table_lookup (automatic->groups, name) == NULL) &&
      automatic->groups != NULL && g_hash_table_size (automatic->groups) >= automatic->max_groups)
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_LIMIT_REACHED,
                   "the monitor has %u automatic groups already (max-automatic-groups)",
                   automatic->max_groups);
      return FALSE;
    }

  record = group_for_name (automatic, name, FALSE);
  _perfmon_monitor_set_record_parents (self, record, window_id, addon_id);
  return TRUE;
}

/* See perfmon-automatic-private.h. */
gboolean
_perfmon_automatic_is_default_name (const char *name)
{
  return is_default_name (name);
}
