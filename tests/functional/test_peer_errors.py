"""What an operator reads when a terminal cannot be reached or refuses.

``lsrp catchup``, ``lsrp export --remote`` and ``lsrp import --remote``
against a real ``lsrp-server`` (or none): one line naming the terminal and
the cause, no traceback, exit code 2; the server logs each refused peer.
"""

import datetime
import os
import shutil
import subprocess
import sys

from lsrp import tls
from tests.functional import test_catchup

SERVED, NOTHING = 910, 911     # sandbox port offsets (tests' own range)


class TestPeerErrors(test_catchup.CatchUpTestCase):

    def setUp(self):
        super().setUp()
        self.name_a, self.ca, self.cert, self.key = self.terminal('site-a')

    def lsrp(self, *args):
        s = self.sandbox.site('site-a')
        cmd = [os.path.join(os.path.dirname(sys.executable), 'lsrp'),
               '--shipment-state_dir', os.path.join(self.work, 'state-a'),
               '--shipment-key_dir', os.path.join(self.work, 'keys')]
        cmd += list(args) + ['--ceph-conf', s.conf, '--keyring', s.keyring,
                             '--site', 'site-a']
        return subprocess.run(cmd, capture_output=True, text=True,
                              timeout=120)

    def tls_args(self, ca=None, cert=None, key=None, name=None):
        return ['--server-name', name or self.terminal('site-b')[0],
                '--tls-ca', ca or self.ca, '--tls-cert', cert or self.cert,
                '--tls-key', key or self.key, '--name', self.name_a]

    def catchup(self, port, *tls_args, shipment='fedex-none'):
        return self.lsrp('catchup', 'vms/' + self.image, '--shipment-id',
                         shipment, '--base', 'seed', '--server',
                         '127.0.0.1:%d' % port, *(tls_args or
                                                  self.tls_args()))

    def assert_one_line(self, result, *expected):
        """Exit 2, one line on stderr holding every ``expected`` string."""
        return self.assert_one_error_line(result, 2, *expected)

    def read_server_log(self):
        with open(self.server_log) as f:
            return f.read()

    def other_pki(self):
        """Another CA and a certificate for terminal-site-a from it."""
        pki = os.path.join(self.work, 'other-pki')
        tls.make_ca(pki)
        tls.make_cert(pki, 'terminal-site-a')
        return (os.path.join(pki, 'ca.pem'),
                os.path.join(pki, 'terminal-site-a.pem'),
                os.path.join(pki, 'terminal-site-a.key'))

    def expired_cert(self):
        pki = os.path.join(self.work, 'pki-copy')
        shutil.copytree(self.pki, pki)
        tls.make_cert(pki, 'terminal-old', days=1, not_before=datetime.datetime(
            2020, 1, 1, tzinfo=datetime.timezone.utc))
        return (os.path.join(pki, 'terminal-old.pem'),
                os.path.join(pki, 'terminal-old.key'))

    def test_refusals_are_one_clear_line_and_logged(self):
        pool, self.image = self.new_image(1 << 20)
        with pool.open_image(self.image) as img:
            img.create_snapshot('seed')
        port = self.sandbox.port(SERVED)
        where = 'terminal-site-b at 127.0.0.1:%d' % port
        self._serve(port=port)

        # Nothing listens there.
        nothing = self.sandbox.port(NOTHING)
        self.assert_one_line(self.catchup(nothing),
                             'terminal-site-b at 127.0.0.1:%d' % nothing,
                             'unreachable')

        # The server's certificate is not of the CA we trust.
        other_ca, other_cert, other_key = self.other_pki()
        self.assert_one_line(
            self.catchup(port, *self.tls_args(ca=other_ca)), where,
            'certificate verify failed')
        # Not the name we asked for.
        self.assert_one_line(
            self.catchup(port, *self.tls_args(name='terminal-site-c')),
            'terminal-site-c at 127.0.0.1:%d' % port,
            'certificate verify failed', 'terminal-site-c')
        # Our certificate: of another CA, then expired. The server says why.
        self.assert_one_line(
            self.catchup(port, *self.tls_args(cert=other_cert,
                                              key=other_key)),
            where, 'certificate')
        cert, key = self.expired_cert()
        self.assert_one_line(
            self.catchup(port, *self.tls_args(cert=cert, key=key)),
            where, 'certificate')
        log = self.read_server_log()
        self.assertIn('refused peer 127.0.0.1:', log)
        self.assertIn('TLS handshake failed', log)
        self.assertIn('certificate has expired', log)

        # A terminal that answers, and refuses: an unknown shipment.
        self.assert_one_line(self.catchup(port), where, 'NOT_ALLOWED',
                             'shipment fedex-none is not known here')
        self.assertIn('refused GET_SERVER_STATE', self.read_server_log())

        # The remote export and import: the same errors, the same way.
        self.assert_one_line(
            self.lsrp('export', 'vms/' + self.image, '--snapshot', 'seed',
                      '--shipment-id', 'fedex-none', '--remote',
                      '127.0.0.1:%d' % nothing, *self.tls_args()),
            'terminal-site-b at 127.0.0.1:%d' % nothing, 'unreachable')
        self.assert_one_line(
            self.lsrp('import', '--device', os.path.join(self.work, 'd0'),
                      '--remote', '127.0.0.1:%d' % port,
                      *self.tls_args(ca=other_ca)),
            where, 'certificate verify failed')
