"""The sandbox's Keystone, as the API tests reach it (admin session)."""

import os

from keystoneauth1.identity import v3
from keystoneauth1 import session as ks_session


def admin_session():
    """(auth_url, admin keystoneauth session) of the sandbox's Keystone."""
    # Development stand-in until the mini-cloud's Keystone lands.
    auth_url = os.environ['FEDEX_TEST_KEYSTONE_URL']
    auth = v3.Password(auth_url=auth_url, username='admin',
                       password=os.environ['FEDEX_TEST_KEYSTONE_PASSWORD'],
                       project_name='admin', user_domain_id='default',
                       project_domain_id='default')
    return auth_url, ks_session.Session(auth=auth)
