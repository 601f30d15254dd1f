"""The sandbox's Keystone (the mini-cloud's), for the API tests.

Brings up only what these tests need of ``fedex-sandbox up --openstack``:
the shared MariaDB, Keystone under uWSGI, and the cloud's identity set-up
(users, service users, catalog), with the cloud's own code. A cloud that is
already up is used as it is.
"""

from keystoneauth1.identity import v3
from keystoneauth1 import session as ks_session

from fedex_sandbox import sandbox as sandbox_mod
from fedex_sandbox.services import cloud as cloud_mod
from tests.functional import base

_cloud = None


def cloud():
    """The sandbox's Cloud with its Keystone running (once per process)."""
    global _cloud
    if _cloud is not None:
        return _cloud
    sb = sandbox_mod.Sandbox(base.SANDBOX_DIR)
    c = cloud_mod.Cloud(sb)
    sb.shared.up()
    keystone = c.keystone()
    if keystone.pid() is None:
        # NOTE: the first steps of Cloud.up(), without Nova, Glance, Cinder
        # and the compute hosts these tests do not need.
        c.configure()
        c.shared.create_database('keystone')
        c._step('keystone-db', c._keystone_db)
        keystone.ensure_port_free()
        keystone.start()
        keystone.wait_ready()
        c._setup('identity', c.identity_spec())
    else:
        keystone.wait_ready()
    _cloud = c
    return c


def admin_session():
    """(auth_url, admin keystoneauth session) of the sandbox's Keystone."""
    c = cloud()
    admin = c.credentials()['fedex-admin']
    auth = v3.Password(auth_url=admin['auth_url'],
                       username=admin['username'],
                       password=admin['password'],
                       project_name=admin['project_name'],
                       user_domain_name='Default',
                       project_domain_name='Default')
    return c.keystone_url, ks_session.Session(auth=auth)
