"""Every registered source and sink against its interface.

In the spirit of cinder's ``tests/compliance``: each implementation named in
``lsrp.source.IMPLEMENTATIONS`` and ``lsrp.sink.IMPLEMENTATIONS`` is checked
against its interface (a subclass, nothing abstract left, every method
taking the interface's parameters), no implementation is left out of the
registries, and the interface's promises hold: ``SinkContract`` and
``SourceContract`` run here on the device-set implementations and in
``tests/functional/test_compliance.py`` on the RBD ones.
"""

import hashlib
import importlib
import inspect
import os
import pkgutil

import fixtures
import testtools

import lsrp
from lsrp import access
from lsrp.device import deviceset as deviceset_mod
from lsrp.device import export as export_mod
from lsrp.device import keystore
from lsrp.device import reader as reader_mod
from lsrp.device import receiver
from lsrp.device import source as device_source
from lsrp import digest as digest_mod
from lsrp import exception
from lsrp import sink as sink_mod
from lsrp import source as source_mod

KiB, MiB = 1 << 10, 1 << 20
SIZE = 3 * MiB
REGISTRIES = ((source_mod.Source, source_mod.IMPLEMENTATIONS),
              (sink_mod.Sink, sink_mod.IMPLEMENTATIONS))


def load(path):
    module, name = path.rsplit('.', 1)
    return getattr(importlib.import_module(module), name)


def concrete_subclasses(cls):
    for sub in cls.__subclasses__():
        if not inspect.isabstract(sub):
            yield sub
        yield from concrete_subclasses(sub)


class TestRegisteredImplementations(testtools.TestCase):

    def test_registries_are_not_empty(self):
        # Else the compliance tests below would never run.
        for _, registry in REGISTRIES:
            self.assertGreaterEqual(len(registry), 2)

    def test_each_implements_its_interface(self):
        for interface, registry in REGISTRIES:
            for kind, path in registry.items():
                cls = load(path)
                self.assertTrue(issubclass(cls, interface),
                                '%s does not declare %s' % (path, interface))
                self.assertFalse(inspect.isabstract(cls),
                                 '%s leaves %s abstract' % (
                                     path, sorted(cls.__abstractmethods__)))
                for name in interface.__abstractmethods__:
                    self._same_parameters(interface, cls, name)

    def _same_parameters(self, interface, cls, name):
        """The interface's parameters, in order; extra ones optional."""
        wanted = list(inspect.signature(getattr(interface, name)).parameters)
        have = inspect.signature(getattr(cls, name)).parameters
        where = '%s.%s%s' % (cls.__name__, name, inspect.signature(
            getattr(cls, name)))
        self.assertEqual(wanted, list(have)[:len(wanted)], where)
        for extra in list(have)[len(wanted):]:
            self.assertIsNot(inspect.Parameter.empty, have[extra].default,
                             where)

    def test_no_implementation_is_left_out(self):
        for info in pkgutil.walk_packages(lsrp.__path__, 'lsrp.'):
            # A WSGI entry module builds its application (reads its
            # configuration files) when imported: it holds no source or sink.
            if info.name.rsplit('.', 1)[-1].endswith('wsgi'):
                continue
            importlib.import_module(info.name)
        for interface, registry in REGISTRIES:
            registered = {load(p) for p in registry.values()}
            for cls in concrete_subclasses(interface):
                self.assertIn(cls, registered, '%s.%s is a %s but not in '
                              'its registry' % (cls.__module__, cls.__name__,
                                                interface.__name__))


def blake3(data):
    hasher = digest_mod.new_hash('blake3')
    hasher.update(bytes(data))
    return hasher.hexdigest()


def sha256(data):
    return hashlib.sha256(bytes(data)).hexdigest()


class Contents(object):
    """An image at s1 and at s2, and the pieces that make each."""

    def __init__(self):
        a, b, c = (os.urandom(n) for n in (64 * KiB, 128 * KiB, 64 * KiB))
        self.s1_pieces = [(0, a), (MiB, b)]
        # s2: new data at 64 KiB; 64 KiB of b discarded (reads as zeros).
        self.s2_pieces = [(64 * KiB, c), (MiB, 64 * KiB)]
        self.s1 = bytearray(SIZE)
        for offset, data in self.s1_pieces:
            self.s1[offset:offset + len(data)] = data
        self.s2 = bytearray(self.s1)
        self.s2[64 * KiB:128 * KiB] = c
        self.s2[MiB:MiB + 64 * KiB] = bytes(64 * KiB)


