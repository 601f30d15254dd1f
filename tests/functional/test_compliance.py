"""The RBD source and sink against their interfaces, on the real sandbox.

The same contracts as the device-set implementations in
``tests/unit/lsrp/test_compliance.py``; the sink's images are read back
with ``rbd export | sha256sum``.
"""

from lsrp.server import sinks
from tests.functional import base
from tests.unit.lsrp import test_compliance as contract


class TestRbdImageSink(contract.SinkContract, base.FunctionalTestCase):

    def make_sink(self):
        self.image = self.name('sink')
        for name in (self.image, self.image + '.importing-ship1'):
            self.addCleanup(self._remove_image, 'site-b', 'vms', name)
        return sinks.RbdImageSink(self.sites['site-b'], 'vms/' + self.image,
                                  'ship1')

    def read_back_sha256(self, snapshot):
        with self.sites['site-b'].pool('vms') as pool:
            name = self.image
            if not pool.image_exists(name):
                name += '.importing-ship1'   # before the final round
        return self.cli_sha256('site-b', 'vms/%s@%s' % (name, snapshot))


class TestRbdImage(contract.SourceContract, base.FunctionalTestCase):

    def make_sources(self, contents):
        pool, name = self.new_image(contract.SIZE)
        with pool.open_image(name) as img:
            for offset, data in contents.s1_pieces:
                img.write(offset, data)
            img.create_snapshot('s1')
            for offset, data in contents.s2_pieces:
                if isinstance(data, int):
                    img.zero(offset, data)
                else:
                    img.write(offset, data)
            img.create_snapshot('s2')
        sources = [pool.open_image(name, snapshot=s) for s in ('s1', 's2')]
        for s in sources:
            self.addCleanup(s.close)
        return sources
