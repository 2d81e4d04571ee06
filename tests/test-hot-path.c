/* test-hot-path.c: enter/leave make no system call and allocate nothing
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <unistd.h>

#include "perfmon.h"
#include "perfmon-no-syscalls.h"

#define N_PAIRS 100000

typedef struct
{
  PerfmonGroup *outer;
  PerfmonGroup *inner;
} Nested;

static void
enter_and_leave (gpointer data)
{
  Nested *nested = data;

  for (guint i = 0; i < N_PAIRS; i++)
    {
      perfmon_group_enter (nested->outer);
      perfmon_group_enter (nested->inner);
      perfmon_group_leave (nested->inner);
      perfmon_group_leave (nested->outer);
    }
}

static void
test_enter_leave_no_syscalls (void)
{
  if (g_test_subprocess ())
    {
      PerfmonMonitor *monitor = perfmon_monitor_new (NULL);
      Nested nested = {
        perfmon_monitor_create_compartment (monitor, "outer", 1, "addon"),
        perfmon_monitor_create_compartment (monitor, "inner", 2, "other"),
      };

      perfmon_group_set_active (nested.outer, TRUE);
      perfmon_group_set_active (nested.inner, TRUE);
      /* Warm up: claims the thread and starts the iteration (which reads
       * the CPU clock, a system call, once). */
      perfmon_group_enter (nested.outer);
      perfmon_group_leave (nested.outer);

      run_without_system_calls (enter_and_leave, &nested);
    }

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
