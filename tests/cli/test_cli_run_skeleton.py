#!/usr/bin/python3
# test_cli_run_skeleton.py: the handlers of GDBusInterfaceSkeleton exports
# are joined to their callers under perfmon run --trace (issue 23, point 3,
# the service's side)
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Services written with GDBusInterfaceSkeleton export inside libgio, where
# the preload's g_dbus_connection_register_object() is not seen: a GJS
# service with Gio.DBusExportedObject (gjs_dbus_service.js) and a C service
# made with gdbus-codegen (skeleton-service.c), each unmodified, under
# perfmon run --trace, called by an unmodified Python client under its own
# perfmon run --trace. Read together, the two logs must make the handler
# the child of the client's task that called, named after the method.

import os
import shutil
import subprocess
import sys
import unittest

import test_cli_run_trace as trace

HERE = os.path.dirname(os.path.abspath(__file__))
GJS_SERVICE = os.path.join(HERE, 'gjs_dbus_service.js')


class SkeletonTest(trace.TraceTestCase):
    def start_service(self, *command):
        service_trace = self.path('service.trace')
        service = self.start([os.environ['PERFMON_TOOL'], 'run', '--no-export', '--trace', service_trace, '--']
                             + list(command),
                             env=self.foreign_env(), stdout=subprocess.PIPE, universal_newlines=True)
        self.assertEqual(service.stdout.readline().strip(), 'ready')
        return service, service_trace

    def check_joined(self, *service_command):
        _, service_trace = self.start_service(*service_command)
        client_trace = self.run_traced('/usr/bin/python3', trace.PYTHON_CHAIN, trace.PEER_NAME, trace.PEER_PATH,
                                       trace.PEER_METHOD.rsplit('.', 1)[0], 'Slow',
                                       trace=self.path('client.trace'))

        def handled():
            if not os.path.exists(service_trace):
                return None
            tasks = self.tasks(service_trace, client_trace)
            found = [t for t in tasks if t['name'] == trace.PEER_METHOD]
            return (tasks, found) if found else None
        tasks, handlers = self.eventually(handled, 'the service\'s log to hold the handler', timeout=60)
        by_id = {t['id']: t for t in tasks}
        self.assertEqual(len(handlers), 1, handlers)
        caller = by_id.get(handlers[0]['parent_id'])
        self.assertIsNotNone(caller, 'the handler is not linked to its caller: %s' % handlers[0])
        self.assertEqual(caller['name'], '__main__.call_service')
        self.assertNotEqual(caller['process'], handlers[0]['process'])

    @unittest.skipUnless(shutil.which('gjs'), 'gjs missing')
    def test_gjs_exported_object(self):
        self.check_joined('gjs', GJS_SERVICE)

    def test_gdbus_codegen_service(self):
        self.check_joined(os.environ['PERFMON_SKELETON_SERVICE'])


if __name__ == '__main__':
    unittest.main(verbosity=2, argv=[sys.argv[0]])
