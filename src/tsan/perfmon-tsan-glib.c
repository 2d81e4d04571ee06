/* perfmon-tsan-glib.c: make GLib's locks visible to ThreadSanitizer
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Built into libperfmon only when meson's b_sanitize contains "thread"
 * (build-aux/dev tsan); never in a normal build.
 *
 * Why. On Linux, GMutex, GRecMutex, GRWLock and GCond are atomics and
 * futex system calls inside libglib, which is not instrumented: TSan sees
 * neither the atomics nor the futexes, so every access that a GMutex
 * protects would look like a data race between the threads that take it.
 * Suppressing those reports would hide real races as well. Instead, this
 * file defines the lock functions that perfmon (and libgio, which calls
 * them through its PLT) use, and around the real ones (found with
 * dlsym (RTLD_NEXT)) tells TSan what they do with its mutex annotations
 * (sanitizer/tsan_interface.h): TSan then models them exactly like
 * pthread mutexes, with lock-order and double-unlock checks on top.
 * g_once_init_leave() and the GAsyncQueue calls get the release/acquire
 * pair their documentation promises.
 *
 * What stays invisible: locks that libglib takes inside itself (its calls
 * do not go through the PLT), for example inside GMainContext or
 * GThreadPool. They only order libglib's own, uninstrumented, accesses,
 * which TSan does not check anyway.
 */
#include "config.h"

#include <dlfcn.h>
#include <glib.h>
#include <sanitizer/tsan_interface.h>

#define EXPORT __attribute__ ((visibility ("default")))

/* In the TSan runtimes of gcc and clang, not in their headers. */
void __tsan_ignore_thread_begin (void);
void __tsan_ignore_thread_end (void);

/* real_<name>: GLib's <name>. Any thread may look it up first: the
 * cached pointer is an atomic (relaxed: dlsym gives every thread the same
 * value). */
