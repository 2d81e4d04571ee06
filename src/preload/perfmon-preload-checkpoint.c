/* perfmon-preload-checkpoint.c: the checkpoints of "perfmon run", written
 * off the watched thread
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A preloaded process leaves its figures in "<pid>.json" of the run's
 * private directory (see perfmon-preload.c). What may only be done on the
 * watched thread is done there, and nothing else: a snapshot of the
 * monitor and references to the hangs, taken in microseconds (the "take"
 * function). Serialising them and writing the file is the writer thread's
 * work ("perfmon-ckpt"); the file is replaced atomically (a temporary file
 * exchanged with it, see replace_file()) but never fsynced: it lives in a
 * private directory that dies with the run, and "perfmon run" reads it
 * after the process is gone, from the page cache.
 *
 * A second after a checkpoint the writer thread looks how much CPU the
 * watched thread used since (its CPU clock, read from this thread), and
 * asks for a new checkpoint only when that is worth it: when the
 * thread used at least 400 times what the last checkpoint cost (the
 * snapshot on the watched thread, the serialisation and the write here,
 * each measured by its thread's CPU clock), so that checkpoints cost at
 * most 0.25 % of the program's work; or, if it used anything at all (50 µs:
 * the rest of the checkpoint's own iteration is no news), when the last
 * one is a minute old. When it finds none worth it, it looks again twice as
 * late, up to 8 s (a wake-up costs some 50 µs of CPU on a VM, 1 % of an
 * idle desktop shell's), or sooner, when the thread's rate of work since
 * the last look says a checkpoint is due (at least 125 ms on). A program
 * that keeps a CPU busy so leaves figures a second old (8 s at worst just
 * after it idled), and one busy 30 % of the time too, as long as a
 * checkpoint costs under 0.75 ms (0.6-0.7 ms for a small program on the
 * project's VMs: tests/bench/bench-checkpoint); a desktop
 * shell with a busy extension (120 ms a second, a checkpoint of about
 * 2 ms) some 7 s old (7 to 15 s while the looks only backed off: 1, 2,
 * 4, 8 s); an
 * idle one (4 ms a second) a minute old, instead of paying 15 % more CPU
 * for fresher ones. (At 0.5 %, the busy shell's checkpoints cost 0.3-0.5
 * ms a second, a third of what perfmon's threads cost it:
 * tests/bench/bench-shell.) Hangs do not wait for any of this: each asks
 * for a checkpoint at once (see perfmon-preload.c).
 *
 * To ask, the writer attaches a one-shot idle source, "[perfmon] run
 * checkpoint", to the default main context, whose dispatch takes the
 * snapshot and hands it back. So an idle loop is never woken, and the
 * watched context runs nothing per iteration for a once-a-second job.
 * The dispatch is charged, like every source under "perfmon run", to an
 * automatic group named after the source.
 *
 * Jobs do not queue up: a job handed over while the writer is busy
 * replaces the one waiting (the newer summary contains the older).
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "perfmon-preload-checkpoint.h"

/* How often the writer looks, after a checkpoint; each look that finds
 * none worth it doubles the wait, up to CHECKPOINT_MAX_LOOK_US. */
#define CHECKPOINT_INTERVAL_US G_USEC_PER_SEC
#define CHECKPOINT_MAX_LOOK_US (8 * G_USEC_PER_SEC)
/* ... or sooner, when the watched thread's rate of work says that a
 * checkpoint will be worth it sooner, but not this soon. */
#define CHECKPOINT_MIN_LOOK_US (G_USEC_PER_SEC / 8)
/* CPU the watched thread must have used since the last checkpoint's
 * dispatch for a new one to be worth a wake-up at all. */
#define CHECKPOINT_MIN_CPU_NS 50000
/* A periodic checkpoint costs at most 1/CHECKPOINT_COST_SHARE of the CPU
 * the watched thread used since the last one... */
