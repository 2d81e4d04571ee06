#!/usr/bin/python3
# test_cli_run_peas.py: libpeas plugins are add-on groups under perfmon run,
# by the built-in rules (issue 24, point 7): a C plugin by the module its
# callback lies in, a Python plugin by the file of its callable; each
# charged what it burnt, a calm one about nothing
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import json
import os
import shutil
import subprocess
import unittest

from clitest import CliTestCase

HERE = os.path.dirname(os.path.abspath(__file__))
HOST = os.path.join(HERE, 'peas_host.py')
PLUGINS = os.path.join(HERE, 'peas-plugins')
BURN_C = os.environ.get('PERFMON_PEAS_BURN_PLUGIN')
CALM_C = os.environ.get('PERFMON_PEAS_CALM_PLUGIN')

NAMES = {'burnc': 'C Burner', 'burnpy': 'Python Burner', 'calmc': 'Calm C'}
BURNERS = ('burnc', 'burnpy')


def have_peas():
    if not BURN_C:
        return False
    return subprocess.run(['/usr/bin/python3', '-c',
                           'import gi; gi.require_version("Peas", "1.0"); from gi.repository import Peas'],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


@unittest.skipUnless(have_peas(), 'libpeas 1.0, its typelib or the test plugins are not there '
                                  '(apt-get install gir1.2-peas-1.0 libpeas-dev)')
class PeasPluginsTest(CliTestCase):
    def install_plugins(self):
        """The layouts libpeas finds: a plugin in a directory of its own
        (burnc/burnc.plugin + burnc/libburnc.so), and plugins side by side
        in the plugin directory (calmc.plugin + libcalmc.so, burnpy.plugin +
        burnpy.py), in the user's plugin directory of the application."""
        data_home = self.path('data')
        plugins = os.path.join(data_home, 'peas-host', 'plugins')
        os.makedirs(os.path.join(plugins, 'burnc'))
        shutil.copy(os.path.join(PLUGINS, 'burnc.plugin'), os.path.join(plugins, 'burnc'))
        shutil.copy(BURN_C, os.path.join(plugins, 'burnc', 'libburnc.so'))
        shutil.copy(os.path.join(PLUGINS, 'calmc.plugin'), plugins)
        shutil.copy(CALM_C, os.path.join(plugins, 'libcalmc.so'))
        shutil.copy(os.path.join(PLUGINS, 'burnpy.plugin'), plugins)
        shutil.copy(os.path.join(PLUGINS, 'burnpy.py'), plugins)
        return data_home

    def run_host(self, *options):
        summary = self.path('summary.json')
        env = self.foreign_env()
        env['PERFMON_RUN_NO_EXPORT'] = '1'
        env['XDG_DATA_HOME'] = self.install_plugins()
        result = self.perfmon('run', '--summary', summary, *options, '--', '/usr/bin/python3', HOST, '4',
                              env=env, timeout=120)
        self.assertExit(result, 0)
        burnt = json.loads(result.stdout.strip().splitlines()[-1])
        self.assertEqual(set(burnt), set(NAMES), result.stdout)
        with open(summary) as f:
            return burnt, json.load(f)

    def test_plugins_are_charged_what_they_burnt(self):
        burnt, data = self.run_host()
        groups = data['snapshot']['groups']
        addons = {g['addon_id']: g for g in groups if g['kind'] == 'addon'}
        self.assertEqual(set(addons), set(NAMES), json.dumps(groups, indent=1)[:4000])
        for module, group in addons.items():
            # The id is the plugin's module, the name its .plugin's Name.
            self.assertEqual(group['name'], NAMES[module])
        for module in BURNERS:
            # Something was burnt (a loaded machine runs fewer timeouts).
            self.assertGreater(burnt[module], 60000, burnt)
            self.assertLess(abs(addons[module]['cpu_time'] - burnt[module]), 0.15 * burnt[module],
                            '%s: charged %d µs, burnt %d µs' % (module, addons[module]['cpu_time'], burnt[module]))
        # About nothing: some forty dispatches of a timeout that reads a clock.
        self.assertLess(addons['calmc']['cpu_time'], 5000)

        compartments = {g['name']: g for g in groups if g['kind'] == 'compartment'}
        # The C plugin's static callback: named by its place in the plugin.
        c_sites = [name for name in compartments if '(burnc/libburnc.so+0x' in name]
        self.assertTrue(c_sites, sorted(compartments))
        for name in c_sites:
            self.assertEqual(compartments[name]['addon_id'], 'burnc')
        # The Python plugin's callable, by its module and name.
        self.assertEqual(compartments['burnpy.BurnPlugin.burn']['addon_id'], 'burnpy')

    def test_no_addons_without_rules(self):
        # PERFMON_RUN_NO_ADDONS: no attribution (what the benchmark
        # compares against); the dispatches are still measured.
        env_before = dict(self.env)
        self.env['PERFMON_RUN_NO_ADDONS'] = '1'
        try:
            burnt, data = self.run_host()
        finally:
            self.env = env_before
        addons = [g for g in data['snapshot']['groups'] if g['kind'] == 'addon']
        self.assertEqual(addons, [])


if __name__ == '__main__':
    unittest.main()