#define REAL(ret, name, ...) \
  static ret (*cached_##name) (__VA_ARGS__); \
  ret (*real_##name) (__VA_ARGS__) = __atomic_load_n (&cached_##name, __ATOMIC_RELAXED); \
  if (G_UNLIKELY (real_##name == NULL)) \
    { \
      real_##name = (ret (*) (__VA_ARGS__)) dlsym (RTLD_NEXT, #name); \
      __atomic_store_n (&cached_##name, real_##name, __ATOMIC_RELAXED); \
    }

/* Each function is exported under GLib's name, so needs a prototype to
 * please -Wmissing-prototypes: glib.h gives them. */

EXPORT void
g_mutex_lock (GMutex *mutex)
{
  REAL (void, g_mutex_lock, GMutex *);
  __tsan_mutex_pre_lock (mutex, 0);
  real_g_mutex_lock (mutex);
  __tsan_mutex_post_lock (mutex, 0, 0);
}

EXPORT gboolean
g_mutex_trylock (GMutex *mutex)
{
  gboolean locked;

  REAL (gboolean, g_mutex_trylock, GMutex *);
  __tsan_mutex_pre_lock (mutex, __tsan_mutex_try_lock);
  locked = real_g_mutex_trylock (mutex);
  __tsan_mutex_post_lock (mutex, locked ? __tsan_mutex_try_lock : __tsan_mutex_try_lock_failed, 0);
  return locked;
}

EXPORT void
g_mutex_unlock (GMutex *mutex)
{
  REAL (void, g_mutex_unlock, GMutex *);
  __tsan_mutex_pre_unlock (mutex, 0);
  real_g_mutex_unlock (mutex);
  __tsan_mutex_post_unlock (mutex, 0);
}

EXPORT void
g_mutex_clear (GMutex *mutex)
{
  REAL (void, g_mutex_clear, GMutex *);
  __tsan_mutex_destroy (mutex, 0);
  real_g_mutex_clear (mutex);
}

EXPORT void
g_rec_mutex_lock (GRecMutex *mutex)
{
  REAL (void, g_rec_mutex_lock, GRecMutex *);
  __tsan_mutex_pre_lock (mutex, __tsan_mutex_write_reentrant);
  real_g_rec_mutex_lock (mutex);
  __tsan_mutex_post_lock (mutex, __tsan_mutex_write_reentrant, 0);
}

EXPORT void
g_rec_mutex_unlock (GRecMutex *mutex)
{
  REAL (void, g_rec_mutex_unlock, GRecMutex *);
  __tsan_mutex_pre_unlock (mutex, 0);
  real_g_rec_mutex_unlock (mutex);
  __tsan_mutex_post_unlock (mutex, 0);
}

EXPORT void
g_rw_lock_writer_lock (GRWLock *lock)
{
  REAL (void, g_rw_lock_writer_lock, GRWLock *);
  __tsan_mutex_pre_lock (lock, 0);
  real_g_rw_lock_writer_lock (lock);
  __tsan_mutex_post_lock (lock, 0, 0);
}

EXPORT void
g_rw_lock_writer_unlock (GRWLock *lock)
{
  REAL (void, g_rw_lock_writer_unlock, GRWLock *);
  __tsan_mutex_pre_unlock (lock, 0);
  real_g_rw_lock_writer_unlock (lock);
  __tsan_mutex_post_unlock (lock, 0);
}

EXPORT void
g_rw_lock_reader_lock (GRWLock *lock)
{
  REAL (void, g_rw_lock_reader_lock, GRWLock *);
  __tsan_mutex_pre_lock (lock, __tsan_mutex_read_lock);
  real_g_rw_lock_reader_lock (lock);
  __tsan_mutex_post_lock (lock, __tsan_mutex_read_lock, 0);
}

EXPORT void
g_rw_lock_reader_unlock (GRWLock *lock)
{
  REAL (void, g_rw_lock_reader_unlock, GRWLock *);
  __tsan_mutex_pre_unlock (lock, __tsan_mutex_read_lock);
  real_g_rw_lock_reader_unlock (lock);
  __tsan_mutex_post_unlock (lock, __tsan_mutex_read_lock);
}

/* g_cond_wait() unlocks @mutex, sleeps, and locks it again. */
EXPORT void
g_cond_wait (GCond  *cond,
             GMutex *mutex)
{
  REAL (void, g_cond_wait, GCond *, GMutex *);
  __tsan_mutex_pre_unlock (mutex, 0);
  __tsan_mutex_post_unlock (mutex, 0);
  real_g_cond_wait (cond, mutex);
  __tsan_mutex_pre_lock (mutex, 0);
  __tsan_mutex_post_lock (mutex, 0, 0);
}

EXPORT gboolean
g_cond_wait_until (GCond  *cond,
                   GMutex *mutex,
                   gint64  end_time)
{
  gboolean signalled;

  REAL (gboolean, g_cond_wait_until, GCond *, GMutex *, gint64);
  __tsan_mutex_pre_unlock (mutex, 0);
  __tsan_mutex_post_unlock (mutex, 0);
  signalled = real_g_cond_wait_until (cond, mutex, end_time);
  __tsan_mutex_pre_lock (mutex, 0);
  __tsan_mutex_post_lock (mutex, 0, 0);
  return signalled;
}

/* What the initializing thread did happens before what any thread does
 * after g_once_init_enter() returned FALSE for @location (the macro's fast
 * path is an instrumented atomic load of @location, which acquires what
 * this release stores). */
EXPORT void
(g_once_init_leave) (volatile void *location,
                     gsize          result)
{
  REAL (void, g_once_init_leave, volatile void *, gsize);
  __tsan_release ((void *) location);
  real_g_once_init_leave (location, result);
}

EXPORT gboolean
(g_once_init_enter) (volatile void *location)
{
  gboolean initialize;

  REAL (gboolean, g_once_init_enter, volatile void *);
  initialize = real_g_once_init_enter (location);
  if (!initialize)
    __tsan_acquire ((void *) location);
  return initialize;
}

/* A GAsyncQueue hands its items over under its own (internal) lock. */
EXPORT void
g_async_queue_push (GAsyncQueue *queue,
                    gpointer     data)
{
  REAL (void, g_async_queue_push, GAsyncQueue *, gpointer);
  __tsan_release (queue);
  __tsan_ignore_thread_begin ();
  real_g_async_queue_push (queue, data);
  __tsan_ignore_thread_end ();
}

EXPORT gpointer
g_async_queue_pop (GAsyncQueue *queue)
{
  gpointer data;

  REAL (gpointer, g_async_queue_pop, GAsyncQueue *);
  __tsan_ignore_thread_begin ();
  data = real_g_async_queue_pop (queue);
  __tsan_ignore_thread_end ();
  __tsan_acquire (queue);
  return data;
}

EXPORT gpointer
g_async_queue_try_pop (GAsyncQueue *queue)
{
  gpointer data;

  REAL (gpointer, g_async_queue_try_pop, GAsyncQueue *);
  __tsan_ignore_thread_begin ();
  data = real_g_async_queue_try_pop (queue);
  __tsan_ignore_thread_end ();
  if (data != NULL)
    __tsan_acquire (queue);
  return data;
}

EXPORT gpointer
g_async_queue_timeout_pop (GAsyncQueue *queue,
                           guint64      timeout)
{
  gpointer data;

  REAL (gpointer, g_async_queue_timeout_pop, GAsyncQueue *, guint64);
  __tsan_ignore_thread_begin ();
  data = real_g_async_queue_timeout_pop (queue, timeout);
  __tsan_ignore_thread_end ();
  if (data != NULL)
    __tsan_acquire (queue);
  return data;
}

/* A thread pool hands @data to a worker through its internal queue: what
 * the pusher did happens before the pool's function runs on @data.
 * perfmon's pool functions acquire @data (perfmon-tsan-private.h); GLib's
 * own (GTask's) cannot be wrapped without hiding them from
 * perfmon_thread_pool_push(), which recognises its pools by their
 * function. The queue's own nodes are GLib's business (see
 * build-aux/tsan.supp). */
EXPORT gboolean
g_thread_pool_push (GThreadPool  *pool,
                    gpointer      data,
                    GError      **error)
{
  gboolean pushed;

  REAL (gboolean, g_thread_pool_push, GThreadPool *, gpointer, GError **);
  __tsan_release (data);
  __tsan_ignore_thread_begin ();
  pushed = real_g_thread_pool_push (pool, data, error);
  __tsan_ignore_thread_end ();
  return pushed;
}

/* A GMainContext or a GBytes is freed by whichever thread drops the last
 * reference, as GLib counts them, atomically, in code TSan does not see:
 * each unref releases, and acquires what the others released, so that the
 * last one happens after every other thread's use, as with any reference
 * count. (Two threads that each drop a reference are ordered too: a race
 * between them on the object itself would be hidden.) */
EXPORT void
g_main_context_unref (GMainContext *context)
{
  REAL (void, g_main_context_unref, GMainContext *);
  __tsan_release (context);
  __tsan_acquire (context);
  real_g_main_context_unref (context);
}

EXPORT void
g_bytes_unref (GBytes *bytes)
{
  REAL (void, g_bytes_unref, GBytes *);
  if (bytes != NULL)
    {
      __tsan_release (bytes);
      __tsan_acquire (bytes);
    }
  real_g_bytes_unref (bytes);
}
