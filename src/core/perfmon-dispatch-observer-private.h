/* perfmon-dispatch-observer-private.h: observing the automatic per-dispatch hook
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * core/ sees every GSource dispatch on a monitored context (and, where the
 * mechanism allows, every attach). Other parts of the library, such as the
 * task tracer in tasks/, observe those events through one observer table, so
 * that core/ knows nothing of them (data flows one way, see DESIGN.md).
 *
 * When each is called (core/perfmon-automatic.c): @dispatch_begin and
 * @dispatch_end around every dispatch of a source of a patched kind on a
 * context whose monitor has automatic groups on (GLib's own kinds always;
 * other kinds once perfmon_automatic_track_source() saw one). A context
 * iterated by a thread other than its monitor's is observed but not
 * measured; then @name is the source's type. @attached when the mechanism
 * sees a creation or an attach, just before the attach (so that no dispatch
 * on another thread comes first): under `perfmon run`, every
 * g_source_attach() from outside libglib and every g_idle_add*(),
 * g_timeout_add*() and g_timeout_add_seconds*(); in any program, each
 * source given to perfmon_automatic_track_source(). Attaches made
 * inside libglib otherwise (g_main_context_invoke(), g_child_watch_add(),
 * g_idle_add_once(), ...) and, without `perfmon run`, all of GLib's
 * convenience adders are not seen: their sources get dispatch events
 * without an @attached first.
 *
 * Threads: @attached runs on the thread that attaches the source (any
 * thread); @dispatch_begin and @dispatch_end run on the thread that
 * dispatches, properly nested (a nested main loop inside a dispatch begins
 * and ends its own dispatches in between). None of them runs in a signal
 * handler. The hook reads the observer with one atomic load per event and
 * calls nothing when there is none.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct
{
  /* The source was attached to a context; @source is alive. May be NULL. */
  void     (*attached)       (GSource    *source);
  /* A dispatch of @source begins; @name is its best available name (never
   * NULL, bounded). The same pointer names the same text until
   * _perfmon_dispatch_names_generation moves: core moves it whenever it
   * frees or changes a name it may have given. Returns a token handed back
   * to @dispatch_end. */
  gpointer (*dispatch_begin) (GSource    *source,
                              const char *name);
  /* The dispatch that returned @token ended. */
  void     (*dispatch_end)   (GSource    *source,
                              gpointer    token);
} PerfmonDispatchObserver;

/* Installs @observer (static storage: it is read without a lock after it
 * is replaced), or removes it with NULL. At most one observer. */
void                           _perfmon_dispatch_set_observer (const PerfmonDispatchObserver *observer);
const PerfmonDispatchObserver *_perfmon_dispatch_get_observer (void);

/* Moved (atomically) by core whenever a name it may have given
 * @dispatch_begin is freed or changed: an observer that keeps something by
 * the name's pointer checks the text again when it moved. */
extern guint _perfmon_dispatch_names_generation;

static inline void
_perfmon_dispatch_names_changed (void)
{
  __atomic_fetch_add (&_perfmon_dispatch_names_generation, 1, __ATOMIC_RELEASE);
}

/* The same, inline, for the hook's hot path. */
extern const PerfmonDispatchObserver *_perfmon_dispatch_observer;

static inline const PerfmonDispatchObserver *
_perfmon_dispatch_peek_observer (void)
{
  return __atomic_load_n (&_perfmon_dispatch_observer, __ATOMIC_ACQUIRE);
}

G_END_DECLS
