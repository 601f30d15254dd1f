"""fedex-api of the mini-cloud: its configuration."""

import configparser
import sys
from unittest import mock

import testtools

from fedex_sandbox import manager as manager_sandbox
from fedex_sandbox.manager import api_service as sandbox


class TestCDriver(testtools.TestCase):

    URL = 'mysql+pymysql://os:pw@127.0.0.1:22200/sandbox'

    def test_mysqlclient_when_the_venv_has_it(self):
        # mysqlclient is optional (GPL-2.0: tools/install.sh adds it to the
        # sandbox's virtualenvs, not requirements.txt): a python that
        # imports MySQLdb.
        with mock.patch.object(sandbox.subprocess, 'run') as run:
            run.return_value.returncode = 0
            self.assertEqual('mysql+mysqldb://os:pw@127.0.0.1:22200/sandbox',
                             sandbox.c_driver(self.URL, sys.executable))
        self.assertEqual('import MySQLdb', run.call_args[0][0][-1])

    def test_pymysql_kept_when_the_venv_lacks_it(self):
        self.assertEqual(self.URL, sandbox.c_driver(self.URL, '/bin/false'))

    def test_other_databases_untouched(self):
        self.assertEqual('sqlite:////tmp/x', sandbox.c_driver(
            'sqlite:////tmp/x', sys.executable))


class TestConfText(testtools.TestCase):
    """The mini-cloud's fedex-api posts each new phase to the jobboard."""

    def test_posts_jobs_through_the_c_driver(self):
        dep = mock.Mock()
        dep.common.return_value = {'DEFAULT': {}}
        dep.manager_conf.return_value = {
            'database': {'connection': TestCDriver.URL},
            'jobboard': {'hosts': '127.0.0.1:22204'}}
        cloud = mock.Mock(dir='/nowhere', log_dir='/nowhere/log',
                          keystone_url='http://127.0.0.1:22210/v3',
                          venv=sys.prefix)
        cloud.shared.secrets.return_value = {'service': 'pw'}
        with mock.patch.object(manager_sandbox, 'SandboxManager') as sm, \
                mock.patch.object(sandbox.subprocess, 'run') as run:
            run.return_value.returncode = 0     # the venv has mysqlclient
            sm.return_value.dep = dep
            text = sandbox.conf_text(cloud)
        conf = configparser.ConfigParser(interpolation=None)
        conf.read_string(text)
        self.assertEqual('true', conf.get('api', 'post_jobs'))
        self.assertEqual('127.0.0.1:22204', conf.get('jobboard', 'hosts'))
        self.assertTrue(conf.get('database', 'connection').startswith(
            'mysql+mysqldb://'))
