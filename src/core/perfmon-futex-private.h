/* perfmon-futex-private.h: an event count on a futex word, for a thread
 * that sleeps until another wakes it (Linux)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The sleeper reads the word, then looks at what it waits for, then
 * sleeps while the word still holds what it read; the waker changes what
 * the sleeper looks at, bumps the word, then wakes the futex. A wake-up
 * after the read cannot be slept through, and neither side takes a lock:
 * the waker may be a signal handler (futex(2) is async-signal-safe) or a
 * watched thread that must not wait for its watchdog.
 */
#pragma once

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <glib.h>

G_BEGIN_DECLS

/* The waker's side: bumps @word (with release and acquire order, for
 * what was written before) and wakes @n_sleepers of those sleeping on it
 * (G_MAXINT: all). One system call. Async-signal-safe. */
static inline void
_perfmon_futex_bump_and_wake (guint *word,
                              int    n_sleepers)
{
  __atomic_add_fetch (word, 1, __ATOMIC_SEQ_CST);
  syscall (SYS_futex, word, FUTEX_WAKE_PRIVATE, n_sleepers, NULL, NULL, 0);
}

/* The sleeper's side: the word, read before it looks. */
static inline guint
_perfmon_futex_read (guint *word)
{
  return __atomic_load_n (word, __ATOMIC_SEQ_CST);
}

/* Sleeps while @word holds @seen, until @until_us (CLOCK_MONOTONIC µs,
 * g_get_monotonic_time()'s clock; G_MAXINT64: no deadline). FALSE if the
 * deadline passed; TRUE if woken, if the word had moved already, on a
 * signal, or spuriously: look again. errno is kept. */
static inline gboolean
_perfmon_futex_wait_until (guint *word,
                           guint  seen,
                           gint64 until_us)
{
  struct timespec deadline;
  int saved_errno = errno;
  gboolean timed_out;

  if (until_us != G_MAXINT64)
    {
      if (until_us <= g_get_monotonic_time ())
        return FALSE;
      deadline.tv_sec = until_us / G_USEC_PER_SEC;
      deadline.tv_nsec = (until_us % G_USEC_PER_SEC) * 1000;
    }
  /* FUTEX_WAIT_BITSET: an absolute deadline on CLOCK_MONOTONIC. */
  timed_out = syscall (SYS_futex, word, FUTEX_WAIT_BITSET_PRIVATE, seen,
                       until_us != G_MAXINT64 ? &deadline : NULL, NULL, FUTEX_BITSET_MATCH_ANY) < 0 &&
              errno == ETIMEDOUT;
  errno = saved_errno;
  return !timed_out;
}

G_END_DECLS
