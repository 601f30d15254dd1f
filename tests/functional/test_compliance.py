"""The RBD and remote implementations against their interfaces, for real.

The same contracts as the device-set implementations in
``tests/unit/lsrp/test_compliance.py``; the sinks' images are read back
with ``rbd export | sha256sum``. The remote sink and source talk LSRP to a
real ``lsrp-server`` process of site-b, started by the project's own
command.
"""

from lsrp import access
from lsrp import exception
from lsrp.protocol import remote_sink
from lsrp.protocol import remote_source
from lsrp.server import sinks
from tests.functional import base
from tests.functional import test_catchup
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


class TestRemoteSink(contract.SinkContract, test_catchup.CatchUpTestCase):
    """Another terminal as the sink: its lsrp-server writes site-b's RBD."""

    def make_sink(self):
        self.image = self.name('remote')
        spec = 'vms/' + self.image
        for name in (self.image, self.image + '.importing-ship1'):
            self.addCleanup(self._remove_image, 'site-b', 'vms', name)
        # What lsrp import leaves at the destination: site-a's terminal may
        # send rounds of this disk of shipment ship1 to the RBD sink.
        access.authorize(self.state_b, 'ship1', [spec], sink='rbd',
                         peers=[self.terminal('site-a')[0]])
        proc, port = self._serve()
        # Stopped the way an operator stops it (SIGTERM), before the images
        # are removed: it closes them (a killed one leaves a watch behind,
        # and the image busy for half a minute).
        self.addCleanup(self._stop, proc)
        return remote_sink.RemoteSink(self.connector(port), spec, 'ship1')

    @staticmethod
    def _stop(proc):
        proc.terminate()
        proc.wait(60)

    def read_back_sha256(self, snapshot):
        with self.sites['site-b'].pool('vms') as pool:
            name = self.image
            if not pool.image_exists(name):
                name += '.importing-ship1'   # before the final round
        return self.cli_sha256('site-b', 'vms/%s@%s' % (name, snapshot))

    def test_errors_name_the_terminal_and_the_disk(self):
        sink = self.make_sink()
        self.addCleanup(sink.close)
        e = self.assertRaises(exception.ProtocolError, sink.start, 's2',
                              'not-here', contract.SIZE)
        self.assertIn(self.terminal('site-b')[0], str(e))
        self.assertIn('vms/' + self.image, str(e))
        self.assertIn('ship1', str(e))


def write_sources(pool, name, contents):
    """Image ``name`` with snapshots s1 and s2 of ``contents``."""
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


class TestRemoteSource(contract.SourceContract,
                       test_catchup.CatchUpTestCase):
    """Another terminal as the source: its lsrp-server reads site-b's RBD."""

    def serve_image(self, contents=None, peers=None):
        """An image at site-b in shipment ship1, and its terminal's port."""
        pool, self.image = self.new_image(contract.SIZE, site='site-b')
        self.spec = 'vms/' + self.image
        if contents is not None:
            write_sources(pool, self.image, contents)
        access.authorize(self.state_b, 'ship1', [self.spec], sink='rbd',
                         peers=peers or [self.terminal('site-a')[0]])
        proc, port = self._serve()
        self.addCleanup(TestRemoteSink._stop, proc)
        return port

    def open(self, port, snapshot, disk=None):
        src = remote_source.RemoteSource(self.connector(port),
                                         disk or self.spec, 'ship1',
                                         snapshot)
        self.addCleanup(src.close)
        return src

    def make_sources(self, contents):
        port = self.serve_image(contents)
        return self.open(port, 's1'), self.open(port, 's2')

    def rbd_export_sha256(self, snapshot):
        return self.cli_sha256('site-b', '%s@%s' % (self.spec, snapshot))

    def test_a_refused_peer_hears_why_and_is_logged(self):
        port = self.serve_image(contract.Contents(),
                                peers=['terminal-elsewhere'])
        e = self.assertRaises(exception.RemoteError, self.open, port, 's1')
        self.assertEqual('NOT_ALLOWED', e.code)
        me = self.terminal('site-a')[0]
        self.assertIn('terminal %s may not read shipment ship1' % me, str(e))
        with open(self.server_log) as f:
            log = f.read()
        self.assertIn('refused READ_OPEN', log)
        self.assertIn(me, log)

    def test_missing_snapshot_image_or_base(self):
        port = self.serve_image(contract.Contents())
        e = self.assertRaises(exception.RemoteError, self.open, port, 'nope')
        self.assertEqual('BAD_STATE', e.code)
        self.assertIn('has no snapshot nope', str(e))
        e = self.assertRaises(exception.RemoteError, self.open, port, 's1',
                              'vms/not-in-ship1')
        self.assertEqual('NOT_ALLOWED', e.code)
        s2 = self.open(port, 's2')
        e = self.assertRaises(exception.RemoteError, list,
                              s2.changes('gone'))
        self.assertEqual('BAD_STATE', e.code)
        # The connection is still good for a stream.
        self.assertEqual(contract.SIZE, len(contract.apply(
            bytes(contract.SIZE), s2.changes(None))))

    def test_the_digest_comes_with_the_stream(self):
        c = contract.Contents()
        s1, _ = self.make_sources(c)
        list(s1.changes(None))
        # Told at the end of the stream, checked against what arrived.
        self.assertEqual(contract.blake3(c.s1), s1._digests['blake3'])


class TestRbdImage(contract.SourceContract, base.FunctionalTestCase):

    def rbd_export_sha256(self, snapshot):
        return self.cli_sha256('site-a', 'vms/%s@%s' % (self.image, snapshot))

    def make_sources(self, contents):
        pool, name = self.new_image(contract.SIZE)
        self.image = name
        write_sources(pool, name, contents)
        sources = [pool.open_image(name, snapshot=s) for s in ('s1', 's2')]
        for s in sources:
            self.addCleanup(s.close)
        return sources