def apply(base, changes):
    out = bytearray(base)
    for piece, data in changes:
        out[piece.offset:piece.offset + piece.length] = (
            data if data is not None else bytes(piece.length))
    return out


IMAGE = {'object_size': 4 * MiB, 'features': ['layering']}


def proof(snapshot_digest, base_digest=None):
    """What REPLICATION_START carries to prove N-1 and name N by content."""
    out = {'snapshot_id': 'blake3:' + snapshot_digest}
    if base_digest:
        out['base_id'] = 'blake3:' + base_digest
    return out


def send(sink, snapshot, base, pieces, digest, final=False,
         base_digest=None):
    """One round through a sink, as lsrp-server applies it."""
    offset = sink.start(snapshot, base, SIZE, image=IMAGE,
                        proof=proof(digest, base_digest))
    assert offset == 0, offset
    for where, data in pieces:
        if isinstance(data, int):
            sink.zero(where, data)
        else:
            sink.write(where, data)
    return sink.complete(snapshot, digest, final)


class SinkContract(object):
    """What every sink promises (``lsrp.sink.Sink``).

    A test case provides ``make_sink()`` (a new sink for one image of a
    shipment that may receive it) and ``read_back_sha256(snapshot)`` (the
    SHA-256 of the image at that snapshot, read independently of the
    sink).
    """

    def test_sink_full_copy_then_delta_exact(self):
        c = Contents()
        sink = self.make_sink()
        self.addCleanup(sink.close)
        self.assertEqual((0, None), sink.info())
        send(sink, 's1', None, c.s1_pieces, blake3(c.s1))
        self.assertTrue(sink.has_snapshot('s1'))
        self.assertEqual((SIZE, 's1'), sink.info())
        # A round that is here already has nothing to do.
        self.assertEqual(SIZE, sink.start('s1', None, SIZE, image=IMAGE,
                                          proof=proof(blake3(c.s1))))
        send(sink, 's2', 's1', c.s2_pieces, blake3(c.s2), final=True,
             base_digest=blake3(c.s1))
        self.assertEqual((SIZE, 's2'), sink.info())
        self.assertEqual(sha256(c.s1), self.read_back_sha256('s1'))
        self.assertEqual(sha256(c.s2), self.read_back_sha256('s2'))

    def test_sink_refuses_a_wrong_digest(self):
        c = Contents()
        sink = self.make_sink()
        self.addCleanup(sink.close)
        e = self.assertRaises(exception.ProtocolError, send, sink, 's1',
                              None, c.s1_pieces, blake3(b'other'))
        self.assertEqual('DIGEST_MISMATCH', e.code)
        self.assertFalse(sink.has_snapshot('s1'))

    def test_sink_refuses_a_round_without_its_base(self):
        sink = self.make_sink()
        self.addCleanup(sink.close)
        e = self.assertRaises(exception.ProtocolError, sink.start, 's2',
                              'not-here', SIZE)
        self.assertEqual('BAD_STATE', e.code)

    def test_sink_asks_for_every_block_that_differs(self):
        c = Contents()
        sink = self.make_sink()
        self.addCleanup(sink.close)
        send(sink, 's1', None, c.s1_pieces, blake3(c.s1))
        sink.start('s2', 's1', SIZE, proof=proof(blake3(c.s2),
                                                 blake3(c.s1)))
        block = 64 * KiB
        digests = [digest_mod.block_digest(bytes(c.s1[i:i + block]))
                   for i in range(0, 4 * block, block)]
        digests[2] = digest_mod.block_digest(b'changed')
        differ = sink.differing(0, block, digests)
        self.assertIn(2, differ)
        self.assertTrue(set(differ) <= {0, 1, 2, 3})
        sink.abort()


