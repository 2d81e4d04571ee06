/* bench-accounting.c: the figures of the accounting core
 *
 * Prints, never asserts timings:
 *  1. enter+leave of a compartment with 4 active groups against two bare
 *     cycle-counter reads, interleaved in the same run (target: ≤ 2×);
 *  2. 1,000,000 empty idle dispatches on the default context inside a
 *     compartment, monitor attached, against the same loop with no monitor,
 *     in paired rounds in the same run: the ratio of CPU time (target:
 *     ≤ 1.06×), and of wall time beside it;
 *  3. snapshot of 10,000 groups + subtract + to_json (target: ≤ 3 ms),
 *     and the page faults of one round (getrusage()'s minor faults);
 *  4. memory per live group (target: ≤ 256 bytes), measured first, on a
 *     heap that has no freed groups to reuse;
 *  5. allocations made by enter/leave (target: none), and their system
 *     calls, counted: none but reads of the thread CPU clock, at the leave
 *     of a measure of 25 µs or more (with these empty measures, only when
 *     preempted) and at an enter when the last reading is 250 µs old;
 *  6. figure 3 at 100,000 groups (target: ≤ 40 ms): snapshots must stay
 *     linear in the number of groups.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "perfmon.h"
#include "perfmon-clock-private.h"

#include "bench-common.h"
#include "bench-dispatch.h"
#include "perfmon-monitor-private.h"
#include "perfmon-no-syscalls.h"

/* --- allocation counting: every allocation of the process goes through
 * here, so a hot path that allocates cannot hide. */

extern void *__libc_malloc (size_t size);
extern void *__libc_calloc (size_t n, size_t size);
extern void *__libc_realloc (void *ptr, size_t size);
extern void *__libc_memalign (size_t alignment, size_t size);

static volatile gsize n_allocations;

void *
malloc (size_t size)
{
  n_allocations++;
  return __libc_malloc (size);
}

void *
calloc (size_t n, size_t size)
{
  n_allocations++;
  return __libc_calloc (n, size);
}

void *
realloc (void *ptr, size_t size)
{
  n_allocations++;
  return __libc_realloc (ptr, size);
}

void *
memalign (size_t alignment, size_t size)
{
  n_allocations++;
  return __libc_memalign (alignment, size);
}

void *
aligned_alloc (size_t alignment, size_t size)
{
  n_allocations++;
  return __libc_memalign (alignment, size);
}

int
posix_memalign (void **ptr, size_t alignment, size_t size)
{
  n_allocations++;
  *ptr = __libc_memalign (alignment, size);
  return *ptr != NULL ? 0 : ENOMEM;
}

/* --- helpers ------------------------------------------------------------ */

static gsize
heap_in_use (void)
{
  struct mallinfo2 info = mallinfo2 ();

  return info.uordblks + info.hblkhd;
}

/* --- 1. enter+leave against two bare counter reads --------------------- */

#define PAIR_BATCH 100000
#define PAIR_ROUNDS 41

static double
ns_per_enter_leave (PerfmonGroup *compartment)
{
  gint64 start = _perfmon_clock_monotonic_ns ();

  for (guint i = 0; i < PAIR_BATCH; i++)
    {
      perfmon_group_enter (compartment);
      perfmon_group_leave (compartment);
    }
  return (double) (_perfmon_clock_monotonic_ns () - start) / PAIR_BATCH;
}

