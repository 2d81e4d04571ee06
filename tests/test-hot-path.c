/* test-hot-path.c: enter/leave make no system call and allocate nothing
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <malloc.h>
#include <unistd.h>

#include "perfmon.h"
#include "perfmon-no-syscalls.h"

#define N_PAIRS 100000

static void
test_enter_leave_no_syscalls (void)
{
  if (g_test_subprocess ())
    {
      PerfmonMonitor *monitor = perfmon_monitor_new (NULL);
      PerfmonGroup *outer = perfmon_monitor_create_compartment (monitor, "outer", 1, "addon");
      PerfmonGroup *inner = perfmon_monitor_create_compartment (monitor, "inner", 2, "other");
      struct mallinfo2 before, after;

      perfmon_group_set_active (outer, TRUE);
      perfmon_group_set_active (inner, TRUE);
      /* Warm up: claims the thread and starts the iteration (which reads
       * the CPU clock, a system call, once). */
      perfmon_group_enter (outer);
      perfmon_group_leave (outer);

      before = mallinfo2 ();
      if (forbid_system_calls () != 0)
        exit_without_runtime (77);

      for (guint i = 0; i < N_PAIRS; i++)
        {
          perfmon_group_enter (outer);
          perfmon_group_enter (inner);
          perfmon_group_leave (inner);
          perfmon_group_leave (outer);
        }

      after = mallinfo2 ();
      exit_without_runtime (after.uordblks == before.uordblks && after.hblkhd == before.hblkhd ? 0 : 3);
    }

  /* The child dies of SIGSYS if enter/leave make a system call, exits 3 if
   * they left memory allocated, 77 if seccomp could not be set up. */
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/hot-path/enter-leave-no-syscalls", test_enter_leave_no_syscalls);

  return g_test_run ();
}
