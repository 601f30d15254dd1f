"""Key stores: where per-shipment data keys live. Never on a device.

A key store only has to keep 32 random bytes per shipment id; deleting the
key is the erase of every device of that shipment. :class:`FileKeyStore` is
the default; a Barbican store implements the same three methods with
castellan (``create`` -> ``key_manager.store``).
"""

import abc
import os
import re

from lsrp import exception

KEY_BYTES = 32
_ID = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$')


class KeyStore(metaclass=abc.ABCMeta):

    @abc.abstractmethod
    def create(self, shipment_id):
        """Make, store and return a new random key; fail if one exists."""

    @abc.abstractmethod
    def get(self, shipment_id):
        """Return the key, or raise KeyMissing."""

    @abc.abstractmethod
    def delete(self, shipment_id):
        """Destroy the key (crypto-erases the shipment's devices)."""


class FileKeyStore(KeyStore):
    """One file per key, mode 0600, in a directory of mode 0700."""

    def __init__(self, directory):
        self.directory = directory

    def __str__(self):
        return 'key store %s' % self.directory

    def _path(self, shipment_id):
        if not _ID.match(shipment_id):
            raise exception.ShipmentError(shipment=shipment_id,
                                          reason='not a valid shipment id')
        return os.path.join(self.directory, '%s.key' % shipment_id)

    def create(self, shipment_id):
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        key = os.urandom(KEY_BYTES)
        path = self._path(shipment_id)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise exception.ShipmentError(shipment=shipment_id,
                                          reason='a key exists already in %s'
                                          % self)
        with os.fdopen(fd, 'w') as f:
            f.write(key.hex() + '\n')
            f.flush()
            os.fsync(f.fileno())
        return key

    def get(self, shipment_id):
        try:
            with open(self._path(shipment_id)) as f:
                key = bytes.fromhex(f.read().strip())
        except (FileNotFoundError, ValueError):
            raise exception.KeyMissing(shipment=shipment_id, store=self)
        if len(key) != KEY_BYTES:
            raise exception.KeyMissing(shipment=shipment_id, store=self)
        return key

    def delete(self, shipment_id):
        try:
            os.unlink(self._path(shipment_id))
        except FileNotFoundError:
            pass