#define CHECKPOINT_COST_SHARE 400
/* ... unless the last one is this old. */
#define CHECKPOINT_MAX_AGE_US (60 * G_USEC_PER_SEC)

struct _PerfmonCheckpointWriter
{
  char                           *path;
  char                           *temp_path;
  PerfmonCheckpointTakeFunc       take;
  PerfmonCheckpointSerializeFunc  serialize;
  GDestroyNotify                  job_free;
  clockid_t                       watched_clock;
  GThread                        *thread;

  GMutex    lock;
  GCond     cond;
  gpointer  pending;      /* under lock */
  gboolean  stopping;     /* under lock */
  GSource  *poke;         /* under lock: the idle source attached, or NULL */

  gint64    mark_ns;      /* atomic: watched thread's CPU at the last dispatch */
  gint64    take_cost_ns; /* atomic: the last dispatch's own CPU */
  gint64    write_cost_ns;  /* writer thread: the last job's CPU */
  gint64    poked_us;       /* writer thread: when it last asked for one */
  gint64    looked_us;      /* writer thread: when it last looked ... */
  gint64    looked_used_ns; /* ... and what the watched thread had used since the mark */
};

static gint64
read_clock_ns (clockid_t clock)
{
  struct timespec ts;

  if (clock_gettime (clock, &ts) != 0)
    return 0;
  return (gint64) ts.tv_sec * G_GINT64_CONSTANT (1000000000) + ts.tv_nsec;
}

/* Writer thread: the temporary file in place of the file, atomically.
 * Exchanged with it, then the old one unlinked, rather than renamed over
 * it: ext4 (auto_da_alloc, its default) writes a file renamed over
 * another to the disk at once, in the renaming thread, to spare editors
 * that do not fsync an empty file after a crash. That made every
 * checkpoint a disk write and cost the writer some 200 µs more of CPU a
 * time on the project's VMs (tests/bench/bench-checkpoint); an exchanged
 * file is written back by the kernel when it sees fit, and one replaced
 * within half a minute never. The first file, and on file systems
 * without exchange, a rename (ext4 writes nothing then: no file is
 * replaced). FALSE with errno set on failure. */
static gboolean
replace_file (PerfmonCheckpointWriter *writer)
{
  if (renameat2 (AT_FDCWD, writer->temp_path, AT_FDCWD, writer->path, RENAME_EXCHANGE) == 0)
    {
      /* The temporary name now holds the previous file: a reader that
       * opened it before reads it whole, as after a rename. (Were it
       * left, the next write would truncate it, and the run's directory
       * goes with the run.) */
      g_unlink (writer->temp_path);
      return TRUE;
    }
  if (errno != ENOENT && errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
    return FALSE;
  return g_rename (writer->temp_path, writer->path) == 0;
}

/* Writer thread: the whole file or the previous one, without fsync. */
static gboolean
write_file (PerfmonCheckpointWriter *writer,
            const char              *text,
            GError                 **error)
{
  gsize length = strlen (text);
  gsize done = 0;
  int fd;

  fd = g_open (writer->temp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    {
      int saved = errno;

      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved),
                   "cannot create %s: %s", writer->temp_path, g_strerror (saved));
      return FALSE;
    }
  while (done < length)
    {
      ssize_t n = write (fd, text + done, length - done);

      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        {
          int saved = n < 0 ? errno : ENOSPC;

          close (fd);
          g_unlink (writer->temp_path);
          g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved),
                       "cannot write %s: %s", writer->temp_path, g_strerror (saved));
          return FALSE;
        }
      done += (gsize) n;
    }
  if (close (fd) != 0 || !replace_file (writer))
    {
      int saved = errno;

      g_unlink (writer->temp_path);
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved),
                   "cannot replace %s: %s", writer->path, g_strerror (saved));
      return FALSE;
    }
  return TRUE;
}