class SourceContract(object):
    """What every source promises (``lsrp.source.Source``).

    A test case provides ``make_sources(contents)``: the sources of one
    image at s1 and at s2 (s2 made from s1 by ``contents.s2_pieces``), and
    may provide ``rbd_export_sha256(snapshot)``: ``rbd export | sha256sum``
    of the image the sources read.
    """

    def rbd_export_sha256(self, snapshot):
        return None

    def test_source_sha256_is_rbd_export(self):
        c = Contents()
        s1, s2 = self.make_sources(c)
        for src, content, snap in ((s1, c.s1, 's1'), (s2, c.s2, 's2')):
            self.assertEqual(sha256(content), src.digest('sha256'))
            cli = self.rbd_export_sha256(snap)
            if cli is not None:
                self.assertEqual(cli, src.digest('sha256'))

    def test_source_close_twice(self):
        # Closed by its user and again by a cleanup (or a ``with``): the
        # second close must not fail (nor hide what ended the first).
        s1, s2 = self.make_sources(Contents())
        list(s2.changes('s1'))
        for src in (s1, s2):
            src.close()
            src.close()

    def test_source_delta_resumed(self):
        c = Contents()
        _, s2 = self.make_sources(c)
        # Resumed past the first change: applied over a copy that has that
        # change already, the rest makes s2.
        first = next(iter(s2.changes('s1')))[0]
        resume = first.offset + first.length
        half = apply(c.s1, [(p, d) for p, d in s2.changes('s1')
                            if p.offset + p.length <= resume])
        self.assertEqual(bytes(c.s2), bytes(apply(half, s2.changes(
            's1', start=resume))))

    def test_source_full_copy_and_digest(self):
        c = Contents()
        s1, _ = self.make_sources(c)
        self.assertEqual(SIZE, s1.size())
        self.assertEqual(bytes(c.s1), bytes(apply(bytes(SIZE),
                                                  s1.changes(None))))
        self.assertEqual(blake3(c.s1), s1.digest('blake3'))
        self.assertEqual({'object_size', 'features'}, set(s1.describe()))

    def test_source_delta(self):
        c = Contents()
        _, s2 = self.make_sources(c)
        self.assertEqual(bytes(c.s2), bytes(apply(c.s1, s2.changes('s1'))))
        self.assertEqual(bytes(c.s2), bytes(apply(bytes(SIZE),
                                                  s2.changes(None))))
        self.assertEqual(blake3(c.s2), s2.digest('blake3'))

    def test_source_resumes_from_an_offset(self):
        c = Contents()
        s1, _ = self.make_sources(c)
        later = list(s1.changes(None, start=MiB))
        self.assertTrue(later)
        for piece, _ in later:
            self.assertGreater(piece.offset + piece.length, MiB)
        offsets = [p.offset for p, _ in s1.changes(None)]
        self.assertEqual(sorted(offsets), offsets)


class DeviceSetCase(testtools.TestCase):
    """A shipment declared at this terminal, received onto 3 devices."""

    SPEC = 'vms/disk0'

    def setUp(self):
        super().setUp()
        root = self.useFixture(fixtures.TempDir()).path
        self.state = os.path.join(root, 'state')
        self.keys = keystore.FileKeyStore(os.path.join(root, 'keys'))
        self.devices = [os.path.join(root, 'usb%d' % i) for i in range(3)]
        receiver.declare(self.state, self.keys, 'ship1', [self.SPEC],
                         self.devices, chunk_size=64 * KiB)

    def make_sink(self):
        return receiver.DeviceSetSink(self.state, self.keys, 'ship1',
                                      self.SPEC, 'terminal-a',
                                      shard_size=64 * KiB)

    def open_source(self, snap_index):
        devset = deviceset_mod.DeviceSet.open(self.devices)
        self.addCleanup(devset.close)
        crypto = export_mod.open_crypto(devset, self.keys)
        manifest, _ = export_mod.load_manifest(devset, crypto)
        reader = reader_mod.ChunkReader(devset, crypto, manifest)
        self.addCleanup(reader.close)
        return device_source.DeviceSetImage(reader, manifest, 0, snap_index)


class TestDeviceSetSink(SinkContract, DeviceSetCase):

    def read_back_sha256(self, snapshot):
        src = self.open_source(['s1', 's2'].index(snapshot))
        return sha256(apply(bytes(src.size()), src.changes(None)))

    def test_sink_kind_is_in_the_access_list(self):
        entry = access.check(self.state, 'ship1', self.SPEC, 'terminal-a')
        self.assertEqual('devices', entry['sink'])


class TestDeviceSetImage(SourceContract, DeviceSetCase):

    def make_sources(self, contents):
        sink = self.make_sink()
        try:
            send(sink, 's1', None, contents.s1_pieces, blake3(contents.s1))
            send(sink, 's2', 's1', contents.s2_pieces, blake3(contents.s2))
        finally:
            sink.close()
        return self.open_source(0), self.open_source(1)

    def test_source_sha256_is_rbd_export(self):
        # A device set records the BLAKE3 digest only (sinks check that).
        s1, _ = self.make_sources(Contents())
        self.assertRaises(exception.ShipmentError, s1.digest, 'sha256')

    def test_a_base_the_devices_do_not_hold(self):
        s1, s2 = self.make_sources(Contents())
        self.assertRaises(exception.ShipmentError, s2.changes, 'other')
        self.assertRaises(exception.ShipmentError, s1.digest, 'sha256')
