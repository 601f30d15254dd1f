"""A fresh SQLite database per test, at the head of our migrations."""

import os

import fixtures
from oslo_config import cfg
import testtools

from fedex_manager import context
from fedex_manager.db import api as db
from fedex_manager.db import migration
from fedex_manager import jobs
from fedex_manager import opts


class DBTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.conf = cfg.ConfigOpts()
        opts.register_opts(cfg.CONF)
        self.useFixture(fixtures.MonkeyPatch(
            'fedex_manager.keys.CONF', cfg.CONF))
        cfg.CONF.set_override('key_dir', os.path.join(self.tmp, 'keys'),
                              group='shipment_keys')
        self.addCleanup(cfg.CONF.clear_override, 'key_dir', group='shipment_keys')
        db.configure('sqlite:///%s/manager.sqlite' % self.tmp)
        migration.upgrade()
        self.ctx = context.RequestContext(user_id='alice',
                                          project_id='p1')
        self.posted = []
        jobs.set_poster(lambda mid, phase, gen: self.posted.append(
            (mid, phase, gen)) or 'job-%d' % len(self.posted))
        self.addCleanup(jobs.set_poster, None)
