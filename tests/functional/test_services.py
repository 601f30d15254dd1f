"""The shared services of the sandbox, reached through the URLs it hands out.

MariaDB, RabbitMQ and ZooKeeper are started by every ``fedex-sandbox up``;
these tests talk to them with the credentials of SharedServices, as the
manager and the other services do.
"""

import socket
import struct
import subprocess
import urllib.parse

from fedex_sandbox.services import shared as shared_mod
from tests.functional import base


def _amqp_frame(channel, payload, kind=1):
    return struct.pack('>BHI', kind, channel, len(payload)) + payload + b'\xce'


def _read_frame(sock):
    head = b''
    while len(head) < 7:
        chunk = sock.recv(7 - len(head))
        if not chunk:
            return None, None
        head += chunk
    kind, _channel, size = struct.unpack('>BHI', head)
    body = b''
    while len(body) < size + 1:
        body += sock.recv(size + 1 - len(body))
    return kind, body[:-1]


def amqp_login(url):
    """Log in with AMQP 0-9-1 PLAIN; return the method the server answers.

    (10, 30) is Connection.Tune (accepted); (10, 50) Connection.Close.
    """
    u = urllib.parse.urlparse(url)
    with socket.create_connection((u.hostname, u.port), timeout=10) as s:
        s.sendall(b'AMQP\x00\x00\x09\x01')
        kind, body = _read_frame(s)
        assert struct.unpack('>HH', body[:4]) == (10, 10), body[:4]
        response = ('\0%s\0%s' % (u.username, u.password)).encode()
        start_ok = (struct.pack('>HH', 10, 11) + struct.pack('>I', 0)
                    + b'\x05PLAIN' + struct.pack('>I', len(response))
                    + response + b'\x05en_US')
        s.sendall(_amqp_frame(0, start_ok))
        try:
            kind, body = _read_frame(s)
        except ConnectionResetError:
            return None
        if body is None:
            return None
        return struct.unpack('>HH', body[:4])


def zk_command(hosts, word):
    host, port = hosts.split(',')[0].rsplit(':', 1)
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(word.encode())
        out = b''
        while True:
            chunk = s.recv(4096)
            if not chunk:
                return out.decode()
            out += chunk


class TestSharedServices(base.FunctionalTestCase):

    def setUp(self):
        super().setUp()
        self.shared = shared_mod.SharedServices.from_env()

    def test_urls_follow_the_base_port(self):
        self.assertIn(':%d/' % (base.BASE_PORT + 201),
                      self.shared.transport_url())
        self.assertIn(':%d/fedex' % (base.BASE_PORT + 200),
                      self.shared.database_url('fedex'))
        self.assertEqual('127.0.0.1:%d' % (base.BASE_PORT + 204),
                         self.shared.zookeeper_hosts())

    def test_database_url_opens_a_database(self):
        db = 'test_%s' % self.name('db').replace('-', '_')
        self.shared.create_database(db)
        self.addCleanup(self.shared.sql, 'DROP DATABASE `%s`;' % db)
        u = urllib.parse.urlparse(self.shared.database_url(db))
        sql = ('CREATE TABLE t (n INT); INSERT INTO t VALUES (41), (1); '
               'SELECT SUM(n) FROM t;')
        out = subprocess.run(
            ['mariadb', '-h', u.hostname, '-P', str(u.port), '-u', u.username,
             '-p' + u.password, '--batch', '--skip-column-names',
             u.path.lstrip('/'), '-e', sql],
            capture_output=True, text=True, check=True).stdout
        self.assertEqual('42', out.strip())

    def test_transport_url_logs_in_and_a_wrong_password_does_not(self):
        url = self.shared.transport_url()
        self.assertEqual((10, 30), amqp_login(url))
        bad = url.replace(':%s@' % self.shared.secrets()['rabbitmq'],
                          ':wrong@')
        self.assertIn(amqp_login(bad), [None, (10, 50)])

    def test_zookeeper_answers(self):
        hosts = self.shared.zookeeper_hosts()
        self.assertEqual('imok', zk_command(hosts, 'ruok'))
        self.assertIn('Mode: standalone', zk_command(hosts, 'srvr'))