static void
write_job (PerfmonCheckpointWriter *writer,
           gpointer                 job)
{
  g_autoptr(GError) error = NULL;
  gint64 start_ns = read_clock_ns (CLOCK_THREAD_CPUTIME_ID);
  g_autofree char *text = writer->serialize (job, &error);

  if (text == NULL || !write_file (writer, text, &error))
    g_printerr ("perfmon: cannot write the summary to %s: %s\n", writer->path, error->message);
  writer->job_free (job);
  writer->write_cost_ns = read_clock_ns (CLOCK_THREAD_CPUTIME_ID) - start_ns;
}

/* Watched thread: the one-shot "[perfmon] run checkpoint". */
static gboolean
poke_dispatch (gpointer data)
{
  PerfmonCheckpointWriter *writer = data;
  gint64 start_ns = read_clock_ns (CLOCK_THREAD_CPUTIME_ID);
  gint64 end_ns;
  gpointer job;

  g_mutex_lock (&writer->lock);
  g_clear_pointer (&writer->poke, g_source_unref);
  g_mutex_unlock (&writer->lock);

  job = writer->take ();
  if (job != NULL)
    _perfmon_checkpoint_writer_submit (writer, job);
  end_ns = read_clock_ns (CLOCK_THREAD_CPUTIME_ID);
  __atomic_store_n (&writer->take_cost_ns, end_ns - start_ns, __ATOMIC_RELAXED);
  __atomic_store_n (&writer->mark_ns, end_ns, __ATOMIC_RELAXED);
  return G_SOURCE_REMOVE;
}

/* Writer thread, under lock: a checkpoint if the watched thread worked
 * enough since the last for a new one to be worth its cost (see the top
 * of the file). TRUE if it asked for one; else, in @eta_us, when it will
 * be worth one at the rate the thread worked since the last look (-1 if
 * it did not work). */
static gboolean
poke_if_worked_locked (PerfmonCheckpointWriter *writer,
                       gint64                  *eta_us)
{
  gint64 used = read_clock_ns (writer->watched_clock) - __atomic_load_n (&writer->mark_ns, __ATOMIC_RELAXED);
  gint64 cost = writer->write_cost_ns + __atomic_load_n (&writer->take_cost_ns, __ATOMIC_RELAXED);
  gint64 now_us = g_get_monotonic_time ();
  gint64 needed = MAX (cost * CHECKPOINT_COST_SHARE, CHECKPOINT_MIN_CPU_NS);
  gint64 rate_used = used - writer->looked_used_ns;
  gint64 rate_us = now_us - writer->looked_us;

  *eta_us = -1;
  writer->looked_used_ns = used;
  writer->looked_us = now_us;
  if (writer->poke != NULL)
    return FALSE;
  if (used < needed && (used < CHECKPOINT_MIN_CPU_NS || now_us - writer->poked_us < CHECKPOINT_MAX_AGE_US))
    {
      /* ns of the thread's CPU per µs: the time it takes to use the rest. */
      if (rate_used > 0 && rate_us > 0)
        *eta_us = (gint64) ((double) (needed - used) * (double) rate_us / (double) rate_used);
      return FALSE;
    }
  writer->poked_us = now_us;
  /* The mark moves when the checkpoint is taken: what the thread uses
   * from there counts. */
  writer->looked_used_ns = 0;
  writer->poke = g_idle_source_new ();
  g_source_set_name (writer->poke, "[perfmon] run checkpoint");
  g_source_set_priority (writer->poke, G_PRIORITY_DEFAULT);
  g_source_set_callback (writer->poke, poke_dispatch, writer, NULL);
  g_source_attach (writer->poke, NULL);
  return TRUE;
}