static void
bench_enter_leave (void)
{
  g_autoptr(PerfmonMonitor) monitor = perfmon_monitor_new (NULL);
  g_autoptr(PerfmonGroup) compartment = perfmon_monitor_create_compartment (monitor, "bench", 1, "addon");
  double counter[PAIR_ROUNDS], enter_leave[PAIR_ROUNDS], disabled[PAIR_ROUNDS];
  double median_counter, median_enter_leave;

  perfmon_group_set_active (compartment, TRUE);   /* thread + window + add-on + itself */
  perfmon_monitor_iteration_done (monitor);

  for (guint round = 0; round < PAIR_ROUNDS; round++)
    {
      counter[round] = bench_ns_per_two_counter_reads (PAIR_BATCH);
      enter_leave[round] = ns_per_enter_leave (compartment);
      perfmon_monitor_iteration_done (monitor);
      perfmon_monitor_set_enabled (monitor, FALSE);
      disabled[round] = ns_per_enter_leave (compartment);
      perfmon_monitor_set_enabled (monitor, TRUE);
    }

  median_counter = bench_median (counter, PAIR_ROUNDS);
  median_enter_leave = bench_median (enter_leave, PAIR_ROUNDS);
  g_print ("1. enter+leave, 4 active groups: %.1f ns; two bare counter reads: %.1f ns; "
           "ratio %.2fx (target <= 2x)  [median of %d x %d]\n",
           median_enter_leave, median_counter, median_enter_leave / median_counter,
           PAIR_ROUNDS, PAIR_BATCH);
  g_print ("   enter+leave with the monitor disabled: %.1f ns\n", bench_median (disabled, PAIR_ROUNDS));
}

/* --- 2. idle dispatches ------------------------------------------------- */

#define N_DISPATCHES 1000000
#define DISPATCH_ROUNDS 11

static BenchSeconds
seconds_for_dispatches (gboolean monitored,
                        guint64 *cpu_clock_reads)
{
  g_autoptr(PerfmonMonitor) monitor = NULL;
  g_autoptr(PerfmonGroup) compartment = NULL;
  BenchSeconds seconds;

  if (monitored)
    {
      monitor = perfmon_monitor_new (g_main_context_default ());
      compartment = perfmon_monitor_create_compartment (monitor, "idle", 1, "addon");
      perfmon_group_set_active (compartment, TRUE);
    }

  seconds = bench_seconds_for_idle_dispatches (N_DISPATCHES, compartment);

  if (monitored)
    *cpu_clock_reads = _perfmon_monitor_count_cpu_clock_reads (monitor);

  /* Dropping the monitor detaches it from the default context. */
  return seconds;
}

static void
bench_dispatch (void)
{
  double plain[DISPATCH_ROUNDS], monitored[DISPATCH_ROUNDS];
  double cpu_ratios[DISPATCH_ROUNDS], wall_ratios[DISPATCH_ROUNDS];
  guint64 reads = 0;
  double median_plain, median_monitored, median_ratio, median_wall_ratio;

  /* A machine's speed drifts by a few percent over seconds (frequency
   * scaling, the other guests of a virtual machine): each monitored round
   * is compared with the plain round run just before it, and the figure
   * is the median of those ratios. The figure compares CPU time: wall
   * time also counts the time other processes held the core, which on a
   * shared machine swings a round by more than the whole difference
   * measured; the wall-time ratio is printed beside it. */
  for (guint round = 0; round < DISPATCH_ROUNDS; round++)
    {
      BenchSeconds p = seconds_for_dispatches (FALSE, NULL);
      BenchSeconds m = seconds_for_dispatches (TRUE, &reads);

      plain[round] = p.cpu;
      monitored[round] = m.cpu;
      cpu_ratios[round] = m.cpu / p.cpu;
      wall_ratios[round] = m.wall / p.wall;
    }

  median_plain = bench_median (plain, DISPATCH_ROUNDS);
  median_monitored = bench_median (monitored, DISPATCH_ROUNDS);
  median_ratio = bench_median (cpu_ratios, DISPATCH_ROUNDS);   /* sorts the ratios */
  median_wall_ratio = bench_median (wall_ratios, DISPATCH_ROUNDS);
  g_print ("2. %d idle dispatches, CPU time: no monitor %.3f s, monitored + enter/leave %.3f s; "
           "ratio %.3fx (target <= 1.06x)  [median of %d paired rounds' ratios, min %.3f max %.3f; "
           "wall-time ratio %.3fx, min %.3f max %.3f; "
           "%" G_GUINT64_FORMAT " thread CPU clock reads in the last round]\n",
           N_DISPATCHES, median_plain, median_monitored, median_ratio,
           DISPATCH_ROUNDS, cpu_ratios[0], cpu_ratios[DISPATCH_ROUNDS - 1],
           median_wall_ratio, wall_ratios[0], wall_ratios[DISPATCH_ROUNDS - 1], reads);
}

