"""Per-shipment keys: one small interface, castellan behind it.

The manager creates a shipment's key before the export and keeps only its
reference. Terminals fetch the key themselves from the key manager with
the reference (never over RabbitMQ): the source to write the devices, the
destination only once the delivery is recorded. Erase destroys it.

``[shipment_keys] backend``: ``file`` (embedded default: 0600 files in a 0700
directory on the manager's and terminals' shared key directory) or
``castellan`` (Barbican, or whatever castellan's ``[key_manager]`` says).
"""

import os
import re
import uuid

from oslo_config import cfg

from lsrp.device import keystore as engine_keystore
from lsrp import exception

CONF = cfg.CONF

key_opts = [
    cfg.StrOpt('backend', default='file', choices=['file', 'castellan'],
               help='Where shipment keys live: file (embedded) or '
                    'castellan (Barbican).'),
    cfg.StrOpt('key_dir', default='/var/lib/fedex/keys',
               help='Directory of the file key store.'),
]

_REF = re.compile(r'^[A-Za-z0-9._:-]{1,255}$')


def register_opts(conf):
    conf.register_opts(key_opts, group='shipment_keys')


class KeyStore(object):
    """create() -> ref; get(ref) -> 32 bytes; delete(ref)."""

    def create(self, name):
        raise NotImplementedError

    def get(self, ref):
        raise NotImplementedError

    def delete(self, ref):
        raise NotImplementedError

    def user_id(self):
        """Who this process is at the key manager (None: no identities)."""
        return None

    def restrict(self, ref, user_ids):
        """Only ``user_ids`` (and the key's creator) may read ``ref``.

        False when the store has no per-user access (the file store: its
        directory's permissions are all there is).
        """
        return False


class FileKeys(KeyStore):

    def __init__(self, directory):
        self.files = engine_keystore.FileKeyStore(directory)

    def create(self, name):
        ref = 'file-%s' % uuid.uuid4().hex
        self.files.create(ref)
        return ref

    def get(self, ref):
        if not ref or not _REF.match(ref):
            raise exception.KeyManagerError(key=ref, reason='not a key ref')
        try:
            return self.files.get(ref)
        except exception.KeyMissing:
            raise exception.KeyManagerError(
                key=ref, reason='no such key in %s (destroyed?)'
                % self.files)

    def delete(self, ref):
        self.files.delete(ref)


class CastellanKeys(KeyStore):
    """Barbican (or any castellan key manager): AES-256 symmetric keys."""

    def __init__(self, conf=CONF):
        from castellan.common import exception as castellan_exc
        from castellan.common import utils as castellan_utils
        from castellan import key_manager
        from oslo_context import context
        self._exc = castellan_exc
        self.conf = conf
        self.api = key_manager.API(conf)
        # The manager and terminals are services, not users acting in a
        # request: they authenticate with their own Keystone credentials
        # (castellan's [key_manager] auth_type = keystone_password).
        conf.register_opts(castellan_utils.credential_opts,
                           group='key_manager')
        if conf.key_manager.auth_type:
            self.ctx = castellan_utils.credential_factory(conf)
        else:
            self.ctx = context.RequestContext()

    def create(self, name):
        return self.api.create_key(self.ctx, algorithm='AES', length=256,
                                   name=name)

    def get(self, ref):
        if not ref or not _REF.match(ref):
            raise exception.KeyManagerError(key=ref, reason='not a key ref')
        try:
            return bytes(self.api.get(self.ctx, ref).get_encoded())
        except self._exc.ManagedObjectNotFoundError:
            raise exception.KeyManagerError(key=ref, reason='not found '
                                            '(destroyed?)')
        except self._exc.KeyManagerError as e:
            raise exception.KeyManagerError(key=ref, reason=str(e))

    def delete(self, ref):
        try:
            self.api.delete(self.ctx, ref)
        except self._exc.ManagedObjectNotFoundError:
            pass

    def _session(self):
        """A keystoneauth session of castellan's [key_manager] user."""
        from keystoneauth1.identity import v3
        from keystoneauth1 import session as ks_session

        if getattr(self, '_ks', None) is None:
            km = self.conf.key_manager
            self._ks = ks_session.Session(auth=v3.Password(
                auth_url=km.auth_url, username=km.username,
                password=km.password, project_name=km.project_name,
                user_domain_name=km.user_domain_name,
                project_domain_name=km.project_domain_name))
        return self._ks

    def user_id(self):
        if not self.conf.key_manager.auth_type:
            return None
        return self._session().get_user_id()

    def _barbican(self):
        """A python-barbicanclient client as castellan's [key_manager] user.

        Barbican is found in the catalog (type ``key-manager``) unless
        ``[barbican] barbican_endpoint`` says where.
        """
        # NOTE: late imports, as castellan's: only the castellan backend
        # needs them (the server extra installs python-barbicanclient).
        from barbicanclient import client as barbican_client
        from barbicanclient import exceptions as barbican_exc

        if getattr(self, '_barbican_client', None) is None:
            self._barbican_exc = barbican_exc
            session = self._session()
            endpoint = getattr(self.conf, 'barbican', None) and \
                self.conf.barbican.barbican_endpoint or session.get_endpoint(
                    service_type='key-manager', interface='public')
            self._barbican_client = barbican_client.Client(
                session=session, endpoint=endpoint)
        return self._barbican_client

    def restrict(self, ref, user_ids):
        """Barbican's ACL: read for ``user_ids`` only, not the project.

        castellan has no ACL call: python-barbicanclient's ACL API sets the
        secret's read ACL (``PUT /v1/secrets/{uuid}/acl``). The secret's
        creator (the manager's user) still reads it.
        """
        if not ref or not _REF.match(ref):
            raise exception.KeyManagerError(key=ref, reason='not a key ref')
        barbican = self._barbican()
        try:
            # ref_type: castellan's refs are the secrets' bare UUIDs.
            acl = barbican.acls.create(
                entity_ref=ref, ref_type='secret',
                users=sorted(set(user_ids)), project_access=False)
            acl.submit()
        except self._barbican_exc.HTTPError as e:
            raise exception.KeyManagerError(
                key=ref, reason='Barbican refused its ACL: HTTP %s %s' % (
                    e.status_code, str(e)[:300]))
        except ValueError as e:
            # barbicanclient's check of the ref: not a secret's UUID.
            raise exception.KeyManagerError(key=ref, reason=str(e))
        return True


def get_store(conf=CONF):
    register_opts(conf)
    if conf.shipment_keys.backend == 'castellan':
        return CastellanKeys(conf)
    return FileKeys(conf.shipment_keys.key_dir)


class EngineKeys(engine_keystore.KeyStore):
    """The engine's key-store interface over one managed key.

    The exporter and importer of :mod:`lsrp.device` ask their key store by
    shipment id; a terminal working for the manager gives them this, which
    answers with the key behind ``ref`` (created by the manager).
    """

    def __init__(self, store, shipment_id, ref):
        self.store, self.shipment_id, self.ref = store, shipment_id, ref

    def __str__(self):
        return 'key manager (ref %s)' % self.ref

    def _check(self, shipment_id):
        if shipment_id != self.shipment_id:
            raise exception.KeyMissing(shipment=shipment_id, store=self)

    def create(self, shipment_id):
        self._check(shipment_id)
        return self.get(shipment_id)

    def get(self, shipment_id):
        self._check(shipment_id)
        return self.store.get(self.ref)

    def delete(self, shipment_id):
        self._check(shipment_id)
        self.store.delete(self.ref)


def key_dir_for(state_path):
    return os.path.join(state_path, 'keys')