static gpointer
writer_main (gpointer data)
{
  PerfmonCheckpointWriter *writer = data;
  gint64 wait = CHECKPOINT_INTERVAL_US;
  gint64 next = g_get_monotonic_time () + wait;

  g_mutex_lock (&writer->lock);
  for (;;)
    {
      gpointer job;

      while (writer->pending == NULL && !writer->stopping &&
             g_cond_wait_until (&writer->cond, &writer->lock, next))
        ;
      job = g_steal_pointer (&writer->pending);
      if (job != NULL)
        {
          g_mutex_unlock (&writer->lock);
          write_job (writer, job);
          g_mutex_lock (&writer->lock);
          continue;
        }
      if (writer->stopping)
        break;
      if (g_get_monotonic_time () >= next)
        {
          gint64 eta_us;

          /* Each wake-up costs some 50 µs of CPU on a VM: an idle
           * program is looked at less and less often. One that works
           * is looked at when, at its rate, a checkpoint is due: a loop
           * just short of it at a look, with the wait doubled, left
           * figures 3 s old instead of 1.2 s. */
          if (poke_if_worked_locked (writer, &eta_us))
            {
              wait = CHECKPOINT_INTERVAL_US;
              next = g_get_monotonic_time () + wait;
            }
          else
            {
              wait = MIN (2 * wait, CHECKPOINT_MAX_LOOK_US);
              next = g_get_monotonic_time () +
                     (eta_us >= 0 ? CLAMP (eta_us, CHECKPOINT_MIN_LOOK_US, wait) : wait);
            }
        }
    }
  g_mutex_unlock (&writer->lock);
  return NULL;
}

/* Watched thread (the constructor): starts the writer thread. */
PerfmonCheckpointWriter *
_perfmon_checkpoint_writer_new (const char                     *path,
                                PerfmonCheckpointTakeFunc       take,
                                PerfmonCheckpointSerializeFunc  serialize,
                                GDestroyNotify                  job_free)
{
  PerfmonCheckpointWriter *writer = g_new0 (PerfmonCheckpointWriter, 1);

  writer->path = g_strdup (path);
  writer->temp_path = g_strconcat (path, ".tmp", NULL);
  writer->take = take;
  writer->serialize = serialize;
  writer->job_free = job_free;
  if (pthread_getcpuclockid (pthread_self (), &writer->watched_clock) != 0)
    writer->watched_clock = CLOCK_PROCESS_CPUTIME_ID;
  g_mutex_init (&writer->lock);
  g_cond_init (&writer->cond);
  /* 12 characters: the kernel keeps 15. */
  writer->thread = g_thread_new ("perfmon-ckpt", writer_main, writer);
  return writer;
}

/* Watched thread: hands @job (owned) to the writer, which replaces the
 * one still waiting, if any. */
void
_perfmon_checkpoint_writer_submit (PerfmonCheckpointWriter *writer,
                                   gpointer                 job)
{
  gpointer older;

  g_mutex_lock (&writer->lock);
  older = writer->pending;
  writer->pending = job;
  g_cond_signal (&writer->cond);
  g_mutex_unlock (&writer->lock);
  if (older != NULL)
    writer->job_free (older);
}

/* Watched thread, at exit: writes @job (owned; may be NULL) after what
 * waits, stops the writer thread and frees @writer. */
void
_perfmon_checkpoint_writer_finish (PerfmonCheckpointWriter *writer,
                                   gpointer                 job)
{
  g_autoptr(GSource) poke = NULL;

  if (job != NULL)
    _perfmon_checkpoint_writer_submit (writer, job);
  g_mutex_lock (&writer->lock);
  writer->stopping = TRUE;
  g_cond_signal (&writer->cond);
  g_mutex_unlock (&writer->lock);
  g_thread_join (writer->thread);

  /* The writer thread is gone: nothing attaches a checkpoint any more. */
  poke = g_steal_pointer (&writer->poke);
  if (poke != NULL)
    g_source_destroy (poke);
  if (writer->pending != NULL)
    writer->job_free (writer->pending);
  g_mutex_clear (&writer->lock);
  g_cond_clear (&writer->cond);
  g_free (writer->temp_path);
  g_free (writer->path);
  g_free (writer);
}