/* --- 3. and 6. snapshot of 10,000 and 100,000 groups ------------------ */

#define N_WINDOWS 66
#define N_ADDONS 33
#define SNAPSHOT_ROUNDS 11

static void
enter_all (PerfmonMonitor *monitor,
           GPtrArray      *compartments)
{
  for (guint i = 0; i < compartments->len; i++)
    {
      perfmon_group_enter (g_ptr_array_index (compartments, i));
      perfmon_group_leave (g_ptr_array_index (compartments, i));
    }
  perfmon_monitor_iteration_done (monitor);
}

static glong
minor_faults (void)
{
  struct rusage usage = { 0 };

  getrusage (RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

/* @n_total groups: the thread's, N_WINDOWS windows, N_ADDONS add-ons and
 * compartments for the rest. */
static void
bench_snapshot (char   figure,
                guint  n_total,
                double target_ms)
{
  g_autoptr(PerfmonMonitor) monitor = perfmon_monitor_new (NULL);
  g_autoptr(GPtrArray) compartments = g_ptr_array_new_with_free_func (g_object_unref);
  g_autoptr(PerfmonSnapshot) older = NULL;
  double times[SNAPSHOT_ROUNDS];
  double snapshot_times[SNAPSHOT_ROUNDS], subtract_times[SNAPSHOT_ROUNDS], json_times[SNAPSHOT_ROUNDS];
  double faults[SNAPSHOT_ROUNDS], snapshot_faults[SNAPSHOT_ROUNDS];
  double subtract_faults[SNAPSHOT_ROUNDS], json_faults[SNAPSHOT_ROUNDS];
  gsize json_bytes = 0;
  guint n_groups = 0;

  for (guint i = 0; i < n_total - 1 - N_WINDOWS - N_ADDONS; i++)
    {
      g_autofree char *name = g_strdup_printf ("compartment-%u", i);
      g_autofree char *addon = g_strdup_printf ("addon-%u@example.org", i % N_ADDONS);
      PerfmonGroup *compartment =
        perfmon_monitor_create_compartment (monitor, name, 1 + i % N_WINDOWS, addon);

      perfmon_group_set_active (compartment, TRUE);
      g_ptr_array_add (compartments, compartment);
    }

  enter_all (monitor, compartments);
  older = perfmon_monitor_snapshot (monitor);

  for (guint round = 0; round < SNAPSHOT_ROUNDS; round++)
    {
      g_autoptr(PerfmonSnapshot) newer = NULL;
      g_autoptr(PerfmonSnapshot) delta = NULL;
      g_autofree char *json = NULL;
      gint64 start, after_snapshot, after_subtract, end;
      glong faults_before, faults_after_snapshot, faults_after_subtract;

      enter_all (monitor, compartments);

      faults_before = minor_faults ();
      start = _perfmon_clock_monotonic_ns ();
      newer = perfmon_monitor_snapshot (monitor);
      after_snapshot = _perfmon_clock_monotonic_ns ();
      faults_after_snapshot = minor_faults ();
      delta = perfmon_snapshot_subtract (newer, older, NULL);
      after_subtract = _perfmon_clock_monotonic_ns ();
      faults_after_subtract = minor_faults ();
      json = perfmon_snapshot_to_json (delta);
      end = _perfmon_clock_monotonic_ns ();
      faults[round] = (double) (minor_faults () - faults_before);
      snapshot_faults[round] = (double) (faults_after_snapshot - faults_before);
      subtract_faults[round] = (double) (faults_after_subtract - faults_after_snapshot);
      json_faults[round] = faults[round] - snapshot_faults[round] - subtract_faults[round];

      times[round] = (double) (end - start) / 1e6;
      snapshot_times[round] = (double) (after_snapshot - start) / 1e6;
      subtract_times[round] = (double) (after_subtract - after_snapshot) / 1e6;
      json_times[round] = (double) (end - after_subtract) / 1e6;

      json_bytes = strlen (json);
      n_groups = perfmon_snapshot_get_groups (newer)->len;
    }

  g_print ("%c. snapshot of %u groups + subtract + to_json: %.2f ms (target <= %.0f ms)  "
           "[median of %d: snapshot %.2f, subtract %.2f, to_json %.2f ms; JSON %zu bytes; "
           "%.0f minor page faults per round: snapshot %.0f, subtract %.0f, to_json %.0f]\n",
           figure, n_groups, bench_median (times, SNAPSHOT_ROUNDS), target_ms, SNAPSHOT_ROUNDS,
           bench_median (snapshot_times, SNAPSHOT_ROUNDS), bench_median (subtract_times, SNAPSHOT_ROUNDS),
           bench_median (json_times, SNAPSHOT_ROUNDS), json_bytes,
           bench_median (faults, SNAPSHOT_ROUNDS), bench_median (snapshot_faults, SNAPSHOT_ROUNDS),
           bench_median (subtract_faults, SNAPSHOT_ROUNDS), bench_median (json_faults, SNAPSHOT_ROUNDS));
}

/* --- 4. memory per live group -------------------------------------------- */

#define N_MEMORY_COMPARTMENTS 10000

static void
bench_memory (void)
{
  g_autoptr(PerfmonMonitor) monitor = perfmon_monitor_new (NULL);
  PerfmonGroup **compartments = g_new (PerfmonGroup *, N_MEMORY_COMPARTMENTS);
  g_autoptr(PerfmonSnapshot) snapshot = NULL;
  gsize before, after;
  guint n_groups;

  /* Warm GLib's type system and slice magazines first. */
  g_object_unref (perfmon_monitor_create_compartment (monitor, "warm-up", 1, "warm-up"));
  perfmon_monitor_iteration_done (monitor);

  before = heap_in_use ();
  for (guint i = 0; i < N_MEMORY_COMPARTMENTS; i++)
    {
      char name[32];
      char addon[32];

      g_snprintf (name, sizeof name, "compartment-%u", i);
      g_snprintf (addon, sizeof addon, "addon-%u", i % 100);
      compartments[i] = perfmon_monitor_create_compartment (monitor, name, 1 + i % 100, addon);
    }
  after = heap_in_use ();

  snapshot = perfmon_monitor_snapshot (monitor);
  n_groups = perfmon_snapshot_get_groups (snapshot)->len - 1;   /* not the thread's */

  g_print ("4. memory per live group: %.0f bytes (target <= 256)  "
           "[%u groups: %d compartments named \"compartment-N\", 100 windows, 100 add-ons; "
           "heap growth %zu bytes, all allocations counted]\n",
           (double) (after - before) / n_groups, n_groups, N_MEMORY_COMPARTMENTS, after - before);

  for (guint i = 0; i < N_MEMORY_COMPARTMENTS; i++)
    g_object_unref (compartments[i]);
  g_free (compartments);
}

/* --- 5. the hot path allocates nothing; its system calls, counted ------- */

#define N_HOT_PAIRS 1000000

/* What the child under seccomp reports, in memory shared with the parent
 * (writing to a pipe would be a system call). */
typedef struct
{
  guint64 cpu_clock_reads;
  gint64  elapsed_ns;
  gint    heap_unchanged;
  gint    done;
} HotPathReport;

/* In the child: forbids every system call but the thread CPU clock, then
 * runs N_HOT_PAIRS enter+leave pairs. Any other system call kills it
 * (SIGSYS); the reads of the CPU clock are counted. */
G_GNUC_NORETURN static void
hot_path_child (PerfmonMonitor *monitor,
                PerfmonGroup   *compartment,
                HotPathReport  *report)
{
  struct mallinfo2 before = mallinfo2 ();
  struct mallinfo2 after;
  guint64 reads_before = _perfmon_monitor_count_cpu_clock_reads (monitor);
  guint64 start;

  if (forbid_system_calls (TRUE) != 0)
    exit_without_runtime (77);

  start = _perfmon_clock_cycles ();
  for (guint i = 0; i < N_HOT_PAIRS; i++)
    {
      perfmon_group_enter (compartment);
      perfmon_group_leave (compartment);
    }
  report->elapsed_ns = (gint64) ((double) (_perfmon_clock_cycles () - start) * 1000.0 /
                                 _perfmon_clock_cycles_per_us ());
  report->cpu_clock_reads = _perfmon_monitor_count_cpu_clock_reads (monitor) - reads_before;

  after = mallinfo2 ();
  report->heap_unchanged = after.uordblks == before.uordblks && after.hblkhd == before.hblkhd;
  report->done = TRUE;
  exit_without_runtime (0);
}

static void
bench_hot_path_proof (void)
{
  g_autoptr(PerfmonMonitor) monitor = perfmon_monitor_new (NULL);
  g_autoptr(PerfmonGroup) compartment = perfmon_monitor_create_compartment (monitor, "hot", 1, "addon");
  HotPathReport *report;
  struct rusage usage = { 0 };
  gsize allocations;
  int status = 0;
  pid_t child;

  perfmon_group_set_active (compartment, TRUE);
  perfmon_group_enter (compartment);
  perfmon_group_leave (compartment);

  allocations = n_allocations;
  for (guint i = 0; i < N_HOT_PAIRS; i++)
    {
      perfmon_group_enter (compartment);
      perfmon_group_leave (compartment);
    }
  allocations = n_allocations - allocations;

  report = mmap (NULL, sizeof *report, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  g_assert (report != MAP_FAILED);
  memset (report, 0, sizeof *report);

  child = fork ();
  if (child == 0)
    hot_path_child (monitor, compartment, report);
  wait4 (child, &status, 0, &usage);

  g_print ("5. %d enter+leave pairs: %zu allocations", N_HOT_PAIRS, allocations);
  if (WIFEXITED (status) && WEXITSTATUS (status) == 0 && report->done)
    g_print ("; under seccomp (any system call but the thread CPU clock kills): no other system call, "
             "heap %s; %" G_GUINT64_FORMAT " reads of the thread CPU clock in %.1f ms "
             "(%.0f per second; by design at most one per 250 µs at enter, plus one at the leave of each "
             "measure of >= 25 us, which these are only when preempted: the child was preempted %ld times)\n",
             report->heap_unchanged ? "unchanged" : "GREW", report->cpu_clock_reads,
             (double) report->elapsed_ns / 1e6, report->elapsed_ns > 0 ? (double) report->cpu_clock_reads * 1e9 / (double) report->elapsed_ns : 0.0,
             usage.ru_nivcsw);
  else if (WIFEXITED (status) && WEXITSTATUS (status) == 77)
    g_print ("; seccomp unavailable\n");
  else
    g_print ("; KILLED: a system call other than the thread CPU clock was made\n");

  munmap (report, sizeof *report);
}

int
main (int   argc,
      char *argv[])
{
  g_set_prgname ("bench-accounting");

  if (argc > 1 && strspn (argv[1], "123456") != strlen (argv[1]))
    {
      g_printerr ("Usage: %s [FIGURES]\n"
                  "Prints the accounting figures 1 to 6, or only those in FIGURES, e.g. 2 or 13.\n",
                  argv[0]);
      return 2;
    }

  g_print ("perfmon accounting benchmark (%.0f cycles/us)\n", _perfmon_clock_cycles_per_us ());

#define WANTED(figure) (argc < 2 || strchr (argv[1], (figure)) != NULL)
  /* Memory first, while the heap holds no freed groups to reuse. */
  if (WANTED ('4'))
    bench_memory ();
  if (WANTED ('1'))
    bench_enter_leave ();
  if (WANTED ('2'))
    bench_dispatch ();
  if (WANTED ('3'))
    bench_snapshot ('3', 10000, 3);
  if (WANTED ('5'))
    bench_hot_path_proof ();
  if (WANTED ('6'))
    bench_snapshot ('6', 100000, 40);
#undef WANTED

  return 0;
}
